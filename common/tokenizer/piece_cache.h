// A bounded, sharded, thread-safe map from a short piece (bytes) to its BPE ids.
#ifndef TWINSPAN_COMMON_TOKENIZER_PIECE_CACHE_H_
#define TWINSPAN_COMMON_TOKENIZER_PIECE_CACHE_H_

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"

namespace twinspan::tokenizer {

class PieceCache {
 public:
  // Pieces longer than this are not cached: long pieces rarely repeat.
  static constexpr size_t kMaxPieceBytes = 64;
  // Entries per shard before the shard is cleared (bounds memory at a few MB).
  static constexpr size_t kMaxEntriesPerShard = 4096;

  // Appends the cached ids of `piece` to `ids` and returns true, or returns false on a miss.
  bool Lookup(std::string_view piece, std::vector<int32_t>* ids) const;
  // Records the ids of `piece` (ids[begin..end)).
  void Insert(std::string_view piece, const int32_t* begin, const int32_t* end) const;

 private:
  using Ids = absl::InlinedVector<int32_t, 4>;
  // std::mutex rather than absl::Mutex: Debian's Abseil runs deadlock detection on every lock,
  // which cost a sixth of the encode time.
  struct Shard {
    std::mutex mutex;
    absl::flat_hash_map<std::string, Ids> map;  // guarded by mutex
  };
  static constexpr size_t kShards = 16;
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace twinspan::tokenizer

#endif  // TWINSPAN_COMMON_TOKENIZER_PIECE_CACHE_H_
