// The drafter's prompt-prefix cache: the context K/V of recent prompts by token blocks, in the
// model's backend memory under a byte bound with LRU eviction, so a stream whose prompt repeats a
// cached beginning resumes after it. The target resumes the same prompts from its own cache and
// sends taps only for the rows after that: the drafter must hold those blocks to draft.
#ifndef TWINSPAN_SERVICES_DRAFTER_DRAFT_PREFIX_CACHE_H_
#define TWINSPAN_SERVICES_DRAFTER_DRAFT_PREFIX_CACHE_H_

#include <cstdint>
#include <memory>
#include <span>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "services/drafter/draft_stream.h"
#include "services/drafter/drafter_model.h"
#include "services/prefix/prefix_tree.h"

namespace twinspan::drafter {

// Thread-safe: streams of any thread resume and store through it (its lock, then the model's).
// The model must outlive it.
class DraftPrefixCache {
 public:
  // InvalidArgument from options.Validate().
  static absl::StatusOr<std::unique_ptr<DraftPrefixCache>> Create(
      const DrafterModel& model, const prefix::PrefixTreeOptions& options);

  // Restores into the empty `stream` the longest cached whole-block prefix of `prompt` and returns
  // its length (0 when none is cached). Errors of DrafterModel::LoadContext (the stream stays
  // empty).
  absl::StatusOr<int64_t> Resume(DraftStream& stream, std::span<const uint32_t> prompt)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Caches the whole blocks of prompt[0, stream.context_length()) that are not cached yet.
  // Errors of DrafterModel::SaveContext.
  absl::Status Store(const DraftStream& stream, std::span<const uint32_t> prompt)
      ABSL_LOCKS_EXCLUDED(mu_);

  prefix::PrefixTreeStats stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  DraftPrefixCache(const DrafterModel& model, const prefix::PrefixTreeOptions& options)
      : model_(model), tree_(options) {}

  const DrafterModel& model_;
  mutable absl::Mutex mu_;  // The tree is not thread-safe.
  prefix::PrefixTree tree_ ABSL_GUARDED_BY(mu_);
};

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_DRAFT_PREFIX_CACHE_H_
