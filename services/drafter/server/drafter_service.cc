#include "services/drafter/server/drafter_service.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "services/drafter/server/draft_request_handler.h"
#include "services/rpc/status_mapping.h"
#include "services/rpc/write_queue.h"
#include "spdlog/spdlog.h"

namespace twinspan::rpc {

// One target connection. Reads on gRPC threads, works on its own thread through a
// DraftRequestHandler, writes through a queue.
class DraftConnection final : public grpc::ServerBidiReactor<v1::DraftRequest, v1::DraftReply> {
 public:
  DraftConnection(DrafterService* service, std::string peer)
      : service_(service),
        peer_(std::move(peer)),
        handler_(service->model_,
                 {.max_streams = service->options_.max_streams_per_connection, .peer = peer_},
                 service->metrics_, &service->open_streams_,
                 [this](v1::DraftReply reply) { writes_.Push(std::move(reply)); }),
        writes_([this](const v1::DraftReply* reply) { StartWrite(reply); },
                [this] { Finish(final_status_); }) {
    worker_ = std::thread([this] { Work(); });
    StartRead(&incoming_);
    if (!service_->Register(this)) Stop();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the target closed its side or went away
      Stop();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      inbox_.push_back(std::move(incoming_));
    }
    cv_.notify_one();
    incoming_.Clear();
    StartRead(&incoming_);
  }
  void OnWriteDone(bool ok) override { writes_.OnWriteDone(ok); }
  void OnCancel() override { Stop(); }
  void OnDone() override {
    service_->Unregister(this);
    Stop();
    if (worker_.joinable()) worker_.join();
    delete this;
  }

  // Ends the stream once the requests already read are handled.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
  }

 private:
  void Work() {
    while (true) {
      v1::DraftRequest request;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !inbox_.empty(); });
        if (inbox_.empty()) break;  // stopping with nothing left
        request = std::move(inbox_.front());
        inbox_.pop_front();
      }
      absl::Status status = handler_.Handle(request);
      if (!status.ok()) {  // a connection-level error ends the stream with it
        spdlog::error("drafter: connection from {} refused: {}", peer_, status.ToString());
        final_status_ = ToGrpcStatus(status);
        break;
      }
    }
    handler_.CloseAll();
    writes_.Close();
  }

  DrafterService* service_;
  std::string peer_;
  v1::DraftRequest incoming_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::DraftRequest> inbox_;
  bool stopping_ = false;
  DraftRequestHandler handler_;  // worker thread only
  grpc::Status final_status_;
  WriteQueue<v1::DraftReply> writes_;
  std::thread worker_;
};

bool DrafterService::Register(DraftConnection* c) {
  absl::MutexLock lock(&mu_);
  connections_.insert(c);
  return !stopped_;
}

void DrafterService::Unregister(DraftConnection* c) {
  absl::MutexLock lock(&mu_);
  connections_.erase(c);
}

void DrafterService::StopAll() {
  absl::MutexLock lock(&mu_);
  stopped_ = true;
  for (DraftConnection* c : connections_) c->Stop();
}

grpc::ServerBidiReactor<v1::DraftRequest, v1::DraftReply>* DrafterService::Draft(
    grpc::CallbackServerContext* context) {
  return new DraftConnection(this, context->peer());
}

}  // namespace twinspan::rpc
