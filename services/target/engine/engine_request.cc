#include "services/target/engine/engine_request.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/error_reason.h"

namespace twinspan::engine {

EngineRequest::EngineRequest(const EngineRequest& other)
    : request_id(other.request_id),
      prompt_ids(other.prompt_ids),
      sampling(other.sampling),
      max_tokens(other.max_tokens),
      stop_token_ids(other.stop_token_ids),
      ignore_eos(other.ignore_eos),
      draft(other.draft),
      context_copy(other.context_copy),
      deadline(other.deadline),
      constraint(other.constraint == nullptr ? nullptr : other.constraint->Clone()) {}

EngineRequest& EngineRequest::operator=(const EngineRequest& other) {
  if (this != &other) *this = EngineRequest(other);
  return *this;
}

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kEos:
      return "eos";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kAborted:
      return "abort";
    case FinishReason::kContext:
      return "context";
  }
  return "unknown";
}

absl::Status CheckPromptLength(int64_t tokens, int64_t max_prompt_tokens, int64_t max_context,
                               const char* param) {
  const int64_t limit =
      max_prompt_tokens > 0 ? std::min(max_prompt_tokens, max_context - 1) : max_context - 1;
  if (tokens <= limit) return absl::OkStatus();
  return WithErrorReason(absl::ResourceExhaustedError(absl::StrCat(
                             "request: prompt has ", tokens, " tokens; the limit is ", limit)),
                         {kContextLengthExceeded, param});
}

}  // namespace twinspan::engine
