#include "services/target/server/request_parser.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/error_reason.h"
#include "common/sampler/keyed_sampler.h"

namespace twinspan::serving {
namespace {

absl::Status CheckRange(const char* name, float value, float lo, float hi) {
  if (!std::isfinite(value) || value < lo || value > hi) {
    return WithErrorReason(
        absl::InvalidArgumentError(absl::StrCat("request: sampling.", name, " = ", value,
                                                " is outside [", lo, ", ", hi, "]")),
        {"", absl::StrCat("sampling.", name)});
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Render(const v1::ChatMessages& chat, const engine::TextCodec& codec,
                                   const RequestLimits& limits) {
  if (chat.messages_size() == 0) {
    return WithErrorReason(absl::InvalidArgumentError("request: chat has no messages"),
                           {"", "chat"});
  }
  if (chat.messages_size() > limits.max_chat_messages) {
    return WithErrorReason(absl::ResourceExhaustedError(absl::StrCat(
                               "request: ", chat.messages_size(), " chat messages (limit ",
                               limits.max_chat_messages, ")")),
                           {"", "chat"});
  }
  std::vector<engine::ChatTurn> turns;
  int64_t bytes = 0;
  for (const v1::ChatMessage& m : chat.messages()) {
    if (m.role().empty()) {
      return WithErrorReason(absl::InvalidArgumentError("request: a chat message has no role"),
                             {"", "chat"});
    }
    bytes += static_cast<int64_t>(m.role().size() + m.content().size());
    turns.push_back({m.role(), m.content()});
  }
  if (bytes > limits.max_text_bytes) {
    return WithErrorReason(
        absl::ResourceExhaustedError(absl::StrCat("request: chat messages have ", bytes,
                                                  " bytes (limit ", limits.max_text_bytes, ")")),
        {"", "chat"});
  }
  engine::ChatOptions options;
  options.add_generation_prompt = !chat.skip_generation_prompt();
  options.enable_thinking = !chat.disable_thinking();
  absl::StatusOr<std::string> rendered = codec.RenderChat(turns, options);
  if (!rendered.ok() && !absl::IsFailedPrecondition(rendered.status())) {
    // A template may quote the messages in its error: mark it so logs can leave it out.
    return absl::Status(rendered.status().code(),
                        absl::StrCat(kChatTemplateRefusal, rendered.status().message()));
  }
  return rendered;
}

absl::Status CheckTextSize(const char* what, const char* param, size_t bytes,
                           const RequestLimits& limits) {
  if (static_cast<int64_t>(bytes) > limits.max_text_bytes) {
    return WithErrorReason(absl::ResourceExhaustedError(absl::StrCat(
                               what, " has ", bytes, " bytes (limit ", limits.max_text_bytes, ")")),
                           {"", param});
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint32_t>> PromptIds(const v1::GenerateRequest& request,
                                                const engine::TextCodec& codec,
                                                const RequestLimits& limits) {
  switch (request.input_case()) {
    case v1::GenerateRequest::kPrompt:
      if (absl::Status s =
              CheckTextSize("request: prompt", "prompt", request.prompt().size(), limits);
          !s.ok()) {
        return s;
      }
      return codec.Encode(request.prompt(), /*parse_special=*/true);
    case v1::GenerateRequest::kPromptIds:
      return std::vector<uint32_t>(request.prompt_ids().ids().begin(),
                                   request.prompt_ids().ids().end());
    case v1::GenerateRequest::kChat: {
      absl::StatusOr<std::string> text = Render(request.chat(), codec, limits);
      if (!text.ok()) return text.status();
      return codec.Encode(*text, /*parse_special=*/true);
    }
    case v1::GenerateRequest::INPUT_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("request: set one of prompt, prompt_ids or chat");
}

}  // namespace

absl::StatusOr<engine::EngineRequest> ParseGenerateRequest(const v1::GenerateRequest& request,
                                                           const rpc::CallInfo& call,
                                                           const engine::TextCodec& codec,
                                                           const RequestLimits& limits) {
  if (request.request_id().size() > 256) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request: request_id has ", request.request_id().size(), " bytes (limit 256)"));
  }
  absl::StatusOr<std::vector<uint32_t>> ids = PromptIds(request, codec, limits);
  if (!ids.ok()) return ids.status();
  engine::EngineRequest r;
  r.request_id = call.request_id;
  r.prompt_ids = *std::move(ids);
  const int vocab = limits.vocab_size;
  if (r.prompt_ids.empty()) {
    return WithErrorReason(absl::InvalidArgumentError("request: the prompt is empty"),
                           {"", "prompt"});
  }
  for (uint32_t id : r.prompt_ids) {
    if (id >= static_cast<uint32_t>(vocab)) {
      return WithErrorReason(
          absl::InvalidArgumentError(absl::StrCat("request: prompt token id ", id,
                                                  " is outside the vocabulary (size ", vocab, ")")),
          {"", "prompt_ids"});
    }
  }
  if (absl::Status s = engine::CheckPromptLength(static_cast<int64_t>(r.prompt_ids.size()),
                                                 limits.max_prompt_tokens, limits.max_context,
                                                 request.has_chat() ? "chat" : "prompt");
      !s.ok()) {
    return s;
  }
  const v1::SamplingParams& p = request.sampling();
  if (absl::Status s = CheckRange("temperature", p.temperature(), 0.0f, 100.0f); !s.ok()) return s;
  if (absl::Status s = CheckRange("top_p", p.top_p(), 0.0f, 1.0f); !s.ok()) return s;
  if (absl::Status s = CheckRange("min_p", p.min_p(), 0.0f, 1.0f); !s.ok()) return s;
  if (p.top_k() > static_cast<uint32_t>(vocab)) {
    return WithErrorReason(
        absl::InvalidArgumentError(absl::StrCat("request: sampling.top_k ", p.top_k(),
                                                " exceeds the vocabulary (", vocab, ")")),
        {"", "sampling.top_k"});
  }
  r.sampling.temperature = p.temperature();
  r.sampling.top_k = static_cast<int>(p.top_k());
  r.sampling.top_p = p.top_p() == 0.0f ? 1.0f : p.top_p();
  r.sampling.min_p = p.min_p();
  r.sampling.seed =
      p.has_seed()
          ? p.seed().value()
          : sampler::SeedFromPrompt(std::vector<int32_t>(r.prompt_ids.begin(), r.prompt_ids.end()));
  if (p.max_tokens() > static_cast<uint32_t>(limits.max_tokens_limit)) {
    return WithErrorReason(
        absl::InvalidArgumentError(absl::StrCat("request: max_tokens ", p.max_tokens(),
                                                " is outside [1, ", limits.max_tokens_limit, "]")),
        {"", "sampling.max_tokens"});
  }
  r.max_tokens = p.max_tokens() == 0 ? limits.default_max_tokens : static_cast<int>(p.max_tokens());
  if (r.max_tokens < 1 || r.max_tokens > limits.max_tokens_limit) {
    return WithErrorReason(
        absl::InvalidArgumentError(absl::StrCat("request: max_tokens ", r.max_tokens,
                                                " is outside [1, ", limits.max_tokens_limit, "]")),
        {"", "sampling.max_tokens"});
  }
  if (p.stop_size() > limits.max_stop_strings) {
    return WithErrorReason(
        absl::InvalidArgumentError(absl::StrCat("request: ", p.stop_size(), " stop strings (limit ",
                                                limits.max_stop_strings, ")")),
        {"", "sampling.stop"});
  }
  for (const std::string& stop : p.stop()) {
    if (stop.empty() || static_cast<int>(stop.size()) > limits.max_stop_bytes) {
      return WithErrorReason(absl::InvalidArgumentError(
                                 absl::StrCat("request: a stop string has ", stop.size(),
                                              " bytes (allowed 1..", limits.max_stop_bytes, ")")),
                             {"", "sampling.stop"});
    }
  }
  if (p.stop_token_ids_size() > limits.max_stop_strings * 8) {
    return WithErrorReason(absl::InvalidArgumentError(absl::StrCat(
                               "request: ", p.stop_token_ids_size(), " stop_token_ids (limit ",
                               limits.max_stop_strings * 8, ")")),
                           {"", "sampling.stop_token_ids"});
  }
  for (uint32_t id : p.stop_token_ids()) {
    if (id >= static_cast<uint32_t>(vocab)) {
      return WithErrorReason(
          absl::InvalidArgumentError(absl::StrCat("request: stop_token_id ", id,
                                                  " is outside the vocabulary (", vocab, ")")),
          {"", "sampling.stop_token_ids"});
    }
  }
  r.stop_token_ids.assign(p.stop_token_ids().begin(), p.stop_token_ids().end());
  r.ignore_eos = p.ignore_eos();
  r.draft = !p.has_draft() || p.draft().value();
  r.context_copy = !p.has_context_copy() || p.context_copy().value();
  r.deadline = call.deadline;
  return r;
}

absl::StatusOr<v1::TokenizeResponse> ParseTokenizeRequest(const v1::TokenizeRequest& request,
                                                          const engine::TextCodec& codec,
                                                          const RequestLimits& limits) {
  v1::TokenizeResponse response;
  absl::StatusOr<std::vector<uint32_t>> ids;
  if (request.has_chat()) {
    absl::StatusOr<std::string> text = Render(request.chat(), codec, limits);
    if (!text.ok()) return text.status();
    response.set_rendered(*text);
    ids = codec.Encode(*text, /*parse_special=*/true);
  } else {
    if (absl::Status s = CheckTextSize("Tokenize: text", "text", request.text().size(), limits);
        !s.ok()) {
      return s;
    }
    ids = codec.Encode(request.text(), request.add_special_tokens());
  }
  if (!ids.ok()) return ids.status();
  response.mutable_ids()->Add(ids->begin(), ids->end());
  return response;
}

}  // namespace twinspan::serving
