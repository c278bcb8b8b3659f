// The OpenAI request parser and response shapes (services/http): untrusted JSON in, a
// GenerateRequest or an error naming the field out; error bodies and statuses per absl code.
#include <string>

#include "common/error_reason.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "services/http/openai_request.h"
#include "services/http/openai_response.h"

namespace twinspan::http {
namespace {

TEST(OpenAiRequestTest, ChatWithDefaultsExtensionsAndStructuredOutput) {
  auto call = ParseOpenAiRequest(OpenAiEndpoint::kChatCompletions, R"({
      "model": "m", "messages": [{"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
      "max_completion_tokens": 9, "top_k": -1, "seed": -1, "stop": "x", "stream": true,
      "stream_options": {"include_usage": true}, "draft": false, "session_key": "s",
      "response_format": {"type": "json_schema", "json_schema": {"name": "n",
        "schema": {"type": "object", "properties": {"z": {"type": "null"}, "a": {"type": "null"}}}}}})");
  ASSERT_TRUE(call.ok()) << call.status();
  const v1::GenerateRequest& r = call->request;
  EXPECT_EQ(call->model, "m");
  EXPECT_TRUE(call->stream);
  EXPECT_TRUE(call->include_usage);
  ASSERT_EQ(r.chat().messages_size(), 2);
  EXPECT_EQ(r.chat().messages(1).content(), "ab");
  EXPECT_EQ(r.sampling().max_tokens(), 9u);
  EXPECT_EQ(r.sampling().temperature(), 1.0f);  // OpenAI's default
  EXPECT_EQ(r.sampling().top_k(), 0u);
  EXPECT_EQ(r.sampling().seed().value(), ~uint64_t{0});
  EXPECT_FALSE(r.sampling().draft().value());
  EXPECT_EQ(r.session_key(), "s");
  // The schema keeps its member order (it decides the output's).
  EXPECT_LT(r.structured_output().json_schema().find("\"z\""),
            r.structured_output().json_schema().find("\"a\""));
}

TEST(OpenAiRequestTest, CompletionPromptsAndGuidedChoice) {
  auto ids = ParseOpenAiRequest(OpenAiEndpoint::kCompletions,
                                R"({"prompt": [[1, 2, 3]], "guided_choice": ["a.b", "c"]})");
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->request.prompt_ids().ids_size(), 3);
  EXPECT_EQ(ids->request.structured_output().regex(), "(?:a\\.b|c)");
  auto text = ParseOpenAiRequest(OpenAiEndpoint::kCompletions, R"({"prompt": ["hi"]})");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->request.prompt(), "hi");
}

TEST(OpenAiRequestTest, RefusesByFieldName) {
  const std::pair<OpenAiEndpoint, const char*> cases[] = {
      {OpenAiEndpoint::kCompletions, "[]"},
      {OpenAiEndpoint::kCompletions, "{"},
      {OpenAiEndpoint::kCompletions, R"({})"},
      {OpenAiEndpoint::kCompletions, R"({"prompt": ["a", "b"]})"},
      {OpenAiEndpoint::kCompletions, R"({"prompt": [-1]})"},
      {OpenAiEndpoint::kCompletions, R"({"prompt": "a", "n": 3})"},
      {OpenAiEndpoint::kCompletions, R"({"prompt": "a", "logprobs": 2})"},
      {OpenAiEndpoint::kCompletions, R"({"prompt": "a", "presence_penalty": 0.5})"},
      {OpenAiEndpoint::kCompletions, R"({"prompt": "a", "max_tokens": -4})"},
      {OpenAiEndpoint::kCompletions, R"({"prompt": "a", "stop": [1]})"},
      {OpenAiEndpoint::kCompletions, R"({"prompt": "a", "guided_regex": "a", "guided_json": {}})"},
      {OpenAiEndpoint::kChatCompletions, R"({"messages": []})"},
      {OpenAiEndpoint::kChatCompletions, R"({"messages": [{"content": "x"}]})"},
      {OpenAiEndpoint::kChatCompletions,
       R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"},
      {OpenAiEndpoint::kChatCompletions,
       R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})"},
      {OpenAiEndpoint::kChatCompletions,
       R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "yaml"}})"},
  };
  for (const auto& [endpoint, body] : cases) {
    auto call = ParseOpenAiRequest(endpoint, body);
    ASSERT_FALSE(call.ok()) << body;
    EXPECT_EQ(call.status().code(), absl::StatusCode::kInvalidArgument) << body;
  }
  auto call = ParseOpenAiRequest(OpenAiEndpoint::kCompletions, R"({"prompt": "a", "top_p": "x"})");
  EXPECT_NE(call.status().message().find("`top_p`"), std::string::npos) << call.status();
}

TEST(OpenAiResponseTest, ErrorsAndStatuses) {
  EXPECT_EQ(HttpStatusOf(absl::InvalidArgumentError("x")), 400);
  EXPECT_EQ(HttpStatusOf(absl::UnauthenticatedError("x")), 401);
  EXPECT_EQ(HttpStatusOf(absl::NotFoundError("x")), 404);
  EXPECT_EQ(HttpStatusOf(absl::UnavailableError("x")), 503);
  EXPECT_EQ(HttpStatusOf(absl::DeadlineExceededError("x")), 504);
  EXPECT_EQ(HttpStatusOf(absl::InternalError("x")), 500);
  EXPECT_EQ(RetryAfterSeconds(absl::UnavailableError("draining")), 1);
  EXPECT_EQ(RetryAfterSeconds(absl::InvalidArgumentError("x")), 0);
  const auto error = nlohmann::json::parse(ErrorBody(absl::UnauthenticatedError("no \xff token")));
  EXPECT_EQ(error["error"]["code"], "UNAUTHENTICATED");
  EXPECT_EQ(error["error"]["type"], "authentication_error");
  v1::GenerateFinal final;
  final.set_finish_reason(v1::FINISH_REASON_CONTEXT);
  final.set_prompt_tokens(3);
  final.set_completion_tokens(4);
  const CompletionIds ids{OpenAiEndpoint::kChatCompletions, "chatcmpl-1", 7, "m"};
  const auto body = nlohmann::json::parse(CompletionBody(ids, "hi \xc3", final));
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["total_tokens"], 7);
  EXPECT_EQ(body["object"], "chat.completion");
  const std::string event = ChunkEvent(ids, "x", true, nullptr);
  EXPECT_EQ(event.rfind("data: {", 0), 0u);
  EXPECT_EQ(event.substr(event.size() - 2), "\n\n");
}

// A limit the request is over is 400 (OpenAI's answer to a prompt over the context: clients do
// not retry it); 429 with Retry-After only where waiting helps.
TEST(OpenAiResponseTest, LimitsAre400AndOnlyLoadIs429) {
  const absl::Status context =
      WithErrorReason(absl::ResourceExhaustedError("request: prompt has 9 tokens; the limit is 4"),
                      {kContextLengthExceeded, "chat"});
  EXPECT_EQ(HttpStatusOf(context), 400);
  EXPECT_EQ(RetryAfterSeconds(context), 0);
  auto error = nlohmann::json::parse(ErrorBody(context))["error"];
  EXPECT_EQ(error["code"], "context_length_exceeded");
  EXPECT_EQ(error["type"], "invalid_request_error");
  EXPECT_EQ(error["param"], "messages");

  const absl::Status bytes =
      WithErrorReason(absl::ResourceExhaustedError("request: too big"), {"", "structured_output"});
  EXPECT_EQ(HttpStatusOf(bytes), 400);
  error = nlohmann::json::parse(ErrorBody(bytes))["error"];
  EXPECT_EQ(error["code"], "RESOURCE_EXHAUSTED");
  EXPECT_EQ(error["param"], "response_format");

  const absl::Status busy =
      WithErrorReason(absl::ResourceExhaustedError("engine: the queue is full"), {kOverloaded, ""});
  EXPECT_EQ(HttpStatusOf(busy), 429);
  EXPECT_EQ(RetryAfterSeconds(busy), 1);
  error = nlohmann::json::parse(ErrorBody(busy))["error"];
  EXPECT_EQ(error["type"], "rate_limit_error");
  EXPECT_TRUE(error["param"].is_null());
  EXPECT_EQ(HttpStatusOf(absl::ResourceExhaustedError("no reason")), 400);
}

TEST(OpenAiRequestTest, ErrorsNameTheirParam) {
  auto call = ParseOpenAiRequest(OpenAiEndpoint::kCompletions, R"({"prompt": "a", "top_p": "x"})");
  ASSERT_FALSE(call.ok());
  EXPECT_EQ(nlohmann::json::parse(ErrorBody(call.status()))["error"]["param"], "top_p");
  call =
      ParseOpenAiRequest(OpenAiEndpoint::kChatCompletions, R"({"messages": [{"content": "x"}]})");
  ASSERT_FALSE(call.ok());
  EXPECT_EQ(nlohmann::json::parse(ErrorBody(call.status()))["error"]["param"], "messages[0].role");
  EXPECT_EQ(nlohmann::json::parse(
                ErrorBody(WithErrorReason(absl::InvalidArgumentError("max_tokens 0"),
                                          {"", "sampling.max_tokens"})))["error"]["param"],
            "max_tokens");
}

// JavaScript clients read numbers as doubles: a seed past 2^53 is a string both ways.
TEST(OpenAiResponseTest, SeedsPast2To53AreStrings) {
  const CompletionIds ids{OpenAiEndpoint::kCompletions, "cmpl-1", 7, "m"};
  v1::GenerateFinal final;
  final.set_seed(uint64_t{1} << 53);
  EXPECT_TRUE(
      nlohmann::json::parse(CompletionBody(ids, "", final))["twinspan"]["seed"].is_number());
  final.set_seed(18446744073709551557u);
  const auto seed = nlohmann::json::parse(CompletionBody(ids, "", final))["twinspan"]["seed"];
  ASSERT_TRUE(seed.is_string());
  auto call = ParseOpenAiRequest(OpenAiEndpoint::kCompletions,
                                 R"({"prompt": "a", "seed": ")" + seed.get<std::string>() + "\"}");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->request.sampling().seed().value(), 18446744073709551557u);
  for (const char* bad : {R"("12x")", R"("-1")", R"("18446744073709551616")", "1.5"}) {
    call = ParseOpenAiRequest(OpenAiEndpoint::kCompletions,
                              std::string(R"({"prompt": "a", "seed": )") + bad + "}");
    EXPECT_FALSE(call.ok()) << bad;
  }
}

}  // namespace
}  // namespace twinspan::http
