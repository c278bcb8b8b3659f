// twinspan.v1.Drafter on gRPC's callback API: each Draft stream is one target connection; its
// streams get their own DraftSession. Work runs on one thread per connection, not on gRPC's.
#ifndef TWINSPAN_SERVICES_DRAFTER_SERVER_DRAFTER_SERVICE_H_
#define TWINSPAN_SERVICES_DRAFTER_SERVER_DRAFTER_SERVICE_H_

#include <atomic>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "services/draft_link/draft_model.h"
#include "twinspan/v1/drafter.grpc.pb.h"

namespace twinspan::metrics {
class ServingMetrics;
}

namespace twinspan::rpc {

class DraftConnection;

struct DrafterServiceOptions {
  int max_streams_per_connection = 256;  // Open beyond it: a StreamError (ResourceExhausted)
};

// Thread-safe. `model` and `metrics` (may be null) are not owned and must outlive the server.
class DrafterService final : public v1::Drafter::CallbackService {
 public:
  DrafterService(const engine::DraftModel* model, const DrafterServiceOptions& options,
                 metrics::ServingMetrics* metrics)
      : model_(model), options_(options), metrics_(metrics) {}

  grpc::ServerBidiReactor<v1::DraftRequest, v1::DraftReply>* Draft(
      grpc::CallbackServerContext* context) override;

  // Streams open over all connections.
  int open_streams() const { return open_streams_.load(); }

  // Ends every connection (after the requests it has read) and each one that comes later, so a
  // server shutting down need not wait out streams that targets keep open while idle; the
  // targets go on without drafts.
  void StopAll();

 private:
  friend class DraftConnection;
  // False once StopAll ran: the connection must stop at once.
  bool Register(DraftConnection* c);
  void Unregister(DraftConnection* c);

  const engine::DraftModel* model_;
  DrafterServiceOptions options_;
  metrics::ServingMetrics* metrics_;
  std::atomic<int> open_streams_{0};
  absl::Mutex mu_;
  std::set<DraftConnection*> connections_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace twinspan::rpc

#endif  // TWINSPAN_SERVICES_DRAFTER_SERVER_DRAFTER_SERVICE_H_
