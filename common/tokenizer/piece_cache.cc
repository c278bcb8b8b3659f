#include "common/tokenizer/piece_cache.h"

#include "absl/hash/hash.h"

namespace twinspan::tokenizer {

bool PieceCache::Lookup(std::string_view piece, std::vector<int32_t>* ids) const {
  if (piece.size() > kMaxPieceBytes) return false;
  const size_t hash =
      absl::Hash<absl::string_view>{}(absl::string_view(piece.data(), piece.size()));
  Shard& shard = shards_[hash % kShards];
  std::lock_guard<std::mutex> lock(shard.mutex);
  auto it = shard.map.find(absl::string_view(piece.data(), piece.size()));
  if (it == shard.map.end()) return false;
  ids->insert(ids->end(), it->second.begin(), it->second.end());
  return true;
}

void PieceCache::Insert(std::string_view piece, const int32_t* begin, const int32_t* end) const {
  if (piece.size() > kMaxPieceBytes) return;
  const size_t hash =
      absl::Hash<absl::string_view>{}(absl::string_view(piece.data(), piece.size()));
  Shard& shard = shards_[hash % kShards];
  std::lock_guard<std::mutex> lock(shard.mutex);
  if (shard.map.size() >= kMaxEntriesPerShard) shard.map.clear();
  shard.map.try_emplace(std::string(piece), Ids(begin, end));
}

}  // namespace twinspan::tokenizer
