// Structured output as the lane engine sees it: which ids may come next. The engine asks before
// every row it samples and masks the other ids out of that row's logits, so the keyed sampler's
// draw for a row is the same whether the row came from a drafted window or a plain one.
#ifndef TWINSPAN_SERVICES_STRUCTURED_TOKEN_CONSTRAINT_H_
#define TWINSPAN_SERVICES_STRUCTURED_TOKEN_CONSTRAINT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"

namespace twinspan::engine {

// A set of token ids as vocab bits: bit (id % 32) of words[id / 32].
struct TokenMask {
  std::vector<uint32_t> words;

  void Reset(int vocab_size) { words.assign((static_cast<size_t>(vocab_size) + 31) / 32, 0u); }
  void Allow(uint32_t id) { words[id / 32] |= 1u << (id % 32); }
  bool allows(uint32_t id) const {
    return id / 32 < words.size() && ((words[id / 32] >> (id % 32)) & 1u) != 0;
  }
  bool empty() const {
    for (uint32_t w : words) {
      if (w != 0) return false;
    }
    return true;
  }
};

// One stream's grammar state: the output so far. Not thread-safe; the engine thread only.
class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // An independent copy of this state (a round looks ahead along its drafts on a copy).
  virtual std::unique_ptr<TokenConstraint> Clone() const = 0;
  // The ids that may come next into `mask` (sized to the vocabulary): those whose bytes keep the
  // output a prefix of the grammar's language, and the end ids once the output is complete.
  // ResourceExhausted when the matcher hits its limits.
  virtual absl::Status AllowedNext(TokenMask* mask) const = 0;
  // Appends `id` to the output. InvalidArgument when the grammar does not allow it.
  virtual absl::Status Advance(uint32_t id) = 0;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_STRUCTURED_TOKEN_CONSTRAINT_H_
