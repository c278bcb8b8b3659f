// The target's prompt-prefix cache: recent prompts' K/V and (qwen3_5) Gated DeltaNet states, kept
// by token blocks in the model's backend memory under a byte bound with LRU eviction, so a prompt
// that repeats a cached beginning resumes after it instead of prefilling it again. Resumed ==
// fresh bit for bit: a block holds the bits the prefill left, and every op is row-invariant.
#ifndef TWINSPAN_SERVICES_TARGET_PREFIX_CACHE_H_
#define TWINSPAN_SERVICES_TARGET_PREFIX_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "services/prefix/prefix_tree.h"
#include "services/target/sequence_state.h"

namespace twinspan::target {

class TargetModel;

struct PrefixCacheOptions {
  // Tokens per block: the granularity of reuse, and where qwen3_5 states are snapshotted (a
  // prefill then also ends a forward at every block boundary). A multiple of 64, so a prompt is
  // split where the chunked Gated DeltaNet form cuts its chunks.
  int64_t block_tokens = 256;
  size_t max_bytes = 0;  // 0: no cache
  // InvalidArgument naming the field.
  absl::Status Validate() const;
};

struct PrefixCacheStats {
  int64_t lookups = 0;        // Resume calls
  int64_t hits = 0;           // of which resumed a cached prefix
  int64_t tokens_reused = 0;  // prompt tokens not prefilled again
  int64_t blocks = 0;
  size_t bytes = 0;
  int64_t evicted_blocks = 0;
};

// Not thread-safe: one caller at a time (the target verifier holds its lock). The model must
// outlive the cache, and nothing else may use the model during a call.
class PrefixCache {
 public:
  // InvalidArgument from options.Validate().
  static absl::StatusOr<std::unique_ptr<PrefixCache>> Create(const TargetModel& model,
                                                             const PrefixCacheOptions& options);

  int64_t block_tokens() const { return tree_.block_tokens(); }

  // Restores into the empty `state` the longest cached prefix of `tokens` (whole blocks) that
  // leaves at least one token to run, and returns its length (0 when none is cached). With
  // `drafter_epoch` (the stream drafts), only blocks marked for that drafter count (Mark): its own
  // cache holds those rows, and it gets taps for the rest. Errors of TargetModel::LoadBlocks (the
  // state then stays empty).
  absl::StatusOr<int64_t> Resume(SequenceState& state, absl::Span<const int32_t> tokens,
                                 std::optional<uint64_t> drafter_epoch = std::nullopt);

  // Caches the whole blocks of tokens[0, state.length()) that are not cached yet. A model with
  // recurrent layers has only the state after its last row, so only a block ending at length()
  // can be stored and the ones before must be cached already: call this after every forward that
  // ends on a block boundary (Prefill does). Errors of TargetModel::SaveBlock; a block evicted
  // meanwhile is no error (the blocks after it are not stored).
  absl::Status Store(const SequenceState& state, absl::Span<const int32_t> tokens);

  // Marks every cached block of `tokens` as held by the drafter of link `drafter_epoch`: it
  // answered a stream of `tokens`, so its own cache took the prompt. Marks nothing used.
  void Mark(absl::Span<const int32_t> tokens, uint64_t drafter_epoch);
  // Clears that mark on every cached block of `tokens`: the drafter no longer holds them, so the
  // next drafting stream prefills them again and gives them to it. Marks nothing used.
  void Unmark(absl::Span<const int32_t> tokens);

  PrefixCacheStats stats() const;

 private:
  PrefixCache(const TargetModel& model, const PrefixCacheOptions& options);
  // Mark (an epoch) or Unmark (none).
  void SetDrafterEpoch(absl::Span<const int32_t> tokens, std::optional<uint64_t> drafter_epoch);

  const TargetModel& model_;
  prefix::PrefixTree tree_;
  const bool recurrent_;  // the model has recurrent layers: blocks only where a forward ended
  int64_t lookups_ = 0, hits_ = 0, tokens_reused_ = 0;
};

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_PREFIX_CACHE_H_
