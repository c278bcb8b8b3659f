#include "services/http/openai_front.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "services/http/generate_queue.h"
#include "services/http/openai_request.h"
#include "services/http/openai_response.h"
#include "spdlog/spdlog.h"

namespace twinspan::http {
namespace {

constexpr char kJson[] = "application/json";

// 405 with the Allow header RFC 9110 asks for, in the API's error shape.
void ReplyWrongMethod(HttpExchange& exchange, const char* allowed) {
  exchange.AddHeader("Allow", allowed);
  exchange.Reply(405, kJson,
                 ErrorBody(absl::InvalidArgumentError(absl::StrCat(
                     exchange.method(), " ", exchange.path(), ": this route takes ", allowed))));
}

void ReplyError(HttpExchange& exchange, const absl::Status& status) {
  if (const int wait = RetryAfterSeconds(status); wait > 0) {
    exchange.AddHeader("Retry-After", absl::StrCat(wait));
  }
  exchange.Reply(HttpStatusOf(status), kJson, ErrorBody(status));
}

// As the gRPC service: the server ends the call itself a little before its deadline.
absl::Duration DeadlineMargin(absl::Duration budget) {
  return std::clamp(budget / 5, absl::Milliseconds(2), absl::Milliseconds(250));
}

// Streams one call's messages to the client: whole at the end, or as server-sent events. Events
// start only with the first message, so an error before it still gets its own HTTP status.
class Relay {
 public:
  Relay(HttpExchange& exchange, const OpenAiCall& call, CompletionIds ids, absl::Time deadline,
        absl::Time arrival, std::string request_id)
      : exchange_(exchange),
        call_(call),
        ids_(std::move(ids)),
        deadline_(deadline),
        arrival_(arrival),
        request_id_(std::move(request_id)) {}

  void Run(GenerateQueue& queue) {
    const absl::Time stop = deadline_ == absl::InfiniteFuture()
                                ? deadline_
                                : deadline_ - DeadlineMargin(deadline_ - arrival_);
    while (true) {
      std::optional<v1::GenerateResponse> next = queue.Next(stop);
      if (!next.has_value()) {
        if (queue.finished()) return End(queue.status());
        // The deadline: end the call here and stop the request upstream.
        const absl::Status late = absl::DeadlineExceededError(
            absl::StrFormat("request %s: deadline exceeded: the server's per-request limit "
                            "(--max-request-seconds) of %s passed; the request was stopped",
                            request_id_, absl::FormatDuration(deadline_ - arrival_)));
        queue.Finish(late);
        queue.Cancel();
        return End(late);
      }
      if (next->has_final()) {
        final_ = next->final();
        continue;
      }
      text_ += next->chunk().text();
      if (call_.stream && !Flush()) {
        spdlog::info("[{}] http client went away; cancelling", request_id_);
        queue.Cancel();
        return;
      }
    }
  }

 private:
  // Sends what text is held as one event (the first also names the assistant).
  bool Flush() {
    if (!started_) {
      if (!exchange_.StartStream(200, "text/event-stream")) return false;
      started_ = true;
      const bool chat = ids_.endpoint == OpenAiEndpoint::kChatCompletions;
      if (chat && !exchange_.Send(ChunkEvent(ids_, "", /*role=*/true, nullptr))) return false;
    }
    if (text_.empty()) return true;
    const bool sent = exchange_.Send(ChunkEvent(ids_, text_, false, nullptr));
    text_.clear();
    return sent;
  }

  void End(const absl::Status& status) {
    const bool ok = status.ok() && final_.has_value();
    const absl::Status error =
        ok ? absl::OkStatus()
           : (status.ok() ? absl::InternalError("the call ended without a final message") : status);
    if (!call_.stream) {
      if (!ok) return ReplyError(exchange_, error);
      exchange_.Reply(200, kJson, CompletionBody(ids_, text_, *final_));
      return;
    }
    if (!started_ && !ok) return ReplyError(exchange_, error);
    if (!Flush()) return;
    if (!ok) {
      exchange_.Send(ErrorEvent(error));
    } else {
      exchange_.Send(ChunkEvent(ids_, "", false, &*final_));
      if (call_.include_usage) exchange_.Send(UsageEvent(ids_, *final_));
    }
    exchange_.Send(kDoneEvent);
    exchange_.End();
  }

  HttpExchange& exchange_;
  const OpenAiCall& call_;
  const CompletionIds ids_;
  const absl::Time deadline_, arrival_;
  const std::string request_id_;
  std::string text_;  // not yet sent (stream) or the whole completion
  std::optional<v1::GenerateFinal> final_;
  bool started_ = false;
};

}  // namespace

std::string OpenAiFront::NextId(const char* prefix) {
  return absl::StrFormat("%s-%x-%d", prefix, absl::ToUnixMicros(absl::Now()),
                         next_id_.fetch_add(1));
}

bool OpenAiFront::Admit(HttpExchange& exchange) {
  if (!options_.authorize || (options_.exempt_health && exchange.path() == "/health")) return true;
  const absl::Status s = options_.authorize(exchange.header("authorization"));
  if (s.ok()) return true;
  spdlog::debug("http: refused a request to {} without a valid token",
                absl::CHexEscape(exchange.path()));
  exchange.AddHeader("WWW-Authenticate", "Bearer");
  ReplyError(exchange, s);
  return false;
}

void OpenAiFront::Handle(HttpExchange& exchange) {
  const absl::string_view path = exchange.path();
  const bool health = path == "/health";
  const bool get = exchange.method() == "GET";
  const bool post = exchange.method() == "POST";
  if (health) {
    if (!get) return ReplyWrongMethod(exchange, "GET");
    const v1::GetLoadResponse load = backend_->GetLoad();
    if (load.draining()) {
      return ReplyError(exchange, absl::UnavailableError("draining, not accepting new requests"));
    }
    return (void)exchange.Reply(200, kJson, R"({"status":"ok"})");
  }
  if (path == "/v1/models") {
    if (!get) return ReplyWrongMethod(exchange, "GET");
    absl::StatusOr<v1::ModelInfoResponse> info = backend_->ModelInfo();
    if (!info.ok()) return ReplyError(exchange, info.status());
    return (void)exchange.Reply(200, kJson, ModelsBody(*info, absl::ToUnixSeconds(absl::Now())));
  }
  const bool chat = path == "/v1/chat/completions";
  if (chat || path == "/v1/completions") {
    if (!post) return ReplyWrongMethod(exchange, "POST");
    return Generate(exchange, chat);
  }
  ReplyError(exchange, absl::NotFoundError(absl::StrCat(
                           "no route ", path,
                           " (served: /v1/completions, /v1/chat/completions, /v1/models, "
                           "/health)")));
}

void OpenAiFront::Generate(HttpExchange& exchange, bool chat) {
  const OpenAiEndpoint endpoint =
      chat ? OpenAiEndpoint::kChatCompletions : OpenAiEndpoint::kCompletions;
  absl::StatusOr<OpenAiCall> call = ParseOpenAiRequest(endpoint, exchange.body());
  if (!call.ok()) return ReplyError(exchange, call.status());
  absl::StatusOr<v1::ModelInfoResponse> info = backend_->ModelInfo();
  if (!info.ok()) return ReplyError(exchange, info.status());
  if (!call->model.empty() && call->model != info->model_name()) {
    return ReplyError(exchange, absl::NotFoundError(absl::StrCat("the model `", call->model,
                                                                 "` does not exist (served: `",
                                                                 info->model_name(), "`)")));
  }
  CompletionIds ids{endpoint, NextId(chat ? "chatcmpl" : "cmpl"), absl::ToUnixSeconds(absl::Now()),
                    info->model_name()};
  rpc::CallInfo info_call;
  const absl::string_view header_id = exchange.header("x-request-id");
  info_call.request_id = header_id.empty() ? ids.id : std::string(header_id);
  info_call.session_key = !call->request.session_key().empty()
                              ? call->request.session_key()
                              : std::string(exchange.header("x-session-key"));
  info_call.arrival = absl::Now();
  info_call.deadline = info_call.arrival + options_.max_request_duration;
  call->request.set_request_id(info_call.request_id);
  spdlog::info("[{}] HTTP {} {}{}", info_call.request_id, std::string(exchange.method()),
               std::string(exchange.path()), call->stream ? " (stream)" : "");
  auto queue = std::make_shared<GenerateQueue>();
  backend_->Generate(call->request, info_call, queue);
  Relay(exchange, *call, ids, info_call.deadline, info_call.arrival, info_call.request_id)
      .Run(*queue);
}

}  // namespace twinspan::http
