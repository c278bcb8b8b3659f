#include "services/target/prefix_cache.h"

#include <algorithm>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "services/target/target_model.h"

namespace twinspan::target {
namespace {

// Token ids are checked non-negative before they reach the cache: their bytes are the key.
absl::Span<const uint32_t> Key(absl::Span<const int32_t> tokens) {
  return absl::MakeConstSpan(reinterpret_cast<const uint32_t*>(tokens.data()), tokens.size());
}

}  // namespace

absl::Status PrefixCacheOptions::Validate() const {
  if (block_tokens < 64 || block_tokens % 64 != 0 || block_tokens > 65536) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--prefix-block-tokens %d: a multiple of 64 in [64, 65536]", block_tokens));
  }
  return absl::OkStatus();
}

PrefixCache::PrefixCache(const TargetModel& model, const PrefixCacheOptions& options)
    : model_(model),
      tree_(prefix::PrefixTreeOptions{options.block_tokens, options.max_bytes}),
      recurrent_(absl::c_any_of(model.config().layer_types,
                                [](LayerType t) { return t != LayerType::kFullAttention; })) {}

absl::StatusOr<std::unique_ptr<PrefixCache>> PrefixCache::Create(
    const TargetModel& model, const PrefixCacheOptions& options) {
  ABSL_RETURN_IF_ERROR(options.Validate());
  return std::unique_ptr<PrefixCache>(new PrefixCache(model, options));
}

absl::StatusOr<int64_t> PrefixCache::Resume(SequenceState& state, absl::Span<const int32_t> tokens,
                                            std::optional<uint64_t> drafter_epoch) {
  lookups_ += 1;
  const int64_t n = static_cast<int64_t>(tokens.size());
  // At least the last token runs: its logits give the first draw.
  const int64_t max_blocks = n > 0 ? (n - 1) / tree_.block_tokens() : 0;
  std::vector<const PrefixBlock*> blocks = tree_.MatchAs<PrefixBlock>(Key(tokens), max_blocks);
  if (drafter_epoch.has_value()) {  // A drafting stream resumes only what its drafter holds.
    auto given = [&](const PrefixBlock* block) { return block->drafter_epoch() == drafter_epoch; };
    blocks.erase(std::find_if_not(blocks.begin(), blocks.end(), given), blocks.end());
  }
  if (blocks.empty()) return 0;
  ABSL_RETURN_IF_ERROR(model_.LoadBlocks(state, blocks));
  hits_ += 1;
  tokens_reused_ += state.length();
  return state.length();
}

absl::Status PrefixCache::Store(const SequenceState& state, absl::Span<const int32_t> tokens) {
  const int64_t b = tree_.block_tokens();
  const int64_t whole = std::min<int64_t>(state.length(), tokens.size()) / b;
  // One walk finds the cached chain; asking block by block would walk it again for each.
  for (auto i = static_cast<int64_t>(tree_.Peek(Key(tokens), whole).size()); i < whole; ++i) {
    // A recurrent state is at hand only where the forward ended: the chain ends before it.
    if (recurrent_ && (i + 1) * b != state.length()) return absl::OkStatus();
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<PrefixBlock> block, model_.SaveBlock(state, i * b, b));
    ABSL_RETURN_IF_ERROR(tree_.Insert(Key(tokens), i, std::move(block)));
    // Evicted at once (it alone exceeds the bound): the chain ends here.
    if (!tree_.Contains(Key(tokens), i)) return absl::OkStatus();
  }
  return absl::OkStatus();
}

void PrefixCache::Mark(absl::Span<const int32_t> tokens, uint64_t drafter_epoch) {
  SetDrafterEpoch(tokens, drafter_epoch);
}

void PrefixCache::Unmark(absl::Span<const int32_t> tokens) {
  SetDrafterEpoch(tokens, std::nullopt);
}

void PrefixCache::SetDrafterEpoch(absl::Span<const int32_t> tokens,
                                  std::optional<uint64_t> drafter_epoch) {
  const int64_t whole = static_cast<int64_t>(tokens.size()) / tree_.block_tokens();
  for (prefix::CachedBlock* block : tree_.Peek(Key(tokens), whole)) {
    static_cast<PrefixBlock*>(block)->set_drafter_epoch(drafter_epoch);
  }
}

PrefixCacheStats PrefixCache::stats() const {
  const prefix::PrefixTreeStats tree = tree_.stats();
  return PrefixCacheStats{lookups_,    hits_,      tokens_reused_,
                          tree.blocks, tree.bytes, tree.evicted_blocks};
}

}  // namespace twinspan::target
