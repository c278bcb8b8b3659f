// The drafter's side of one target connection without its transport: checks each DraftRequest
// (Hello first and once, stream ids, rounds, tap rows in the negotiated form) and answers with
// HelloAck, Proposal or StreamError replies. DraftConnection (drafter_service.cc) feeds it from
// gRPC; the drafter link's fuzz target feeds it any bytes.
#ifndef TWINSPAN_SERVICES_DRAFTER_SERVER_DRAFT_REQUEST_HANDLER_H_
#define TWINSPAN_SERVICES_DRAFTER_SERVER_DRAFT_REQUEST_HANDLER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "services/draft_link/draft_model.h"
#include "twinspan/v1/drafter.pb.h"

namespace twinspan::metrics {
class ServingMetrics;
}

namespace twinspan::rpc {

struct DraftRequestHandlerOptions {
  int max_streams = 256;  // Open beyond it: a StreamError (ResourceExhausted)
  std::string peer;       // for the logs
};

// Not thread-safe: one connection's requests are handled in order on one thread.
class DraftRequestHandler {
 public:
  using ReplyFn = std::function<void(v1::DraftReply)>;

  // `model`, `metrics` (may be null) and `open_streams` (the count over all connections; may be
  // null) are not owned and must outlive the handler.
  DraftRequestHandler(const engine::DraftModel* model, const DraftRequestHandlerOptions& options,
                      metrics::ServingMetrics* metrics, std::atomic<int>* open_streams,
                      ReplyFn reply)
      : model_(model),
        options_(options),
        metrics_(metrics),
        open_streams_(open_streams),
        reply_(std::move(reply)) {}
  ~DraftRequestHandler() { CloseAll(); }
  DraftRequestHandler(const DraftRequestHandler&) = delete;
  DraftRequestHandler& operator=(const DraftRequestHandler&) = delete;

  // Handles one request. A problem of one stream (unknown stream, stale round, bad tap rows, a
  // session error) is answered with a StreamError and returns OK; a problem of the connection
  // (no Hello first, a second Hello, a handshake mismatch, an empty request) returns the Status
  // that should end it: FailedPrecondition or InvalidArgument, naming the field.
  absl::Status Handle(const v1::DraftRequest& request);

  // Closes every open stream (the connection ended).
  void CloseAll();

  int open_streams() const { return static_cast<int>(sessions_.size()); }

 private:
  struct Stream {
    std::unique_ptr<engine::DraftSession> session;
    uint32_t committed_round = 0;
    std::string request_id;  // for the logs: the same id the router and target log
  };

  absl::Status Hello(const v1::Hello& hello);
  void Open(const v1::Open& open);
  void Commit(const v1::Commit& commit);
  void Close(uint64_t stream_id);
  // A message's tap rows in the negotiated form and dtype, as floats.
  absl::StatusOr<engine::TapRows> Taps(v1::TapForm form, const v1::Tensor& tensor, size_t ids);
  void Propose(uint64_t stream_id, uint32_t round, engine::DraftProposal ids, absl::Time start);
  void Error(uint64_t stream_id, uint32_t round, const absl::Status& status,
             const std::string& request_id = "");
  void AddOpen(int delta);

  const engine::DraftModel* model_;
  const DraftRequestHandlerOptions options_;
  metrics::ServingMetrics* metrics_;
  std::atomic<int>* open_streams_;
  ReplyFn reply_;
  bool greeted_ = false;
  v1::TapForm form_ = v1::TAP_FORM_RAW;
  v1::DType dtype_ = v1::DTYPE_F32;
  int64_t max_tree_nodes_ = 0;  // Drafts a tree sent on this link may hold (the Hello's, capped).
  std::map<uint64_t, Stream> sessions_;
  std::vector<float> taps_;
};

}  // namespace twinspan::rpc

#endif  // TWINSPAN_SERVICES_DRAFTER_SERVER_DRAFT_REQUEST_HANDLER_H_
