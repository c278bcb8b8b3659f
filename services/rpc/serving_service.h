// twinspan.v1.Serving on gRPC's callback API, forwarding to a ServingBackend.
#ifndef TWINSPAN_SERVICES_RPC_SERVING_SERVICE_H_
#define TWINSPAN_SERVICES_RPC_SERVING_SERVICE_H_

#include <atomic>

#include "absl/time/time.h"
#include "services/rpc/serving_backend.h"
#include "twinspan/v1/serving.grpc.pb.h"

namespace twinspan::rpc {

struct ServingServiceOptions {
  // The longest a Generate may run, whatever deadline the client set (or none): the call ends
  // with DEADLINE_EXCEEDED naming this limit. Infinite: only the client's deadline counts.
  absl::Duration max_request_duration = absl::InfiniteDuration();
};

// Thread-safe. `backend` is not owned and must outlive the server.
class ServingService final : public v1::Serving::CallbackService {
 public:
  explicit ServingService(ServingBackend* backend, const ServingServiceOptions& options = {})
      : backend_(backend), options_(options) {}

  grpc::ServerWriteReactor<v1::GenerateResponse>* Generate(
      grpc::CallbackServerContext* context, const v1::GenerateRequest* request) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* context,
                                     const v1::TokenizeRequest* request,
                                     v1::TokenizeResponse* response) override;
  grpc::ServerUnaryReactor* ModelInfo(grpc::CallbackServerContext* context,
                                      const v1::ModelInfoRequest* request,
                                      v1::ModelInfoResponse* response) override;
  grpc::ServerUnaryReactor* Abort(grpc::CallbackServerContext* context,
                                  const v1::AbortRequest* request,
                                  v1::AbortResponse* response) override;
  grpc::ServerUnaryReactor* GetLoad(grpc::CallbackServerContext* context,
                                    const v1::GetLoadRequest* request,
                                    v1::GetLoadResponse* response) override;

 private:
  ServingBackend* backend_;
  const ServingServiceOptions options_;
  std::atomic<uint64_t> next_id_{1};
};

// True for 1 to 256 printable ASCII characters without spaces: what a request id may be.
bool IsPrintableRequestId(const std::string& id);
// The request id of a call: the request field, else "x-request-id" metadata, else a new one.
std::string RequestIdOf(const grpc::CallbackServerContext& context, const std::string& field,
                        uint64_t counter);

}  // namespace twinspan::rpc

#endif  // TWINSPAN_SERVICES_RPC_SERVING_SERVICE_H_
