// The router's public API: picks a pool (head variant) by weight, sticky per session key, picks the
// least-loaded healthy worker in it, and forwards the Generate stream. A call that fails before
// anything was streamed is retried on another worker; after that its error goes to the client.
#ifndef TWINSPAN_SERVICES_ROUTER_ROUTER_BACKEND_H_
#define TWINSPAN_SERVICES_ROUTER_ROUTER_BACKEND_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "services/router/router_config.h"
#include "services/rpc/serving_backend.h"
#include "services/security/channel_security.h"
#include "twinspan/v1/serving.grpc.pb.h"

namespace twinspan::metrics {
class ServingMetrics;
}

namespace twinspan::router {

// Index of the pool for a session: the same key always gives the same pool for the same weights;
// `uniform` in [0, 1) is used instead of the key's hash when the key is empty.
int PickPool(const std::vector<double>& weights, const std::string& session_key, double uniform);

// Channels to use instead of dialling a worker address (the single-process mode's in-process
// target), by the address the config names.
using WorkerChannels = std::map<std::string, std::shared_ptr<grpc::Channel>>;

// Thread-safe. `metrics` may be null and must outlive the backend.
class RouterBackend : public rpc::ServingBackend {
 public:
  // Workers not in `channels` are dialled with `worker_security` (plaintext by default).
  RouterBackend(const RouterConfig& config, metrics::ServingMetrics* metrics,
                const WorkerChannels& channels = {},
                const security::ChannelSecurity& worker_security = {});
  ~RouterBackend() override;

  void Generate(const v1::GenerateRequest& request, const rpc::CallInfo& call,
                std::shared_ptr<rpc::GenerateWriter> writer) override;
  absl::StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request) override;
  absl::StatusOr<v1::ModelInfoResponse> ModelInfo() override;
  bool Abort(const std::string& request_id) override;
  v1::GetLoadResponse GetLoad() override;

  // Blocks until every worker passed a health check or `timeout` passed; false on timeout.
  bool WaitAllHealthy(absl::Duration timeout);
  // From now on new calls are refused (UNAVAILABLE, naming the drain) and GetLoad says draining.
  void Drain();
  // Blocks until no forwarded call is open or `timeout` passed; false on timeout.
  bool WaitIdle(absl::Duration timeout);
  // Ends every open forwarded call with `status` and cancels its worker call (a drain whose grace
  // period ran out), so each client learns why instead of seeing its call cut.
  void StopAll(const absl::Status& status);
  // Stops the health thread (before the server goes away).
  void Stop();

  struct Worker;
  struct Pool;
  struct ForwardState;
  class ForwardCall;

 private:
  void HealthLoop();
  // The healthy worker of `pool` with the least load, skipping `tried`; null when none.
  std::shared_ptr<Worker> PickWorker(const Pool& pool, const std::vector<Worker*>& tried) const;
  std::shared_ptr<Worker> AnyHealthyWorker() const;

  RouterConfig config_;
  metrics::ServingMetrics* metrics_;
  std::vector<std::unique_ptr<Pool>> pools_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Worker>> inflight_ ABSL_GUARDED_BY(mu_);  // request id
  std::map<std::string, std::weak_ptr<ForwardState>> open_ ABSL_GUARDED_BY(mu_);  // for StopAll
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> random_state_{0x853c49e6748fea9bULL};
  std::thread health_;
};

}  // namespace twinspan::router

#endif  // TWINSPAN_SERVICES_ROUTER_ROUTER_BACKEND_H_
