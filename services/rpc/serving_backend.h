// What serves the public twinspan.v1.Serving API: the target's engine or the router's forwarder.
// ServingService turns gRPC callback calls into these methods.
#ifndef TWINSPAN_SERVICES_RPC_SERVING_BACKEND_H_
#define TWINSPAN_SERVICES_RPC_SERVING_BACKEND_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "twinspan/v1/serving.pb.h"

namespace twinspan::rpc {

// Per-call facts taken from the request and its metadata.
struct CallInfo {
  std::string request_id;   // never empty: assigned when the client sent none
  std::string session_key;  // request field, else "x-session-key" metadata
  absl::Time deadline = absl::InfiniteFuture();
  absl::Time arrival = absl::Now();  // when the call arrived (deadline messages say how long)
};

// The reply stream of one Generate call. Thread-safe; Write and Finish never block.
class GenerateWriter {
 public:
  virtual ~GenerateWriter() = default;
  // Queues one message; dropped after Finish or once the client is gone.
  virtual void Write(v1::GenerateResponse response) = 0;
  // Ends the call after the queued messages. Only the first call counts.
  virtual void Finish(const absl::Status& status) = 0;
  // The client cancelled or the deadline passed.
  virtual bool Cancelled() const = 0;
  // True once any message was queued (the router retries only before that).
  virtual bool Streamed() const = 0;
  // Runs `hook` once when the call is cancelled: by the client, by its deadline (the server ends
  // the call with DEADLINE_EXCEEDED a little before the client's own timer would), or because it
  // ended before Finish. Runs at once when that already happened. Any thread; must not block.
  // Only the first hook registered is kept.
  virtual void OnCancel(std::function<void()> hook) = 0;
};

// Thread-safe.
class ServingBackend {
 public:
  virtual ~ServingBackend() = default;
  // Runs the request; always ends with writer->Finish (OK after a Final, or the error).
  virtual void Generate(const v1::GenerateRequest& request, const CallInfo& call,
                        std::shared_ptr<GenerateWriter> writer) = 0;
  virtual absl::StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request) = 0;
  virtual absl::StatusOr<v1::ModelInfoResponse> ModelInfo() = 0;
  virtual bool Abort(const std::string& request_id) = 0;
  virtual v1::GetLoadResponse GetLoad() = 0;
};

}  // namespace twinspan::rpc

#endif  // TWINSPAN_SERVICES_RPC_SERVING_BACKEND_H_
