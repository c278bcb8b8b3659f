// A model's tensors across one safetensors file or an HF-style sharded set, by name.
#ifndef TWINSPAN_COMMON_SAFETENSORS_CHECKPOINT_H_
#define TWINSPAN_COMMON_SAFETENSORS_CHECKPOINT_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/safetensors/safetensors_file.h"
#include "common/safetensors/tensor_view.h"

namespace twinspan {

// Immutable after Open, so any number of threads may read it. Views stay valid while it lives.
class Checkpoint {
 public:
  // `dir_or_file` is one .safetensors file, or a directory holding model.safetensors.index.json
  // (its "weight_map" names each tensor's shard) or else model.safetensors.
  // Errors: NotFound for a missing path or a directory with neither file; DataLoss for a malformed
  // index, a shard that lacks a tensor the index promises, or a tensor in two shards; anything
  // SafetensorsFile::Open returns. Every message names the file.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> Open(const std::string& dir_or_file);

  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  // The tensor called `name`. NotFound naming the tensor and the checkpoint when absent.
  absl::StatusOr<TensorView> Get(std::string_view name) const;

  // The tensor called `name`, or nullptr.
  const TensorView* Find(std::string_view name) const;

  // The tensor called `name` converted to float (ToFloat). NotFound as Get; InvalidArgument naming
  // the file, the tensor, its dtype and the fix for a tensor that is not F32, F16 or BF16.
  absl::StatusOr<std::vector<float>> Floats(std::string_view name) const;

  bool Has(std::string_view name) const { return Find(name) != nullptr; }

  // Every tensor name, sorted.
  std::vector<std::string> Names() const;

  // The path given to Open.
  const std::string& path() const { return path_; }

  // The opened files, in shard-name order.
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }

  // The file that holds `name` (nullptr when absent).
  const SafetensorsFile* FileOf(std::string_view name) const;

 private:
  explicit Checkpoint(std::string path) : path_(std::move(path)) {}

  std::string path_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*, std::less<>> owner_;  // Tensor name -> its file.
};

}  // namespace twinspan

#endif  // TWINSPAN_COMMON_SAFETENSORS_CHECKPOINT_H_
