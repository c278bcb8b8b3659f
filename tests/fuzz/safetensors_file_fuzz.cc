// Fuzz target: whole checkpoints as files on disk. The first byte picks the layout: even, one
// model.safetensors file (the rest of the bytes); odd, a sharded folder: a 2-byte length, that
// many bytes of model.safetensors.index.json, a 4-byte length and the first shard, and the rest as
// the second shard (model-0000{1,2}-of-00002.safetensors). Opening must return a Status or a
// checkpoint whose every tensor converts in full (floats to float, integers to int64) without
// reading outside its file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/safetensors/checkpoint.h"
#include "common/safetensors/dtype.h"
#include "common/safetensors/tensor_view.h"
#include "tests/fuzz/fuzz_files.h"

namespace {

constexpr char kIndex[] = "model.safetensors.index.json";
constexpr char kShard1[] = "model-00001-of-00002.safetensors";
constexpr char kShard2[] = "model-00002-of-00002.safetensors";

// Consumes a little-endian length and that many bytes (fewer when the input ends).
std::string_view Take(std::string_view* in, size_t length_bytes) {
  size_t n = 0;
  for (size_t i = 0; i < length_bytes && !in->empty(); ++i) {
    n |= static_cast<size_t>(static_cast<uint8_t>((*in)[0])) << (8 * i);
    in->remove_prefix(1);
  }
  const std::string_view out = in->substr(0, n);
  in->remove_prefix(out.size());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string path;
  if ((data[0] & 1) == 0) {
    path = twinspan::fuzz::WriteScratch("single.safetensors", in);
  } else {
    const std::string dir = twinspan::fuzz::ScratchDir() + "/sharded";
    std::filesystem::create_directories(dir);
    twinspan::fuzz::WriteScratch(std::string("sharded/") + kIndex, Take(&in, 2));
    twinspan::fuzz::WriteScratch(std::string("sharded/") + kShard1, Take(&in, 4));
    twinspan::fuzz::WriteScratch(std::string("sharded/") + kShard2, in);
    path = dir;
  }
  auto checkpoint = twinspan::Checkpoint::Open(path);
  if (!checkpoint.ok()) {
    if (checkpoint.status().message().empty()) std::abort();  // every refusal says why
    return 0;
  }
  for (const std::string& name : (*checkpoint)->Names()) {
    auto view = (*checkpoint)->Get(name);
    if (!view.ok()) std::abort();  // Names() promised it
    const size_t expected = static_cast<size_t>(view->numel()) * twinspan::DTypeSize(view->dtype);
    if (expected != view->nbytes) std::abort();
    // Both conversions read every byte of a tensor of their kind; the other refuses with a Status.
    auto floats = twinspan::ToFloat(*view);
    auto ints = twinspan::ToInt64(*view);
    if (floats.ok() && floats->size() != static_cast<size_t>(view->numel())) std::abort();
    if (ints.ok() && ints->size() != static_cast<size_t>(view->numel())) std::abort();
  }
  return 0;
}
