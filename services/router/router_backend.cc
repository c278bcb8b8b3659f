#include "services/router/router_backend.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/metrics/serving_metrics.h"
#include "grpcpp/grpcpp.h"
#include "services/rpc/status_mapping.h"
#include "spdlog/spdlog.h"

namespace twinspan::router {
namespace {

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// SplitMix64's finalizer: FNV-1a alone leaves the high bits of similar keys ("session-1",
// "session-2", ...) correlated, which skews the weights.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double UnitFromHash(uint64_t h) { return static_cast<double>(h >> 11) / double(1ULL << 53); }

}  // namespace

int PickPool(const std::vector<double>& weights, const std::string& session_key, double uniform) {
  double total = 0;
  for (double w : weights) total += w;
  const double u = (session_key.empty() ? uniform : UnitFromHash(Mix(Fnv1a(session_key)))) * total;
  double acc = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    acc += weights[i];
    if (u < acc) return static_cast<int>(i);
  }
  return static_cast<int>(weights.size()) - 1;
}

struct RouterBackend::Worker {
  std::string address;
  std::string variant;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Serving::Stub> stub;
  std::atomic<bool> healthy{false};
  std::atomic<bool> checked{false};
  std::atomic<int> remote_load{0};  // running + waiting from the last GetLoad
  std::atomic<int> inflight{0};     // calls this router has open on it
};

struct RouterBackend::Pool {
  PoolConfig config;
  std::vector<std::shared_ptr<Worker>> workers;
};

// What one forwarded Generate keeps across attempts.
struct RouterBackend::ForwardState {
  const RouterBackend::Pool* pool;
  v1::GenerateRequest request;
  rpc::CallInfo call;
  std::shared_ptr<rpc::GenerateWriter> writer;
  std::vector<RouterBackend::Worker*> tried;

  // The attempt in flight; shared so a cancel racing with the attempt's end never sees it freed.
  absl::Mutex mu;
  std::shared_ptr<grpc::ClientContext> upstream ABSL_GUARDED_BY(mu);
  bool cancelled ABSL_GUARDED_BY(mu) = false;

  // The client went away or its deadline passed: cancel the worker's call, start no retry.
  void CancelUpstream() {
    std::shared_ptr<grpc::ClientContext> context;
    {
      absl::MutexLock lock(&mu);
      cancelled = true;
      context = upstream;
    }
    if (context != nullptr) context->TryCancel();
  }
};

// One attempt on one worker; deletes itself when done, after starting the retry if there is one.
class RouterBackend::ForwardCall : public grpc::ClientReadReactor<v1::GenerateResponse> {
 public:
  ForwardCall(RouterBackend* router, std::shared_ptr<ForwardState> state,
              std::shared_ptr<Worker> worker)
      : router_(router), state_(std::move(state)), worker_(std::move(worker)) {}

  void Start() {
    state_->tried.push_back(worker_.get());
    worker_->inflight.fetch_add(1);
    // The client's deadline travels on: the worker sees the same absolute deadline.
    if (state_->call.deadline != absl::InfiniteFuture()) {
      context_->set_deadline(absl::ToChronoTime(state_->call.deadline));
    }
    context_->AddMetadata("x-request-id", state_->call.request_id);
    spdlog::info("[{}] -> {} ({})", state_->call.request_id, worker_->address,
                 state_->pool->config.variant);
    bool cancelled = false;
    {
      absl::MutexLock lock(&state_->mu);
      state_->upstream = context_;
      cancelled = state_->cancelled;
    }
    worker_->stub->async()->Generate(context_.get(), &state_->request, this);
    StartRead(&response_);
    StartCall();
    if (cancelled) context_->TryCancel();  // the client left while the retry was being set up
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone reports the status
    if (state_->writer->Cancelled()) {
      context_->TryCancel();
      return;
    }
    if (response_.has_final()) {
      response_.mutable_final()->set_head_variant(state_->pool->config.variant);
      response_.mutable_final()->set_served_by(worker_->address);
    }
    state_->writer->Write(std::move(response_));
    response_.Clear();
    StartRead(&response_);
  }

  void OnDone(const grpc::Status& status) override {
    worker_->inflight.fetch_sub(1);
    const std::string& id = state_->call.request_id;
    bool cancelled = false;
    {
      absl::MutexLock lock(&state_->mu);
      state_->upstream.reset();
      cancelled = state_->cancelled;
    }
    // Retried only while nothing reached the client and it is still there within its deadline.
    const bool retryable = status.error_code() == grpc::StatusCode::UNAVAILABLE &&
                           !state_->writer->Streamed() && !state_->writer->Cancelled() &&
                           !cancelled && absl::Now() < state_->call.deadline &&
                           static_cast<int>(state_->tried.size()) <= router_->config_.max_retries;
    if (retryable) {
      worker_->healthy.store(false);  // until the health loop sees it again
      if (std::shared_ptr<Worker> next = router_->PickWorker(*state_->pool, state_->tried)) {
        spdlog::warn("[{}] {} unavailable before streaming ({}); retrying on {}", id,
                     worker_->address, status.error_message(), next->address);
        if (router_->metrics_ != nullptr) {
          router_->metrics_->RecordRetry(state_->pool->config.variant, worker_->address);
        }
        {
          absl::MutexLock lock(&router_->mu_);
          router_->inflight_[id] = next;
        }
        (new ForwardCall(router_, state_, std::move(next)))->Start();
        delete this;
        return;
      }
    }
    {
      absl::MutexLock lock(&router_->mu_);
      router_->inflight_.erase(id);
      router_->open_.erase(id);
    }
    if (!status.ok()) {
      spdlog::info("[{}] <- {}: {} {}", id, worker_->address,
                   absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())),
                   status.error_message());
    }
    absl::Status result = rpc::FromGrpcStatus(status);
    if (absl::IsUnavailable(result) && state_->writer->Streamed()) {
      // The worker's transport error ("Socket closed") says nothing about which worker or why.
      result = absl::UnavailableError(
          absl::StrCat("worker ", worker_->address, " (", state_->pool->config.variant,
                       ") failed after part of the reply was streamed, so it was not retried: ",
                       status.error_message()));
    }
    state_->writer->Finish(result);
    delete this;
  }

 private:
  RouterBackend* router_;
  std::shared_ptr<ForwardState> state_;
  std::shared_ptr<Worker> worker_;
  std::shared_ptr<grpc::ClientContext> context_ = std::make_shared<grpc::ClientContext>();
  v1::GenerateResponse response_;
};

RouterBackend::RouterBackend(const RouterConfig& config, metrics::ServingMetrics* metrics,
                             const WorkerChannels& channels,
                             const security::ChannelSecurity& worker_security)
    : config_(config), metrics_(metrics) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(config.max_message_bytes);
  args.SetMaxSendMessageSize(config.max_message_bytes);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  worker_security.ApplyTo(&args);
  for (const PoolConfig& pc : config.pools) {
    auto pool = std::make_unique<Pool>();
    pool->config = pc;
    for (const std::string& address : pc.workers) {
      auto w = std::make_shared<Worker>();
      w->address = address;
      w->variant = pc.variant;
      auto given = channels.find(address);
      w->channel =
          given != channels.end()
              ? given->second
              : grpc::CreateCustomChannel(address, worker_security.CredentialsOrInsecure(), args);
      w->stub = v1::Serving::NewStub(w->channel);
      pool->workers.push_back(std::move(w));
    }
    pools_.push_back(std::move(pool));
  }
  health_ = std::thread([this] { HealthLoop(); });
}

RouterBackend::~RouterBackend() { Stop(); }

void RouterBackend::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (health_.joinable()) health_.join();
}

void RouterBackend::HealthLoop() {
  while (true) {
    for (auto& pool : pools_) {
      for (auto& w : pool->workers) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
        v1::GetLoadRequest request;
        v1::GetLoadResponse load;
        const grpc::Status status = w->stub->GetLoad(&context, request, &load);
        const bool healthy = status.ok() && !load.draining();
        if (healthy != w->healthy.load() || !w->checked.load()) {
          spdlog::info("worker {} ({}) is {}{}", w->address, w->variant,
                       healthy ? "healthy" : "unhealthy",
                       status.ok() ? "" : absl::StrCat(": ", status.error_message()));
        }
        w->healthy.store(healthy);
        w->checked.store(true);
        w->remote_load.store(static_cast<int>(load.running() + load.waiting()));
        if (metrics_ != nullptr) metrics_->SetWorkerHealthy(w->address, healthy);
      }
    }
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), config_.health_interval)) return;
  }
}

bool RouterBackend::WaitAllHealthy(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    bool all = true;
    for (auto& pool : pools_) {
      for (auto& w : pool->workers) all = all && w->healthy.load();
    }
    if (all) return true;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return false;
}

void RouterBackend::Drain() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
}

bool RouterBackend::WaitIdle(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(
                                  +[](std::map<std::string, std::shared_ptr<Worker>>* inflight) {
                                    return inflight->empty();
                                  },
                                  &inflight_),
                              timeout);
}

std::shared_ptr<RouterBackend::Worker> RouterBackend::PickWorker(
    const Pool& pool, const std::vector<Worker*>& tried) const {
  std::shared_ptr<Worker> best;
  int best_load = 0;
  for (const auto& w : pool.workers) {
    if (!w->healthy.load()) continue;
    if (std::find(tried.begin(), tried.end(), w.get()) != tried.end()) continue;
    const int load = w->remote_load.load() + w->inflight.load();
    if (best == nullptr || load < best_load) {
      best = w;
      best_load = load;
    }
  }
  return best;
}

std::shared_ptr<RouterBackend::Worker> RouterBackend::AnyHealthyWorker() const {
  for (const auto& pool : pools_) {
    if (auto w = PickWorker(*pool, {})) return w;
  }
  return nullptr;
}

void RouterBackend::Generate(const v1::GenerateRequest& request, const rpc::CallInfo& call,
                             std::shared_ptr<rpc::GenerateWriter> writer) {
  {
    absl::MutexLock lock(&mu_);
    if (draining_) {
      writer->Finish(absl::UnavailableError("router: draining, not accepting new requests"));
      return;
    }
  }
  int index = -1;
  if (!request.head_variant().empty()) {
    for (size_t i = 0; i < pools_.size(); ++i) {
      if (pools_[i]->config.variant == request.head_variant()) index = static_cast<int>(i);
    }
    if (index < 0) {
      writer->Finish(absl::NotFoundError(
          absl::StrCat("router: no pool serves head variant \"", request.head_variant(), "\"")));
      return;
    }
  } else {
    std::vector<double> weights;
    for (const auto& p : pools_) weights.push_back(p->config.weight);
    const uint64_t r = random_state_.fetch_add(0x9e3779b97f4a7c15ULL);
    index = PickPool(weights, call.session_key, UnitFromHash(r * 0xbf58476d1ce4e5b9ULL));
  }
  const Pool& pool = *pools_[index];
  std::shared_ptr<Worker> worker = PickWorker(pool, {});
  if (worker == nullptr) {
    writer->Finish(absl::UnavailableError(
        absl::StrCat("router: no healthy worker in pool \"", pool.config.variant, "\"")));
    return;
  }
  if (metrics_ != nullptr) metrics_->RecordRouted(pool.config.variant, worker->address);
  spdlog::info("[{}] session \"{}\" -> variant {}", call.request_id,
               absl::CHexEscape(call.session_key.substr(0, 128)), pool.config.variant);
  auto state = std::make_shared<ForwardState>();
  state->pool = &pool;
  state->request = request;
  state->request.set_request_id(call.request_id);
  state->call = call;
  state->writer = std::move(writer);
  {
    absl::MutexLock lock(&mu_);
    inflight_[call.request_id] = worker;
    open_[call.request_id] = state;
  }
  state->writer->OnCancel([state] { state->CancelUpstream(); });
  (new ForwardCall(this, std::move(state), std::move(worker)))->Start();
}

void RouterBackend::StopAll(const absl::Status& status) {
  std::vector<std::shared_ptr<ForwardState>> open;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, weak] : open_) {
      if (std::shared_ptr<ForwardState> state = weak.lock()) open.push_back(std::move(state));
    }
  }
  for (const auto& state : open) {
    state->writer->Finish(status);  // first: the worker call's end then finds the call finished
    state->CancelUpstream();
  }
}

absl::StatusOr<v1::TokenizeResponse> RouterBackend::Tokenize(const v1::TokenizeRequest& request) {
  std::shared_ptr<Worker> w = AnyHealthyWorker();
  if (w == nullptr) return absl::UnavailableError("router: no healthy worker");
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::TokenizeResponse response;
  grpc::Status status = w->stub->Tokenize(&context, request, &response);
  if (!status.ok()) return rpc::FromGrpcStatus(status);
  return response;
}

absl::StatusOr<v1::ModelInfoResponse> RouterBackend::ModelInfo() {
  std::shared_ptr<Worker> w = AnyHealthyWorker();
  if (w == nullptr) return absl::UnavailableError("router: no healthy worker");
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ModelInfoRequest request;
  v1::ModelInfoResponse response;
  grpc::Status status = w->stub->ModelInfo(&context, request, &response);
  if (!status.ok()) return rpc::FromGrpcStatus(status);
  response.clear_head_variants();
  for (const auto& p : pools_) response.add_head_variants(p->config.variant);
  return response;
}

bool RouterBackend::Abort(const std::string& request_id) {
  std::shared_ptr<Worker> w;
  {
    absl::MutexLock lock(&mu_);
    auto it = inflight_.find(request_id);
    if (it == inflight_.end()) return false;
    w = it->second;
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::AbortRequest request;
  request.set_request_id(request_id);
  v1::AbortResponse response;
  return w->stub->Abort(&context, request, &response).ok() && response.found();
}

v1::GetLoadResponse RouterBackend::GetLoad() {
  v1::GetLoadResponse total;
  {
    absl::MutexLock lock(&mu_);
    total.set_draining(draining_);
  }
  for (const auto& pool : pools_) {
    for (const auto& w : pool->workers) {
      if (!w->healthy.load()) continue;
      total.set_running(total.running() + w->inflight.load());
      total.set_max_parallel(total.max_parallel() + 1);
    }
  }
  return total;
}

}  // namespace twinspan::router
