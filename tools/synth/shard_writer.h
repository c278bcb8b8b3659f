// Writes a CheckpointSpec as a Hugging Face checkpoint directory: config.json and side files,
// safetensors shards of at most max_shard_bytes each (one file, model.safetensors, when it fits;
// else model-0000i-of-0000N.safetensors plus model.safetensors.index.json), with the tensor data
// drawn and written by `threads` threads in parallel (pwrite at fixed offsets, so the bytes never
// depend on the thread count).
#ifndef TWINSPAN_TOOLS_SYNTH_SHARD_WRITER_H_
#define TWINSPAN_TOOLS_SYNTH_SHARD_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/synth/tensor_spec.h"

namespace twinspan::synth {

struct WriteOptions {
  uint64_t seed = 0;
  int threads = 1;
  // A shard closes before a tensor that would take it past this; a larger tensor gets its own.
  int64_t max_shard_bytes = 4'000'000'000;
  // fsync every shard before returning, so the time covers the disk and not only the page cache.
  bool sync = false;
  // Progress lines (every ~2 s and at the end); null for none.
  std::FILE* log = nullptr;
};

struct WriteReport {
  std::vector<std::string> shards;  // File names, in order.
  int64_t tensor_bytes = 0;
  double seconds = 0;
};

// One shard's tensors: indices into spec.tensors, in file order.
std::vector<std::vector<size_t>> PlanShards(const CheckpointSpec& spec, int64_t max_shard_bytes);

// Creates `dir` if needed and writes the checkpoint into it, replacing files of the same names.
// InvalidArgument for threads < 1 or max_shard_bytes < 1; Internal naming the file and errno when
// a file cannot be created or written.
absl::StatusOr<WriteReport> WriteCheckpoint(const CheckpointSpec& spec, const std::string& dir,
                                            const WriteOptions& options);

}  // namespace twinspan::synth

#endif  // TWINSPAN_TOOLS_SYNTH_SHARD_WRITER_H_
