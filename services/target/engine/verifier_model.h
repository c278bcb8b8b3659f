// What the lane engine needs from a target model: per-stream sequences that run a window of rows
// and commit a kept prefix, plus a row sampler. TargetVerifier adapts target::TargetModel to it
// (and on a GPU samples the rows and keeps the taps where the logits are); tests use small
// deterministic models.
#ifndef TWINSPAN_SERVICES_TARGET_ENGINE_VERIFIER_MODEL_H_
#define TWINSPAN_SERVICES_TARGET_ENGINE_VERIFIER_MODEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "services/prefix/prefix_cache_use.h"
#include "services/structured/token_constraint.h"

namespace twinspan::engine {

struct VerifierInfo {
  std::string model_name;
  std::string model_type;
  int vocab_size = 0;
  int64_t max_context = 0;  // positions per sequence
  std::vector<uint32_t> eos_ids;
  int hidden_size = 0;  // floats per tap layer per row
  int num_layers = 0;   // decoder layers: a drafter may ask for taps of layers [0, num_layers)
  std::string checkpoint_fingerprint;
  std::string backend = "cpu";  // where the model runs: Backend::name(), "cpu" or "cuda:N"
  // Sequences take tree windows (VerifyJob::parents, CommitPath and ReadTapRows of any path);
  // false: chains only, and the engine verifies a tree proposal's main chain.
  bool verifies_trees = false;
};

struct SamplingOptions {
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  uint64_t seed = 0;
};

// Rows of one forward: logits (or the model's own draws) for every row and the taps of every row.
struct WindowOutput {
  // Prefill: the prompt rows resumed from the model's prefix cache; `rows`, the logits and the
  // taps are of the rows after them. 0 for a verify window.
  int64_t first_row = 0;
  int64_t rows = 0;
  // [rows, vocab] (Prefill: the last row's); may be empty when `tokens` holds the draws.
  std::vector<float> logits;
  // The model's own keyed draws, one per logits row, when it was given the sampling options and
  // samples where its logits are (a GPU); empty otherwise, and the engine samples `logits`.
  std::vector<uint32_t> tokens;
  // [rows, tap_width] row-major; empty without taps, or when taps_deferred.
  std::vector<float> taps;
  // Floats per tap row; 0 means raw rows of tap_layer_ids.size() * VerifierInfo::hidden_size.
  int64_t tap_width = 0;
  bool taps_fused = false;  // rows are the drafter's hidden_norm(fc(raw)) (DraftModel's TapRows)
  // The tap rows stay with the sequence (on its device) until ReadTaps asks for a prefix.
  bool taps_deferred = false;
};

// How a Prefill may stop early and what it may sample itself.
struct PrefillControl {
  // Asked between prefill chunks: a non-OK status stops the prefill and is its result (an abort,
  // a cancel, a passed deadline). Null: never stops.
  std::function<absl::Status()> keep_going;
  // The request's sampling; a model that samples on its device draws the first token (position
  // prompt.size()) into WindowOutput::tokens. Null: logits only.
  const SamplingOptions* sampling = nullptr;
  // Structured output: the ids the first token may be (the device draw masks the others). Null:
  // any id.
  const TokenMask* allowed = nullptr;
  // Set when the stream drafts, to the drafter link's epoch: a model with a prefix cache resumes
  // only what that drafter holds too (GaveDrafterPrefix); it gets taps for the rest.
  std::optional<uint64_t> drafter_epoch;
};

// One stream's model state. Not thread-safe: one call at a time.
class VerifierSequence {
 public:
  virtual ~VerifierSequence() = default;
  // Positions committed so far.
  virtual int64_t length() const = 0;
  // Prefills `prompt` (committed) and returns the last row's logits (or draw) and the taps of every
  // row it ran (never deferred): a model with a prefix cache resumes after a cached beginning of
  // the prompt (WindowOutput::first_row). Errors: InvalidArgument (empty, id outside the
  // vocabulary), ResourceExhausted (context), or control.keep_going's status (the sequence is then
  // unusable).
  virtual absl::Status Prefill(absl::Span<const uint32_t> prompt,
                               const std::vector<int64_t>& tap_layer_ids,
                               const PrefillControl& control, WindowOutput* out) = 0;
  // Runs `window` after the committed rows; nothing is kept until Commit.
  virtual absl::Status Verify(absl::Span<const uint32_t> window,
                              const std::vector<int64_t>& tap_layer_ids, WindowOutput* out) = 0;
  // Runs `window` as a tree after the committed rows: row r follows row parents[r]
  // (kernels/cpu/tree_rows.h) and gets what a chain Verify of its path gives its last row. Empty
  // parents: Verify. Unimplemented unless VerifierInfo::verifies_trees.
  virtual absl::Status VerifyTree(absl::Span<const uint32_t> window,
                                  absl::Span<const int32_t> parents,
                                  const std::vector<int64_t>& tap_layer_ids, WindowOutput* out) {
    if (parents.empty()) return Verify(window, tap_layer_ids, out);
    return absl::UnimplementedError("VerifyTree: this sequence verifies chains only");
  }
  // Keeps the first n_keep rows of the last Verify. REQUIRES: a Verify is pending.
  virtual absl::Status Commit(int64_t n_keep) = 0;
  // Keeps the rows of `path` of the last Verify (0..n-1 of a chain; a tree's from its root, each
  // row the parent of the next). Rows 0..n-1 are Commit(n); others Unimplemented unless
  // VerifierInfo::verifies_trees.
  virtual absl::Status CommitPath(absl::Span<const int64_t> path) {
    for (size_t i = 0; i < path.size(); ++i) {
      if (path[i] != static_cast<int64_t>(i)) {
        return absl::UnimplementedError("CommitPath: this sequence commits prefixes only");
      }
    }
    return Commit(static_cast<int64_t>(path.size()));
  }
  // The first `rows` tap rows of the last Verify ([rows, tap_width] into `out`), which left them
  // with the sequence (WindowOutput::taps_deferred); valid after its Commit, until the next
  // Verify. FailedPrecondition when none are held; InvalidArgument for rows outside [0, held].
  virtual absl::Status ReadTaps(int64_t rows, std::vector<float>* out) {
    (void)rows;
    (void)out;
    return absl::FailedPreconditionError("ReadTaps: this sequence never defers its taps");
  }
  // The tap rows `rows` of the last Verify, in that order ([rows.size(), tap_width] into `out`),
  // as ReadTaps: a tree's kept path. Rows 0..n-1 are ReadTaps(n); others Unimplemented unless
  // VerifierInfo::verifies_trees.
  virtual absl::Status ReadTapRows(absl::Span<const int64_t> rows, std::vector<float>* out) {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] != static_cast<int64_t>(i)) {
        return absl::UnimplementedError("ReadTapRows: this sequence reads prefixes only");
      }
    }
    return ReadTaps(static_cast<int64_t>(rows.size()), out);
  }
};

// One stream's window in a batched verify. Pointers and spans are not owned.
struct VerifyJob {
  VerifierSequence* sequence = nullptr;
  absl::Span<const uint32_t> window;
  absl::Span<const int64_t> tap_layer_ids;
  WindowOutput* out = nullptr;
  absl::Status status;  // Set by VerifyBatch: this job's result.
  // The stream's sampling; a model that samples on its device draws every row itself (row r is
  // the token at position sequence->length() + depth(r) + 1) into out->tokens. Null: logits only.
  const SamplingOptions* sampling = nullptr;
  // Structured output: one mask per window row, the ids row r may draw (a device draw masks the
  // others). Empty: any id.
  absl::Span<const TokenMask> allowed;
  // Empty: the window is a chain. Else the parent of each window row: a tree (VerifyTree).
  absl::Span<const int32_t> parents;
};

// Immutable and thread-safe after construction.
class VerifierModel {
 public:
  virtual ~VerifierModel() = default;
  virtual const VerifierInfo& info() const = 0;
  // ResourceExhausted when the caches cannot be allocated.
  virtual absl::StatusOr<std::unique_ptr<VerifierSequence>> NewSequence() const = 0;
  // The prompt-prefix cache's current size; zeros for a model without one.
  virtual PrefixCacheUse prefix_cache_use() const { return {}; }
  // The drafter of link `drafter_epoch` answered a stream of `prompt`, so it holds the prompt's
  // rows: a model with a prefix cache lets that drafter's streams resume its cached blocks.
  virtual void GaveDrafterPrefix(absl::Span<const uint32_t> /*prompt*/,
                                 uint64_t /*drafter_epoch*/) const {}
  // The drafter could not resume the cached prefix a drafting stream of `prompt` resumed (it lost
  // those rows): a model with a prefix cache stops resuming them for drafting streams until one
  // prefills them again and the drafter answers it. Nothing for a model without one.
  virtual void ForgetDrafterPrefix(absl::Span<const uint32_t> /*prompt*/) const {}

  // Verifies every job's window as its sequence's Verify would and sets each job's status; the
  // sequences are this model's and distinct. A model may run all windows in one forward; this
  // default runs them one by one. A job that fails its own checks (window, context) fails alone;
  // a failed shared forward fails every job in it.
  virtual void VerifyBatch(absl::Span<VerifyJob> jobs) const {
    for (VerifyJob& job : jobs) {
      job.status = job.sequence == nullptr
                       ? absl::InvalidArgumentError("VerifyBatch: a job without a sequence")
                       : job.sequence->VerifyTree(job.window, job.parents,
                                                  std::vector<int64_t>(job.tap_layer_ids.begin(),
                                                                       job.tap_layer_ids.end()),
                                                  job.out);
    }
  }
};

// Draws one token from one row of logits. A draw depends only on (logits, options, seed,
// position), never on the rows beside it: that is what keeps drafted == plain when sampling.
class TokenSampler {
 public:
  virtual ~TokenSampler() = default;
  // `position` is the absolute position of the token being drawn.
  virtual absl::StatusOr<uint32_t> Sample(absl::Span<const float> logits,
                                          const SamplingOptions& options,
                                          int64_t position) const = 0;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_TARGET_ENGINE_VERIFIER_MODEL_H_
