// The public request parser: a twinspan.v1 GenerateRequest or TokenizeRequest, checked against the
// server's limits and turned into an engine request or token ids. Pure: no engine, no threads, so
// the fuzzer (tests/fuzz/serving_request_fuzz.cc) runs exactly what the target serves.
#ifndef TWINSPAN_SERVICES_TARGET_SERVER_REQUEST_PARSER_H_
#define TWINSPAN_SERVICES_TARGET_SERVER_REQUEST_PARSER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "services/rpc/serving_backend.h"
#include "services/target/engine/engine_request.h"
#include "services/target/engine/text_codec.h"
#include "twinspan/v1/serving.pb.h"

namespace twinspan::serving {

// The start of every refusal that comes from rendering chat messages with the model's template
// (its text may quote the messages, so logs leave it out unless --log-prompts).
inline constexpr char kChatTemplateRefusal[] = "request: the chat template refused the messages: ";

struct RequestLimits {
  int vocab_size = 0;             // prompt and stop ids must be below it
  int64_t max_context = 0;        // positions per stream
  int64_t max_prompt_tokens = 0;  // 0: max_context - 1 (never more)
  int max_tokens_limit = 4096;    // the largest max_tokens accepted
  int default_max_tokens = 256;   // when a request leaves max_tokens at 0
  int max_stop_strings = 8;
  int max_stop_bytes = 256;
  int max_chat_messages = 256;
  int64_t max_text_bytes = 1 << 20;      // raw prompt or Tokenize text
  int64_t max_grammar_bytes = 64 << 10;  // a structured_output schema, regex or grammar
};

// The engine request for `request`: the prompt encoded (text), rendered and encoded (chat) or
// taken as is (ids); sampling checked; the seed given or derived from the prompt; the call's id
// and deadline. Errors name the field or the limit: InvalidArgument (no input, an id outside the
// vocabulary, a sampling value out of range, max_tokens outside [1, limit], bad stop strings),
// ResourceExhausted (prompt or text over its limit, too many chat messages), FailedPrecondition
// (chat without a template). The same checks the lane engine makes at Submit are made here.
absl::StatusOr<engine::EngineRequest> ParseGenerateRequest(const v1::GenerateRequest& request,
                                                           const rpc::CallInfo& call,
                                                           const engine::TextCodec& codec,
                                                           const RequestLimits& limits);

// Tokenize: text (with or without special tokens) or chat rendered with the template. Errors as
// ParseGenerateRequest's for text size and chat.
absl::StatusOr<v1::TokenizeResponse> ParseTokenizeRequest(const v1::TokenizeRequest& request,
                                                          const engine::TextCodec& codec,
                                                          const RequestLimits& limits);

}  // namespace twinspan::serving

#endif  // TWINSPAN_SERVICES_TARGET_SERVER_REQUEST_PARSER_H_
