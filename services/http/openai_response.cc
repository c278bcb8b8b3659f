#include "services/http/openai_response.h"

#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/error_reason.h"
#include "nlohmann/json.hpp"

namespace twinspan::http {
namespace {

using Json = nlohmann::ordered_json;

// Model text may hold invalid UTF-8 (a byte token cut mid-character); replace rather than throw.
std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

const char* ObjectName(OpenAiEndpoint endpoint, bool chunk) {
  if (endpoint == OpenAiEndpoint::kChatCompletions) {
    return chunk ? "chat.completion.chunk" : "chat.completion";
  }
  return "text_completion";
}

Json Usage(const v1::GenerateFinal& f) {
  return Json{{"prompt_tokens", f.prompt_tokens()},
              {"completion_tokens", f.completion_tokens()},
              {"total_tokens", f.prompt_tokens() + f.completion_tokens()}};
}

// JavaScript reads JSON numbers as doubles: an integer past 2^53 goes as its decimal string.
Json ExactInteger(uint64_t v) { return v <= (uint64_t{1} << 53) ? Json(v) : Json(absl::StrCat(v)); }

// What Twinspan adds to OpenAI's shape: the exactness and speculation figures of the reply.
Json Extension(const v1::GenerateFinal& f) {
  Json tokens_per_round = Json::array();
  for (uint32_t n : f.tokens_per_round()) tokens_per_round.push_back(n);
  return Json{{"token_sha256", f.token_sha256()},
              {"drafted", f.drafted()},
              {"accepted", f.accepted()},
              {"rounds", f.rounds()},
              {"seed", ExactInteger(f.seed())},
              {"head_variant", f.head_variant()},
              {"served_by", f.served_by()},
              {"draft_degraded", f.draft_degraded()},
              {"finish_reason", v1::FinishReason_Name(f.finish_reason())},
              {"tokens_per_round", tokens_per_round}};
}

Json Head(const CompletionIds& ids, bool chunk) {
  return Json{{"id", ids.id},
              {"object", ObjectName(ids.endpoint, chunk)},
              {"created", ids.created},
              {"model", ids.model}};
}

bool Overloaded(const absl::Status& status) {
  const std::optional<ErrorReason> why = GetErrorReason(status);
  return why.has_value() && why->reason == kOverloaded;
}

// The OpenAI name of a request field the gRPC API names otherwise.
std::string OpenAiParam(const std::string& param) {
  if (param == "chat") return "messages";
  if (param == "prompt_ids") return "prompt";
  if (param == "structured_output") return "response_format";
  if (absl::StartsWith(param, "sampling.")) return param.substr(9);
  return param;
}

const char* ErrorType(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnauthenticated:
      return "authentication_error";
    case absl::StatusCode::kPermissionDenied:
      return "permission_error";
    case absl::StatusCode::kNotFound:
      return "not_found_error";
    case absl::StatusCode::kResourceExhausted:
      return Overloaded(status) ? "rate_limit_error" : "invalid_request_error";
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return "invalid_request_error";
    case absl::StatusCode::kDeadlineExceeded:
      return "timeout_error";
    default:
      return "server_error";
  }
}

}  // namespace

int HttpStatusOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kAlreadyExists:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return Overloaded(status) ? 429 : 400;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

int RetryAfterSeconds(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable || Overloaded(status) ? 1 : 0;
}

std::string ErrorBody(const absl::Status& status) {
  const std::optional<ErrorReason> why = GetErrorReason(status);
  Json param = nullptr;
  if (why.has_value() && !why->param.empty()) param = OpenAiParam(why->param);
  const bool context = why.has_value() && why->reason == kContextLengthExceeded;
  return Dump(Json{{"error",
                    {{"message", std::string(status.message())},
                     {"type", ErrorType(status)},
                     {"param", param},
                     {"code", context ? std::string(kContextLengthExceeded)
                                      : absl::StatusCodeToString(status.code())}}}});
}

const char* FinishReasonText(v1::FinishReason reason) {
  switch (reason) {
    case v1::FINISH_REASON_LENGTH:
    case v1::FINISH_REASON_CONTEXT:
      return "length";
    case v1::FINISH_REASON_ABORTED:
      return "abort";
    default:
      return "stop";
  }
}

std::string CompletionBody(const CompletionIds& ids, const std::string& text,
                           const v1::GenerateFinal& final) {
  Json choice{{"index", 0}};
  if (ids.endpoint == OpenAiEndpoint::kChatCompletions) {
    choice["message"] = Json{{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = FinishReasonText(final.finish_reason());
  Json body = Head(ids, false);
  body["choices"] = Json::array({choice});
  body["usage"] = Usage(final);
  body["twinspan"] = Extension(final);
  return Dump(body);
}

std::string ChunkEvent(const CompletionIds& ids, const std::string& text, bool role,
                       const v1::GenerateFinal* final) {
  Json choice{{"index", 0}};
  if (ids.endpoint == OpenAiEndpoint::kChatCompletions) {
    Json delta = Json::object();
    if (role) delta["role"] = "assistant";
    if (!text.empty() || role) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] =
      final != nullptr ? Json(FinishReasonText(final->finish_reason())) : Json(nullptr);
  Json body = Head(ids, true);
  body["choices"] = Json::array({choice});
  if (final != nullptr) body["twinspan"] = Extension(*final);
  return absl::StrCat("data: ", Dump(body), "\n\n");
}

std::string UsageEvent(const CompletionIds& ids, const v1::GenerateFinal& final) {
  Json body = Head(ids, true);
  body["choices"] = Json::array();
  body["usage"] = Usage(final);
  return absl::StrCat("data: ", Dump(body), "\n\n");
}

std::string ErrorEvent(const absl::Status& status) {
  return absl::StrCat("data: ", ErrorBody(status), "\n\n");
}

std::string ModelsBody(const v1::ModelInfoResponse& info, int64_t created) {
  Json model{{"id", info.model_name()},
             {"object", "model"},
             {"created", created},
             {"owned_by", "twinspan"},
             {"max_model_len", info.max_context()}};
  return Dump(Json{{"object", "list"}, {"data", Json::array({model})}});
}

}  // namespace twinspan::http
