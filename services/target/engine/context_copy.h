// Context-copy drafts (prompt lookup decoding): when the last n tokens of a stream's context
// (prompt and completion) occurred earlier in it, the tokens that followed that occurrence are
// proposed as the next draft. Editing or quoting long text repeats long runs of it, which a copy
// proposes whole, at no model cost.
#ifndef TWINSPAN_SERVICES_TARGET_ENGINE_CONTEXT_COPY_H_
#define TWINSPAN_SERVICES_TARGET_ENGINE_CONTEXT_COPY_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"

namespace twinspan::engine {

// Longest n-gram a ContextCopyIndex matches.
inline constexpr int kMaxContextCopyNgram = 64;

// One stream's context with an index of its n-grams. Not thread-safe.
class ContextCopyIndex {
 public:
  // REQUIRES: ngram in [1, kMaxContextCopyNgram].
  explicit ContextCopyIndex(int ngram) : ngram_(ngram) {}

  // Appends tokens to the context; each n-gram that now has a token after it is indexed.
  void Append(absl::Span<const uint32_t> tokens);
  // Up to max_tokens tokens that followed the latest earlier occurrence of the context's last n
  // tokens; empty when they never occurred before (or the context is shorter than n + 1).
  std::vector<uint32_t> Propose(int max_tokens) const;

  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }

 private:
  uint64_t Hash(int64_t end) const;  // of the n tokens before position `end`

  const int ngram_;
  std::vector<uint32_t> tokens_;
  // An n-gram's hash -> the end of its latest occurrence that a token follows.
  absl::flat_hash_map<uint64_t, int64_t> latest_end_;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_TARGET_ENGINE_CONTEXT_COPY_H_
