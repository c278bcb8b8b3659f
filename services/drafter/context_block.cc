#include "services/drafter/context_block.h"

#include <utility>

namespace twinspan::drafter {

ContextBlock::ContextBlock(int64_t first, int64_t rows,
                           std::vector<std::unique_ptr<backend::KvCacheHandle>> layers,
                           absl::Mutex* owner_mu)
    : first_(first), rows_(rows), layers_(std::move(layers)), owner_mu_(owner_mu) {
  for (const auto& kv : layers_) {
    const size_t element = kv->dtype() == cpu::KvDtype::kF32 ? 4 : 2;
    bytes_ += 2 * static_cast<size_t>(kv->capacity() * kv->kv_heads() * kv->head_dim()) * element;
  }
}

ContextBlock::~ContextBlock() {
  if (owner_mu_ == nullptr) return;
  // The backend is not thread-safe: free the block under the model's lock.
  absl::MutexLock lock(owner_mu_);
  layers_.clear();
}

}  // namespace twinspan::drafter
