// A generation request as the lane engine sees it (ids in, ids out), the sink its results go to,
// and the summary that ends a stream.
#ifndef TWINSPAN_SERVICES_TARGET_ENGINE_ENGINE_REQUEST_H_
#define TWINSPAN_SERVICES_TARGET_ENGINE_ENGINE_REQUEST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "services/structured/token_constraint.h"
#include "services/target/engine/verifier_model.h"

namespace twinspan::engine {

struct EngineRequest {
  EngineRequest() = default;
  // A copy clones the constraint: each request walks its own grammar state.
  EngineRequest(const EngineRequest& other);
  EngineRequest& operator=(const EngineRequest& other);
  EngineRequest(EngineRequest&&) = default;
  EngineRequest& operator=(EngineRequest&&) = default;

  std::string request_id;
  std::vector<uint32_t> prompt_ids;
  SamplingOptions sampling;  // seed already chosen (given or derived)
  int max_tokens = 0;        // > 0
  std::vector<uint32_t> stop_token_ids;
  bool ignore_eos = false;
  bool draft = true;
  // Context-copy drafts (with draft): the engine's --context-copy-ngram decides whether they exist.
  bool context_copy = true;
  absl::Time deadline = absl::InfiniteFuture();
  // Structured output: the grammar's state at the empty output. Null: any id.
  std::unique_ptr<TokenConstraint> constraint;
};

enum class FinishReason { kLength, kEos, kStop, kAborted, kContext };

const char* FinishReasonName(FinishReason reason);

// A prompt of `tokens` against --max-prompt-tokens (0: none) and the context (its last position is
// the first completion token's): ResourceExhausted with reason context_length_exceeded naming
// `param` when over.
absl::Status CheckPromptLength(int64_t tokens, int64_t max_prompt_tokens, int64_t max_context,
                               const char* param);

struct StreamSummary {
  FinishReason finish_reason = FinishReason::kLength;
  std::vector<uint32_t> completion_ids;  // every emitted id, the stop token included
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;  // resumed from the target's prefix cache, not prefilled
  int64_t drafted = 0;
  int64_t accepted = 0;
  int64_t context_copy_drafted = 0;   // of `drafted`, context copies; the rest are the drafter's
  int64_t context_copy_accepted = 0;  // of `accepted`, likewise
  int rounds = 0;
  std::vector<uint32_t> tokens_per_round;
  std::string head_variant;     // "none" when no round carried drafts
  bool draft_degraded = false;  // the drafter failed or was late at least once
  uint64_t seed = 0;
  double queue_seconds = 0, prefill_seconds = 0, first_token_seconds = 0, total_seconds = 0;
  double verify_seconds = 0, draft_seconds = 0;
};

// A sink's answer to one round's ids: keep the first `keep`; `stop` ends the stream with kStop
// (a stop string completed in the decoded text, possibly at the last kept id).
struct SinkVerdict {
  int keep = 0;
  bool stop = false;
};

// Where one stream's results go. Called on the engine thread only; must not block for long.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // Ids one round emitted (round 0: the prefill's token).
  virtual SinkVerdict OnTokens(absl::Span<const uint32_t> ids, uint32_t round) = 0;
  // Exactly once, last: the summary, or the error that ended the stream.
  virtual void OnFinish(absl::StatusOr<StreamSummary> summary) = 0;
  // Polled between rounds; true ends the stream with kAborted (the client went away).
  virtual bool Cancelled() const = 0;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_TARGET_ENGINE_ENGINE_REQUEST_H_
