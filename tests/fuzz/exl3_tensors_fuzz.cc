// Fuzz target: EXL3 tensor sets. The bytes are one safetensors file; every "<prefix>.trellis" in it
// is loaded as an EXL3 linear (trellis, suh/svh or legacy su/sv, bias, mcg/mul1 marker). Loading
// must return a Status or a weight whose shapes are consistent and whose every tile, in the whole
// matrix and in each 128-column view, lies inside its trellis tensor; small ones are decoded.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/strings/match.h"
#include "common/exl3/dequant.h"
#include "common/exl3/weight.h"
#include "common/safetensors/checkpoint.h"
#include "tests/fuzz/fuzz_files.h"

namespace {

// Decoding costs k x n and dominates a run; the seeds' weights are 384 x 128 (decoded by views).
constexpr int64_t kMaxDecodedValues = int64_t{128} * 256;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = twinspan::fuzz::WriteScratch(
      "exl3.safetensors", std::string_view(reinterpret_cast<const char*>(data), size));
  auto checkpoint = twinspan::Checkpoint::Open(path);
  if (!checkpoint.ok()) return 0;
  for (const std::string& name : (*checkpoint)->Names()) {
    if (!absl::EndsWith(name, ".trellis")) continue;
    const std::string prefix = name.substr(0, name.size() - 8);
    auto weight = twinspan::exl3::Weight::Load(**checkpoint, prefix);
    if (!weight.ok()) {
      if (weight.status().message().empty()) std::abort();  // every refusal says why
      continue;
    }
    const twinspan::exl3::Weight& w = *weight;
    if (w.k() <= 0 || w.n() <= 0 || w.k() % 128 != 0 || w.n() % 128 != 0 || w.bits() < 1 ||
        w.bits() > 8 || static_cast<int64_t>(w.suh().size()) != w.k() ||
        static_cast<int64_t>(w.svh().size()) != w.n()) {
      std::abort();
    }
    // Every tile of the matrix and of each 128-column view lies inside the stored trellis (the
    // file is memory-mapped, so AddressSanitizer would not see a tile past the tensor).
    const twinspan::TensorView* trellis = (*checkpoint)->Find(name);
    const std::byte* first = trellis->data;
    const std::byte* end = trellis->data + trellis->nbytes;
    for (int64_t from = 0; from < w.n(); from += 128) {
      auto view = w.columns(from, 128);
      if (!view.ok()) std::abort();
      for (int64_t tk = 0; tk < view->k() / 16; ++tk) {
        for (int64_t tn = 0; tn < view->n() / 16; ++tn) {
          const std::byte* tile = view->tile(tk, tn);
          if (tile < first || tile + view->tile_bytes() > end) std::abort();
        }
      }
      // Decoding is the costly part: only small weights, so the run stays at parser speed.
      if (w.k() * 128 <= kMaxDecodedValues &&
          twinspan::exl3::DecodeRotated(*view).size() != static_cast<size_t>(w.k() * 128)) {
        std::abort();
      }
    }
    if (w.k() * w.n() <= kMaxDecodedValues &&
        twinspan::exl3::DequantizeDense(w).size() != static_cast<size_t>(w.k() * w.n())) {
      std::abort();
    }
    if (w.columns(64, 128).ok() || w.columns(0, w.n() + 128).ok()) std::abort();
  }
  return 0;
}
