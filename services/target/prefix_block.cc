#include "services/target/prefix_block.h"

#include <utility>

namespace twinspan::target {
namespace {

size_t KvBytes(const backend::KvCacheHandle& kv) {
  const size_t element = kv.dtype() == cpu::KvDtype::kF32 ? 4 : 2;
  return 2 * static_cast<size_t>(kv.capacity() * kv.kv_heads() * kv.head_dim()) * element;
}

}  // namespace

PrefixBlock::PrefixBlock(int64_t first, int64_t rows, std::vector<Layer> layers,
                         absl::Mutex* owner_mu)
    : first_(first), rows_(rows), layers_(std::move(layers)), owner_mu_(owner_mu) {
  for (const Layer& layer : layers_) {
    if (layer.kv != nullptr) bytes_ += KvBytes(*layer.kv);
    if (layer.conv != nullptr) bytes_ += layer.conv->bytes();
    if (layer.ssm != nullptr) bytes_ += layer.ssm->bytes();
  }
}

PrefixBlock::~PrefixBlock() {
  if (owner_mu_ == nullptr) return;
  // The backend is not thread-safe: free the block under the model's lock.
  absl::MutexLock lock(owner_mu_);
  layers_.clear();
}

}  // namespace twinspan::target
