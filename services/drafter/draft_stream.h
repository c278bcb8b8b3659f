// One stream's drafter state: each layer's K/V of the fused context, append-only, in the model's
// backend (one KV cache per layer).
#ifndef TWINSPAN_SERVICES_DRAFTER_DRAFT_STREAM_H_
#define TWINSPAN_SERVICES_DRAFTER_DRAFT_STREAM_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/backend/backend.h"

namespace twinspan::drafter {

// Slot p of each layer's cache holds the context K/V of the token at absolute position p; slots at
// and after context_length() are the block's scratch, overwritten by every block forward, so a
// rejected proposal never needs a rollback. Not thread-safe: one caller at a time per stream.
// REQUIRES: the DrafterModel whose backend made the caches outlives the stream.
class DraftStream {
 public:
  DraftStream(std::vector<std::unique_ptr<backend::KvCacheHandle>> layers, int64_t capacity)
      : layers_(std::move(layers)), capacity_(capacity) {}

  DraftStream(const DraftStream&) = delete;
  DraftStream& operator=(const DraftStream&) = delete;

  // Committed context rows: positions [0, context_length()) have K/V.
  int64_t context_length() const { return context_length_; }
  // Positions the caches hold (context plus one block).
  int64_t capacity() const { return capacity_; }

 private:
  friend class DrafterModel;

  std::vector<std::unique_ptr<backend::KvCacheHandle>> layers_;
  int64_t capacity_ = 0;
  int64_t context_length_ = 0;
};

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_DRAFT_STREAM_H_
