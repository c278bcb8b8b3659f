#include "services/rpc/serving_service.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "grpcpp/alarm.h"
#include "services/rpc/cancel_hook.h"
#include "services/rpc/status_mapping.h"
#include "spdlog/spdlog.h"

namespace twinspan::rpc {
namespace {

std::string Metadata(const grpc::CallbackServerContext& context, const char* key) {
  const auto& md = context.client_metadata();
  auto it = md.find(key);
  return it == md.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

std::string NewRequestId(uint64_t counter) {
  return absl::StrFormat("req-%x-%d", absl::ToUnixMicros(absl::Now()), counter);
}

// gRPC reports "no deadline" as the largest time point, which absl reads as a finite time.
absl::Time DeadlineOf(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

// How long before the call's deadline the server ends it itself: the client's own timer would
// otherwise win the race and report a bare "Deadline Exceeded" that names nothing.
absl::Duration DeadlineMargin(absl::Duration budget) {
  return std::clamp(budget / 5, absl::Milliseconds(2), absl::Milliseconds(250));
}

// One Generate call: the write queue between the backend (any thread) and gRPC. gRPC methods are
// called outside the lock because a reaction may run inline.
class GenerateCall final : public GenerateWriter,
                           public std::enable_shared_from_this<GenerateCall> {
 public:
  class Reactor final : public grpc::ServerWriteReactor<v1::GenerateResponse> {
   public:
    explicit Reactor(std::shared_ptr<GenerateCall> call) : call_(std::move(call)) {}
    void OnWriteDone(bool ok) override { call_->WriteDone(ok); }
    void OnCancel() override {
      spdlog::info("[{}] call cancelled (the client went away or its deadline passed)",
                   call_->info_.request_id);
      call_->Cancel();
    }
    void OnDone() override {
      call_->Detach();
      delete this;
    }

   private:
    std::shared_ptr<GenerateCall> call_;
  };

  // `limited`: the deadline is the server's per-request limit, not the client's.
  GenerateCall(CallInfo info, bool limited) : info_(std::move(info)), limited_(limited) {}

  void Attach(Reactor* reactor) { reactor_ = reactor; }

  // Ends the call with DEADLINE_EXCEEDED shortly before its deadline (none when it has none).
  void ArmDeadline() {
    if (info_.deadline == absl::InfiniteFuture()) return;
    const absl::Time fire = info_.deadline - DeadlineMargin(info_.deadline - info_.arrival);
    std::weak_ptr<GenerateCall> weak = weak_from_this();
    std::lock_guard<std::mutex> lock(mu_);
    alarm_ = std::make_unique<grpc::Alarm>();
    alarm_->Set(absl::ToChronoTime(fire), [weak](bool fired) {
      if (!fired) return;  // cancelled: the call ended first
      if (std::shared_ptr<GenerateCall> call = weak.lock()) call->DeadlinePassed();
    });
  }

  void Write(v1::GenerateResponse response) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finishing_ || reactor_ == nullptr || failed_) return;
      streamed_ = true;
      ++written_;
      queue_.push_back(std::move(response));
      if (writing_) return;
      writing_ = true;
      current_ = std::move(queue_.front());
      queue_.pop_front();
    }
    reactor_->StartWrite(&current_);
  }

  void Finish(const absl::Status& status) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finishing_ || reactor_ == nullptr) return;
      finishing_ = true;
      final_status_ = ToGrpcStatus(status);
      if (writing_) return;  // WriteDone finishes after the queue drains
    }
    reactor_->Finish(final_status_);
  }

  bool Cancelled() const override { return cancel_.cancelled(); }
  bool Streamed() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return streamed_;
  }

  void OnCancel(std::function<void()> hook) override { cancel_.Set(std::move(hook)); }

 private:
  void Cancel() { cancel_.Cancel(); }

  void DeadlinePassed() {
    int written = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finishing_ || reactor_ == nullptr) return;
      written = written_;
    }
    const std::string message = absl::StrFormat(
        "request %s: deadline exceeded: %s of %s passed after %d streamed messages; the request "
        "was stopped",
        info_.request_id,
        limited_ ? "the server's per-request limit (--max-request-seconds)"
                 : "the call's deadline (set by the client)",
        absl::FormatDuration(info_.deadline - info_.arrival), written);
    spdlog::info("[{}] {}", info_.request_id, message);
    Finish(absl::DeadlineExceededError(message));
    Cancel();
  }

  void WriteDone(bool ok) {
    bool finish = false;
    bool next = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!ok) {
        failed_ = true;
        queue_.clear();
      }
      if (!queue_.empty()) {
        current_ = std::move(queue_.front());
        queue_.pop_front();
        next = true;
      } else {
        writing_ = false;
        finish = finishing_;
      }
    }
    if (!ok) Cancel();
    if (next) {
      reactor_->StartWrite(&current_);
    } else if (finish) {
      reactor_->Finish(final_status_);
    }
  }

  void Detach() {
    std::unique_ptr<grpc::Alarm> alarm;
    {
      std::lock_guard<std::mutex> lock(mu_);
      reactor_ = nullptr;
      alarm.swap(alarm_);
    }
    Cancel();
    if (alarm != nullptr) alarm->Cancel();
  }

  const CallInfo info_;
  const bool limited_;
  mutable std::mutex mu_;
  Reactor* reactor_ = nullptr;
  std::deque<v1::GenerateResponse> queue_;
  v1::GenerateResponse current_;
  bool writing_ = false;
  bool finishing_ = false;
  bool failed_ = false;
  bool streamed_ = false;
  int written_ = 0;
  grpc::Status final_status_;
  CancelHook cancel_;
  std::unique_ptr<grpc::Alarm> alarm_;
};

template <typename Response>
grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* context,
                                      absl::StatusOr<Response> result, Response* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (result.ok()) {
    *response = *std::move(result);
    reactor->Finish(grpc::Status::OK);
  } else {
    reactor->Finish(ToGrpcStatus(result.status()));
  }
  return reactor;
}

}  // namespace

bool IsPrintableRequestId(const std::string& id) {
  if (id.empty() || id.size() > 256) return false;
  for (char c : id) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

std::string RequestIdOf(const grpc::CallbackServerContext& context, const std::string& field,
                        uint64_t counter) {
  if (!field.empty()) return field;
  std::string from_metadata = Metadata(context, "x-request-id");
  if (!from_metadata.empty()) return from_metadata;
  return NewRequestId(counter);
}

grpc::ServerWriteReactor<v1::GenerateResponse>* ServingService::Generate(
    grpc::CallbackServerContext* context, const v1::GenerateRequest* request) {
  CallInfo info;
  const uint64_t counter = next_id_.fetch_add(1);
  info.request_id = RequestIdOf(*context, request->request_id(), counter);
  // Ids go into every log line and the metadata to the next hop: no control characters.
  const bool printable_id = IsPrintableRequestId(info.request_id);
  if (!printable_id) info.request_id = NewRequestId(counter) + "-bad-id";
  info.session_key =
      request->session_key().empty() ? Metadata(*context, "x-session-key") : request->session_key();
  info.deadline = DeadlineOf(*context);
  info.arrival = absl::Now();
  const absl::Time limit = info.arrival + options_.max_request_duration;
  const bool limited = limit < info.deadline;
  if (limited) info.deadline = limit;
  auto call = std::make_shared<GenerateCall>(info, limited);
  auto* reactor = new GenerateCall::Reactor(call);
  call->Attach(reactor);
  call->ArmDeadline();
  spdlog::info(
      "[{}] Generate from {}{}", info.request_id, context->peer(),
      info.deadline == absl::InfiniteFuture()
          ? std::string()
          : absl::StrCat(", deadline in ", absl::FormatDuration(info.deadline - info.arrival)));
  if (!printable_id) {
    call->Finish(absl::InvalidArgumentError(
        "request_id (or x-request-id) must be 1 to 256 printable ASCII characters without "
        "spaces"));
    return reactor;
  }
  backend_->Generate(*request, info, call);
  return reactor;
}

grpc::ServerUnaryReactor* ServingService::Tokenize(grpc::CallbackServerContext* context,
                                                   const v1::TokenizeRequest* request,
                                                   v1::TokenizeResponse* response) {
  return FinishUnary(context, backend_->Tokenize(*request), response);
}

grpc::ServerUnaryReactor* ServingService::ModelInfo(grpc::CallbackServerContext* context,
                                                    const v1::ModelInfoRequest*,
                                                    v1::ModelInfoResponse* response) {
  return FinishUnary(context, backend_->ModelInfo(), response);
}

grpc::ServerUnaryReactor* ServingService::Abort(grpc::CallbackServerContext* context,
                                                const v1::AbortRequest* request,
                                                v1::AbortResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (request->request_id().empty()) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Abort: request_id is empty"));
    return reactor;
  }
  response->set_found(backend_->Abort(request->request_id()));
  spdlog::info("[{}] Abort: {}", request->request_id(), response->found() ? "found" : "unknown");
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* ServingService::GetLoad(grpc::CallbackServerContext* context,
                                                  const v1::GetLoadRequest*,
                                                  v1::GetLoadResponse* response) {
  *response = backend_->GetLoad();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace twinspan::rpc
