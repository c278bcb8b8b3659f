#include "services/engine/grpc/serving_service.h"

#include <deque>
#include <memory>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "services/engine/grpc/status_mapping.h"
#include "spdlog/spdlog.h"

namespace twinspan::rpc {
namespace {

std::string Metadata(const grpc::CallbackServerContext& context, const char* key) {
  const auto& md = context.client_metadata();
  auto it = md.find(key);
  return it == md.end() ? std::string() : std::string(it->second.data(), it->second.size());
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
    void OnCancel() override { call_->cancelled_.store(true); }
    void OnDone() override {
      call_->Detach();
      delete this;
    }

   private:
    std::shared_ptr<GenerateCall> call_;
  };

  void Attach(Reactor* reactor) { reactor_ = reactor; }

  void Write(v1::GenerateResponse response) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finishing_ || reactor_ == nullptr || failed_) return;
      streamed_ = true;
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

  bool Cancelled() const override { return cancelled_.load(); }
  bool Streamed() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return streamed_;
  }

 private:
  void WriteDone(bool ok) {
    bool finish = false;
    bool next = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!ok) {
        failed_ = true;
        cancelled_.store(true);
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
    if (next) {
      reactor_->StartWrite(&current_);
    } else if (finish) {
      reactor_->Finish(final_status_);
    }
  }

  void Detach() {
    std::lock_guard<std::mutex> lock(mu_);
    reactor_ = nullptr;
    cancelled_.store(true);
  }

  mutable std::mutex mu_;
  Reactor* reactor_ = nullptr;
  std::deque<v1::GenerateResponse> queue_;
  v1::GenerateResponse current_;
  bool writing_ = false;
  bool finishing_ = false;
  bool failed_ = false;
  bool streamed_ = false;
  grpc::Status final_status_;
  std::atomic<bool> cancelled_{false};
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

std::string RequestIdOf(const grpc::CallbackServerContext& context, const std::string& field,
                        uint64_t counter) {
  if (!field.empty()) return field;
  std::string from_metadata = Metadata(context, "x-request-id");
  if (!from_metadata.empty()) return from_metadata;
  return absl::StrFormat("req-%x-%d", absl::ToUnixMicros(absl::Now()), counter);
}

grpc::ServerWriteReactor<v1::GenerateResponse>* ServingService::Generate(
    grpc::CallbackServerContext* context, const v1::GenerateRequest* request) {
  auto call = std::make_shared<GenerateCall>();
  auto* reactor = new GenerateCall::Reactor(call);
  call->Attach(reactor);
  CallInfo info;
  info.request_id = RequestIdOf(*context, request->request_id(), next_id_.fetch_add(1));
  info.session_key =
      request->session_key().empty() ? Metadata(*context, "x-session-key") : request->session_key();
  info.deadline = absl::FromChrono(context->deadline());
  spdlog::info("[{}] Generate from {}", info.request_id, context->peer());
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
