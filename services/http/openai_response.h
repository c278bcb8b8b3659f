// OpenAI response bodies from twinspan.v1 messages: whole completions, server-sent-event chunks,
// the model list and OpenAI-shaped error bodies with the HTTP status of each absl code.
#ifndef TWINSPAN_SERVICES_HTTP_OPENAI_RESPONSE_H_
#define TWINSPAN_SERVICES_HTTP_OPENAI_RESPONSE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "services/http/openai_request.h"
#include "twinspan/v1/serving.pb.h"

namespace twinspan::http {

// What every body of one completion repeats.
struct CompletionIds {
  OpenAiEndpoint endpoint = OpenAiEndpoint::kCompletions;
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// The HTTP status of a refusal, by Google's mapping of gRPC codes (INVALID_ARGUMENT 400,
// UNAUTHENTICATED 401, NOT_FOUND 404, UNAVAILABLE 503, ...) except that RESOURCE_EXHAUSTED is 429
// only where waiting helps (ErrorReason kOverloaded) and 400 for a limit the request is over, as
// OpenAI answers a prompt longer than the context.
int HttpStatusOf(const absl::Status& status);
// Seconds a client should wait before retrying (Retry-After), 0 where retrying does not help.
int RetryAfterSeconds(const absl::Status& status);
// {"error": {"message", "type", "param", "code"}}: `param` the OpenAI field the ErrorReason names
// (null when none), `code` "context_length_exceeded" for a prompt over the limit, else the absl
// code's name.
std::string ErrorBody(const absl::Status& status);

// OpenAI's finish_reason: "length" (max_tokens, context), "stop" (EOS, stop string or id),
// "abort" (vLLM's word for an aborted request).
const char* FinishReasonText(v1::FinishReason reason);

// The whole reply of a non-streamed call.
std::string CompletionBody(const CompletionIds& ids, const std::string& text,
                           const v1::GenerateFinal& final);
// One "data: {...}\n\n" event carrying `text`; with `final`, also its finish_reason and the
// twinspan extension. `role`: the chat delta's first event names the assistant.
std::string ChunkEvent(const CompletionIds& ids, const std::string& text, bool role,
                       const v1::GenerateFinal* final);
// The stream_options.include_usage event: no choices, the usage.
std::string UsageEvent(const CompletionIds& ids, const v1::GenerateFinal& final);
// An error inside a stream that already started (its status line was 200).
std::string ErrorEvent(const absl::Status& status);
inline constexpr char kDoneEvent[] = "data: [DONE]\n\n";

// GET /v1/models.
std::string ModelsBody(const v1::ModelInfoResponse& info, int64_t created);

}  // namespace twinspan::http

#endif  // TWINSPAN_SERVICES_HTTP_OPENAI_RESPONSE_H_
