#include "services/http/openai_request.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/error_reason.h"
#include "nlohmann/json.hpp"
#include "services/structured/json_schema_regex.h"

namespace twinspan::http {
namespace {

using Json = nlohmann::ordered_json;

absl::Status Bad(const std::string& field, const std::string& what) {
  return WithErrorReason(absl::InvalidArgumentError(absl::StrCat("request: `", field, "` ", what)),
                         {"", field});
}

const Json* Find(const Json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

absl::StatusOr<double> Number(const Json& body, const char* key, double fallback) {
  const Json* v = Find(body, key);
  if (v == nullptr) return fallback;
  if (!v->is_number()) return Bad(key, "must be a number");
  return v->get<double>();
}

absl::StatusOr<int64_t> Integer(const Json& body, const char* key, int64_t fallback) {
  const Json* v = Find(body, key);
  if (v == nullptr) return fallback;
  if (!v->is_number_integer()) return Bad(key, "must be an integer");
  return v->get<int64_t>();
}

absl::StatusOr<bool> Bool(const Json& body, const char* key, bool fallback) {
  const Json* v = Find(body, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) return Bad(key, "must be true or false");
  return v->get<bool>();
}

absl::StatusOr<std::string> String(const Json& body, const char* key) {
  const Json* v = Find(body, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return Bad(key, "must be a string");
  return v->get<std::string>();
}

// Parameters Twinspan does not implement: refused unless absent or neutral.
absl::Status RefuseUnsupported(const Json& body) {
  for (const char* key : {"presence_penalty", "frequency_penalty"}) {
    absl::StatusOr<double> v = Number(body, key, 0.0);
    if (!v.ok()) return v.status();
    if (*v != 0.0) return Bad(key, "is not supported (only 0)");
  }
  absl::StatusOr<double> repetition = Number(body, "repetition_penalty", 1.0);
  if (!repetition.ok()) return repetition.status();
  if (*repetition != 1.0) return Bad("repetition_penalty", "is not supported (only 1)");
  for (const char* key : {"echo"}) {
    absl::StatusOr<bool> v = Bool(body, key, false);
    if (!v.ok()) return v.status();
    if (*v) return Bad(key, "is not supported");
  }
  if (const Json* v = Find(body, "logprobs");
      v != nullptr && !(v->is_boolean() && !v->get<bool>())) {
    return Bad("logprobs", "is not supported");
  }
  if (const Json* v = Find(body, "top_logprobs"); v != nullptr)
    return Bad("top_logprobs", "is not supported");
  if (const Json* v = Find(body, "suffix"); v != nullptr) return Bad("suffix", "is not supported");
  if (const Json* v = Find(body, "logit_bias"); v != nullptr && !v->empty()) {
    return Bad("logit_bias", "is not supported");
  }
  for (const char* key : {"tools", "functions"}) {
    if (const Json* v = Find(body, key); v != nullptr && !v->empty()) {
      return Bad(key, "is not supported (no tool calls)");
    }
  }
  for (const char* key : {"n", "best_of"}) {
    absl::StatusOr<int64_t> v = Integer(body, key, 1);
    if (!v.ok()) return v.status();
    if (*v != 1) return Bad(key, "must be 1 (one choice per request)");
  }
  return absl::OkStatus();
}

absl::Status ParsePrompt(const Json& body, v1::GenerateRequest* request) {
  const Json* prompt = Find(body, "prompt");
  if (prompt == nullptr) return Bad("prompt", "is required");
  const Json* one = prompt;
  if (prompt->is_array() && !prompt->empty() &&
      (prompt->front().is_string() || prompt->front().is_array())) {
    if (prompt->size() != 1) return Bad("prompt", "must be one prompt (batches are not served)");
    one = &prompt->front();
  }
  if (one->is_string()) {
    request->set_prompt(one->get<std::string>());
    return absl::OkStatus();
  }
  if (!one->is_array()) return Bad("prompt", "must be a string or an array of token ids");
  v1::TokenIds* ids = request->mutable_prompt_ids();
  for (const Json& id : *one) {
    if (!id.is_number_unsigned() && !(id.is_number_integer() && id.get<int64_t>() >= 0)) {
      return Bad("prompt", "token ids must be non-negative integers");
    }
    if (id.get<uint64_t>() > UINT32_MAX) return Bad("prompt", "has a token id over 2^32 - 1");
    ids->add_ids(static_cast<uint32_t>(id.get<uint64_t>()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> MessageContent(const Json& message, size_t index) {
  const std::string field = absl::StrCat("messages[", index, "].content");
  auto content = message.find("content");
  if (content == message.end() || content->is_null()) return std::string();
  if (content->is_string()) return content->get<std::string>();
  if (!content->is_array()) return Bad(field, "must be a string or an array of text parts");
  std::string text;
  for (const Json& part : *content) {
    if (!part.is_object() || !part.contains("type") || part["type"] != "text" ||
        !part.contains("text") || !part["text"].is_string()) {
      return Bad(field, "parts must be {\"type\": \"text\", \"text\": ...} (text only)");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

absl::Status ParseMessages(const Json& body, v1::GenerateRequest* request) {
  const Json* messages = Find(body, "messages");
  if (messages == nullptr || !messages->is_array() || messages->empty()) {
    return Bad("messages", "must be a non-empty array");
  }
  v1::ChatMessages* chat = request->mutable_chat();
  for (size_t i = 0; i < messages->size(); ++i) {
    const Json& m = (*messages)[i];
    if (!m.is_object()) return Bad(absl::StrCat("messages[", i, "]"), "must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) {
      return Bad(absl::StrCat("messages[", i, "].role"), "must be a string");
    }
    absl::StatusOr<std::string> content = MessageContent(m, i);
    if (!content.ok()) return content.status();
    v1::ChatMessage* out = chat->add_messages();
    out->set_role(role->get<std::string>());
    out->set_content(*std::move(content));
  }
  return absl::OkStatus();
}

absl::Status ParseStop(const Json& body, v1::SamplingParams* s) {
  if (const Json* stop = Find(body, "stop")) {
    if (stop->is_string()) {
      s->add_stop(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (const Json& one : *stop) {
        if (!one.is_string()) return Bad("stop", "must be a string or an array of strings");
        s->add_stop(one.get<std::string>());
      }
    } else {
      return Bad("stop", "must be a string or an array of strings");
    }
  }
  if (const Json* ids = Find(body, "stop_token_ids")) {
    if (!ids->is_array()) return Bad("stop_token_ids", "must be an array of token ids");
    for (const Json& id : *ids) {
      if (!id.is_number_unsigned() && !(id.is_number_integer() && id.get<int64_t>() >= 0)) {
        return Bad("stop_token_ids", "must hold non-negative integers");
      }
      s->add_stop_token_ids(static_cast<uint32_t>(id.get<uint64_t>()));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseSampling(OpenAiEndpoint endpoint, const Json& body, v1::SamplingParams* s) {
  absl::StatusOr<int64_t> max_tokens = Integer(body, "max_tokens", 0);
  if (!max_tokens.ok()) return max_tokens.status();
  if (endpoint == OpenAiEndpoint::kChatCompletions && Find(body, "max_completion_tokens")) {
    max_tokens = Integer(body, "max_completion_tokens", 0);
    if (!max_tokens.ok()) return max_tokens.status();
  }
  if (*max_tokens < 0 || *max_tokens > UINT32_MAX) return Bad("max_tokens", "is out of range");
  s->set_max_tokens(static_cast<uint32_t>(*max_tokens));
  absl::StatusOr<double> temperature = Number(body, "temperature", 1.0);
  absl::StatusOr<double> top_p = Number(body, "top_p", 1.0);
  absl::StatusOr<double> min_p = Number(body, "min_p", 0.0);
  absl::StatusOr<int64_t> top_k = Integer(body, "top_k", 0);
  for (const auto* v : {&temperature, &top_p, &min_p}) {
    if (!v->ok()) return v->status();
  }
  if (!top_k.ok()) return top_k.status();
  s->set_temperature(static_cast<float>(*temperature));
  s->set_top_p(static_cast<float>(*top_p));
  s->set_min_p(static_cast<float>(*min_p));
  // vLLM spells "off" -1; ours is 0.
  if (*top_k < -1 || *top_k > UINT32_MAX) return Bad("top_k", "is out of range");
  s->set_top_k(*top_k < 0 ? 0 : static_cast<uint32_t>(*top_k));
  if (const Json* seed = Find(body, "seed")) {
    // A string too: replies give seeds past 2^53 as strings, so JavaScript can send them back.
    uint64_t value = 0;
    if (seed->is_string()) {
      if (!absl::SimpleAtoi(seed->get<std::string>(), &value)) {
        return Bad("seed", "must be an integer or its decimal string below 2^64");
      }
    } else if (seed->is_number_integer()) {
      value = seed->is_number_unsigned() ? seed->get<uint64_t>()
                                         : static_cast<uint64_t>(seed->get<int64_t>());
    } else {
      return Bad("seed", "must be an integer or its decimal string below 2^64");
    }
    s->mutable_seed()->set_value(value);
  }
  absl::StatusOr<bool> ignore_eos = Bool(body, "ignore_eos", false);
  if (!ignore_eos.ok()) return ignore_eos.status();
  s->set_ignore_eos(*ignore_eos);
  if (const Json* draft = Find(body, "draft")) {
    if (!draft->is_boolean()) return Bad("draft", "must be true or false");
    s->mutable_draft()->set_value(draft->get<bool>());
  }
  return ParseStop(body, s);
}

// A JSON value that may come as an object or as its text.
absl::StatusOr<std::string> JsonText(const Json& v, const char* field) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() || v.is_boolean()) return v.dump();
  return Bad(field, "must be a JSON Schema (object or its text)");
}

absl::Status ParseStructuredOutput(const Json& body, v1::GenerateRequest* request) {
  std::vector<std::string> given;
  v1::StructuredOutput so;
  if (const Json* rf = Find(body, "response_format")) {
    if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string()) {
      return Bad("response_format", "must be an object with a type");
    }
    const std::string type = (*rf)["type"].get<std::string>();
    if (type == "json_object") {
      so.set_json_schema(R"({"type":"object"})");
      given.push_back("response_format");
    } else if (type == "json_schema") {
      auto js = rf->find("json_schema");
      if (js == rf->end() || !js->is_object() || !js->contains("schema")) {
        return Bad("response_format.json_schema", "must be an object with a schema");
      }
      absl::StatusOr<std::string> schema =
          JsonText((*js)["schema"], "response_format.json_schema.schema");
      if (!schema.ok()) return schema.status();
      so.set_json_schema(*std::move(schema));
      given.push_back("response_format");
    } else if (type != "text") {
      return Bad("response_format.type", "must be text, json_object or json_schema");
    }
  }
  if (const Json* v = Find(body, "guided_json")) {
    absl::StatusOr<std::string> schema = JsonText(*v, "guided_json");
    if (!schema.ok()) return schema.status();
    so.set_json_schema(*std::move(schema));
    given.push_back("guided_json");
  }
  for (const char* key : {"guided_regex", "guided_grammar"}) {
    if (const Json* v = Find(body, key)) {
      if (!v->is_string()) return Bad(key, "must be a string");
      if (std::string(key) == "guided_regex") {
        so.set_regex(v->get<std::string>());
      } else {
        so.set_grammar(v->get<std::string>());
      }
      given.push_back(key);
    }
  }
  if (const Json* v = Find(body, "guided_choice")) {
    if (!v->is_array() || v->empty()) return Bad("guided_choice", "must be a non-empty array");
    std::vector<std::string> choices;
    for (const Json& c : *v) {
      if (!c.is_string()) return Bad("guided_choice", "must hold strings");
      choices.push_back(structured::RegexLiteral(c.get<std::string>()));
    }
    so.set_regex(absl::StrCat("(?:", absl::StrJoin(choices, "|"), ")"));
    given.push_back("guided_choice");
  }
  if (given.size() > 1) {
    return Bad(absl::StrJoin(given, "`, `"), "ask for structured output twice: give one");
  }
  if (!given.empty()) *request->mutable_structured_output() = std::move(so);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OpenAiCall> ParseOpenAiRequest(OpenAiEndpoint endpoint, absl::string_view body) {
  const Json json = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InvalidArgumentError("request: the body is not valid JSON");
  if (!json.is_object()) return absl::InvalidArgumentError("request: the body must be an object");
  OpenAiCall call;
  if (absl::Status s = RefuseUnsupported(json); !s.ok()) return s;
  absl::StatusOr<std::string> model = String(json, "model");
  if (!model.ok()) return model.status();
  call.model = *std::move(model);
  if (absl::Status s = endpoint == OpenAiEndpoint::kChatCompletions
                           ? ParseMessages(json, &call.request)
                           : ParsePrompt(json, &call.request);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseSampling(endpoint, json, call.request.mutable_sampling()); !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseStructuredOutput(json, &call.request); !s.ok()) return s;
  absl::StatusOr<bool> stream = Bool(json, "stream", false);
  if (!stream.ok()) return stream.status();
  call.stream = *stream;
  if (const Json* options = Find(json, "stream_options")) {
    if (!options->is_object()) return Bad("stream_options", "must be an object");
    absl::StatusOr<bool> usage = Bool(*options, "include_usage", false);
    if (!usage.ok()) return usage.status();
    call.include_usage = *usage;
  }
  for (const char* key : {"session_key", "head_variant"}) {
    absl::StatusOr<std::string> v = String(json, key);
    if (!v.ok()) return v.status();
    if (std::string(key) == "session_key") {
      call.request.set_session_key(*v);
    } else {
      call.request.set_head_variant(*v);
    }
  }
  return call;
}

}  // namespace twinspan::http
