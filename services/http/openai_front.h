// The OpenAI-compatible HTTP API over a ServingBackend (the router's, in twinspan-router and
// twinspan-serve): POST /v1/completions and /v1/chat/completions (whole, or server-sent events
// with "stream": true), GET /v1/models and /health. Requests become twinspan.v1 GenerateRequests,
// so limits, errors, deadlines and cancellation are those of the gRPC API; errors come back as
// OpenAI-shaped bodies with the HTTP status of their code.
#ifndef TWINSPAN_SERVICES_HTTP_OPENAI_FRONT_H_
#define TWINSPAN_SERVICES_HTTP_OPENAI_FRONT_H_

#include <atomic>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "services/http/http_server.h"
#include "services/rpc/serving_backend.h"

namespace twinspan::http {

// The check of a request's "authorization" header value: OK, or Unauthenticated.
using Authorizer = std::function<absl::Status(absl::string_view authorization)>;

struct OpenAiFrontOptions {
  // The longest a completion may run (the gRPC API's --max-request-seconds): the call ends with
  // DEADLINE_EXCEEDED (504) naming the flag. Infinite: no limit.
  absl::Duration max_request_duration = absl::InfiniteDuration();
  // Null: no authentication. Otherwise every request but an exempt /health needs it.
  Authorizer authorize;
  bool exempt_health = false;  // --auth-exempt-health-metrics
};

// Thread-safe: Handle runs on any number of server threads at once. `backend` is not owned and
// must outlive the front.
class OpenAiFront {
 public:
  OpenAiFront(rpc::ServingBackend* backend, OpenAiFrontOptions options)
      : backend_(backend), options_(std::move(options)) {}

  // The HttpServer's gate, on the headers before the body is read: true when the request may go
  // on to Handle; otherwise it replied 401 with an OpenAI-shaped body that says only
  // "authentication required" and `WWW-Authenticate: Bearer`.
  bool Admit(HttpExchange& exchange);
  // Replies to one request that Admit let in (always).
  void Handle(HttpExchange& exchange);

 private:
  void Generate(HttpExchange& exchange, bool chat);
  std::string NextId(const char* prefix);

  rpc::ServingBackend* backend_;
  const OpenAiFrontOptions options_;
  std::atomic<uint64_t> next_id_{1};
};

}  // namespace twinspan::http

#endif  // TWINSPAN_SERVICES_HTTP_OPENAI_FRONT_H_
