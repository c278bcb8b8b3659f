// What a drafter offers the engine and the drafter service: per-stream sessions that take the
// target's tap rows and return the next block's proposals. DrafterAdapter wraps drafter::Drafter.
#ifndef TWINSPAN_SERVICES_DRAFT_LINK_DRAFT_MODEL_H_
#define TWINSPAN_SERVICES_DRAFT_LINK_DRAFT_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "services/draft_link/draft_proposal.h"
#include "services/prefix/prefix_cache_use.h"

namespace twinspan::engine {

struct DrafterInfo {
  int block_size = 0;        // B: a chain proposal has B-1 ids, a tree's are at most B-1 deep
  std::string head_variant;  // "two-span", "full", ...
  int vocab_size = 0;
  std::string tokenizer_sha256;
  std::string target_fingerprint;         // checkpoint the drafter was built for
  std::vector<int64_t> target_layer_ids;  // taps it needs from the target
  int tap_width = 0;                      // floats per raw tap row
  int fused_width = 0;                    // floats per fused row (hidden_norm(fc(raw))); 0: none
  std::string drafter_fingerprint;        // the drafter checkpoint's own identity
  int max_streams = 0;
  int64_t max_context = 0;  // positions a session holds
  // Drafts per proposal when it proposes trees (DFlash2's best-first tree); 0: chains of B-1.
  int tree_nodes = 0;
};

// Row-major float tap rows: raw ([rows, n_taps * hidden]) or, when `fused`, already through the
// drafter's fc + hidden_norm ([rows, fused_width]).
struct TapRows {
  int64_t rows = 0;
  int64_t width = 0;
  absl::Span<const float> data;  // rows * width
  bool fused = false;
  // Position of the first row. A prompt's rows may start after 0: the target resumed the rows
  // before from its prefix cache (the drafter resumes them from its own).
  int64_t first_row = 0;
};

// One stream's drafter context. Not thread-safe. Each call returns the proposal for the next
// verify round: drafts following `pending` (a chain of B-1, or a tree of DrafterInfo::tree_nodes).
class DraftSession {
 public:
  virtual ~DraftSession() = default;
  // InvalidArgument for taps whose shape does not match; ResourceExhausted past max_context;
  // FailedPrecondition when prompt_taps start after row 0 and the session cannot resume the rows
  // before them (the stream then drafts nothing).
  virtual absl::StatusOr<DraftProposal> Open(absl::Span<const uint32_t> prompt_ids,
                                             const TapRows& prompt_taps, uint32_t pending) = 0;
  // `ids` entered the target's context (old pending + accepted drafts), one tap row each.
  virtual absl::StatusOr<DraftProposal> Commit(absl::Span<const uint32_t> ids, const TapRows& taps,
                                               uint32_t pending) = 0;
  // Prompt rows the last Open resumed from the model's prefix cache (0 without one).
  virtual int64_t resumed_rows() const { return 0; }
};

// Immutable and thread-safe after construction; sessions are independent.
class DraftModel {
 public:
  virtual ~DraftModel() = default;
  virtual const DrafterInfo& info() const = 0;
  virtual absl::StatusOr<std::unique_ptr<DraftSession>> NewSession() const = 0;
  // The prompt-prefix cache's current size; zeros for a model without one.
  virtual PrefixCacheUse prefix_cache_use() const { return {}; }
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_DRAFT_LINK_DRAFT_MODEL_H_
