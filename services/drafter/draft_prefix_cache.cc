#include "services/drafter/draft_prefix_cache.h"

#include <algorithm>
#include <vector>

#include "common/status.h"

namespace twinspan::drafter {

absl::StatusOr<std::unique_ptr<DraftPrefixCache>> DraftPrefixCache::Create(
    const DrafterModel& model, const prefix::PrefixTreeOptions& options) {
  ABSL_RETURN_IF_ERROR(options.Validate());
  return std::unique_ptr<DraftPrefixCache>(new DraftPrefixCache(model, options));
}

absl::StatusOr<int64_t> DraftPrefixCache::Resume(DraftStream& stream,
                                                 std::span<const uint32_t> prompt) {
  absl::MutexLock lock(&mu_);
  const int64_t max_blocks = static_cast<int64_t>(prompt.size()) / tree_.block_tokens();
  const std::vector<const ContextBlock*> blocks =
      tree_.MatchAs<ContextBlock>(absl::MakeConstSpan(prompt.data(), prompt.size()), max_blocks);
  if (blocks.empty()) return 0;
  ABSL_RETURN_IF_ERROR(model_.LoadContext(stream, blocks));
  return stream.context_length();
}

absl::Status DraftPrefixCache::Store(const DraftStream& stream, std::span<const uint32_t> prompt) {
  const absl::Span<const uint32_t> tokens = absl::MakeConstSpan(prompt.data(), prompt.size());
  absl::MutexLock lock(&mu_);
  const int64_t b = tree_.block_tokens();
  const int64_t whole =
      std::min<int64_t>(stream.context_length(), static_cast<int64_t>(prompt.size())) / b;
  for (int64_t i = 0; i < whole; ++i) {
    if (tree_.Contains(tokens, i)) continue;
    if (i > 0 && !tree_.Contains(tokens, i - 1)) break;  // Evicted meanwhile: the chain ends.
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<ContextBlock> block,
                          model_.SaveContext(stream, i * b, b));
    ABSL_RETURN_IF_ERROR(tree_.Insert(tokens, i, std::move(block)));
  }
  return absl::OkStatus();
}

prefix::PrefixTreeStats DraftPrefixCache::stats() const {
  absl::MutexLock lock(&mu_);
  return tree_.stats();
}

}  // namespace twinspan::drafter
