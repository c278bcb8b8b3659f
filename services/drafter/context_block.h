// One block of a drafter stream's context as the drafter's prefix cache keeps it: each layer's
// context K/V of a run of positions, in the model's backend memory. DrafterModel::SaveContext
// makes one; LoadContext puts a chain of them into a new stream.
#ifndef TWINSPAN_SERVICES_DRAFTER_CONTEXT_BLOCK_H_
#define TWINSPAN_SERVICES_DRAFTER_CONTEXT_BLOCK_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "kernels/backend/backend.h"
#include "services/prefix/prefix_tree.h"

namespace twinspan::drafter {

// Immutable after construction.
class ContextBlock : public prefix::CachedBlock {
 public:
  // Positions [first, first + rows), one cache of `rows` positions per layer. `owner_mu` is the
  // model's lock on its backend, held while the block's memory is freed; it must outlive the block.
  ContextBlock(int64_t first, int64_t rows,
               std::vector<std::unique_ptr<backend::KvCacheHandle>> layers, absl::Mutex* owner_mu);
  ~ContextBlock() override;
  ContextBlock(const ContextBlock&) = delete;
  ContextBlock& operator=(const ContextBlock&) = delete;

  int64_t first() const { return first_; }
  int64_t rows() const { return rows_; }
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  const backend::KvCacheHandle& layer(int64_t i) const { return *layers_[i]; }
  bool OwnedBy(const absl::Mutex* mu) const { return owner_mu_ == mu; }
  size_t bytes() const override { return bytes_; }

 private:
  int64_t first_;
  int64_t rows_;
  std::vector<std::unique_ptr<backend::KvCacheHandle>> layers_;
  size_t bytes_ = 0;
  absl::Mutex* owner_mu_;
};

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_CONTEXT_BLOCK_H_
