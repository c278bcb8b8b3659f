// A run of a sequence's positions as the prefix cache keeps it, in the model's backend memory:
// each attention layer's K/V of those positions and, for recurrent (Gated DeltaNet) layers, the
// conv window and recurrent state after the run's last position. TargetModel::SaveBlock makes one;
// LoadBlocks puts a chain of them into a new sequence.
#ifndef TWINSPAN_SERVICES_TARGET_PREFIX_BLOCK_H_
#define TWINSPAN_SERVICES_TARGET_PREFIX_BLOCK_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "kernels/backend/backend.h"
#include "services/prefix/prefix_tree.h"

namespace twinspan::target {

// Immutable after construction but for the drafter mark, the prefix cache's bookkeeping (under
// its owner's lock, like every use of the cache).
class PrefixBlock : public prefix::CachedBlock {
 public:
  // One decoder layer's part: `kv` ([rows] positions) for attention layers; `conv` and `ssm`
  // for recurrent layers.
  struct Layer {
    std::unique_ptr<backend::KvCacheHandle> kv;
    std::unique_ptr<backend::Buffer> conv, ssm;
  };

  // Positions [first, first + rows). `owner_mu` is the owning model's lock on its backend, held
  // while the block's memory is freed; it must outlive the block.
  PrefixBlock(int64_t first, int64_t rows, std::vector<Layer> layers, absl::Mutex* owner_mu);
  ~PrefixBlock() override;
  PrefixBlock(const PrefixBlock&) = delete;
  PrefixBlock& operator=(const PrefixBlock&) = delete;

  int64_t first() const { return first_; }
  int64_t rows() const { return rows_; }
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  const Layer& layer(int64_t i) const { return layers_[i]; }
  bool OwnedBy(const absl::Mutex* mu) const { return owner_mu_ == mu; }
  size_t bytes() const override { return bytes_; }
  // The drafter link epoch whose drafter confirmed it was given these rows (it holds them in its
  // own prefix cache); none until one did, or once it lost them.
  std::optional<uint64_t> drafter_epoch() const { return drafter_epoch_; }
  void set_drafter_epoch(std::optional<uint64_t> epoch) { drafter_epoch_ = epoch; }

 private:
  int64_t first_;
  int64_t rows_;
  std::vector<Layer> layers_;
  size_t bytes_ = 0;
  absl::Mutex* owner_mu_;
  std::optional<uint64_t> drafter_epoch_;
};

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_PREFIX_BLOCK_H_
