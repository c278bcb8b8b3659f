// OpenAI request bodies (/v1/completions, /v1/chat/completions) -> twinspan.v1.GenerateRequest.
// Pure: no backend, no threads. The limits (max_tokens, prompt length, sampling ranges) are the
// target's, checked there exactly as for gRPC; here only the JSON's shape and what Twinspan does
// not implement are refused, by field name.
#ifndef TWINSPAN_SERVICES_HTTP_OPENAI_REQUEST_H_
#define TWINSPAN_SERVICES_HTTP_OPENAI_REQUEST_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "twinspan/v1/serving.pb.h"

namespace twinspan::http {

enum class OpenAiEndpoint { kCompletions, kChatCompletions };

struct OpenAiCall {
  v1::GenerateRequest request;
  std::string model;           // as the client named it; empty when it named none
  bool stream = false;         // server-sent events
  bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
};

// InvalidArgument naming the field for malformed JSON, a field of the wrong type, n != 1, and
// parameters Twinspan does not implement when set to anything but their neutral value
// (logprobs, echo, best_of, suffix, presence / frequency / repetition penalties, logit_bias,
// tools). Defaults follow OpenAI's: temperature 1, top_p 1. Extensions (vLLM's names where it has
// one): top_k, min_p, stop_token_ids, ignore_eos, draft, session_key, head_variant, and
// structured output as response_format (json_object, json_schema), guided_json, guided_regex,
// guided_grammar or guided_choice.
absl::StatusOr<OpenAiCall> ParseOpenAiRequest(OpenAiEndpoint endpoint, absl::string_view body);

}  // namespace twinspan::http

#endif  // TWINSPAN_SERVICES_HTTP_OPENAI_REQUEST_H_
