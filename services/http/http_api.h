// The HTTP API a process serves beside gRPC: the --http, --http-threads and --http-plaintext
// flags and the OpenAiFront on an HttpServer, behind the gRPC port's bearer tokens. Used by
// twinspan-router and twinspan-serve.
#ifndef TWINSPAN_SERVICES_HTTP_HTTP_API_H_
#define TWINSPAN_SERVICES_HTTP_HTTP_API_H_

#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/http/http_server.h"
#include "services/http/openai_front.h"
#include "services/security/security_flags.h"

namespace twinspan::http {

struct HttpFlags {
  std::string listen;  // empty: no HTTP API
  int threads = 32;
  // Serve plaintext HTTP although the gRPC port serves TLS (a TLS-terminating proxy in front).
  bool plaintext = false;
};

void AddHttpFlags(CLI::App& app, HttpFlags& flags);

// OK unless the HTTP API is on and `grpc_tls` (the gRPC port serves TLS) without
// flags.plaintext: the HTTP API cannot serve HTTPS (Debian's civetweb 1.15 loads OpenSSL 1.1's
// SSL_get_peer_certificate, which OpenSSL 3 no longer exports), and it must not quietly serve in
// the clear what the gRPC port protects. FailedPrecondition naming the flags and the choices.
absl::Status CheckHttpTransport(const HttpFlags& flags, bool grpc_tls);

// The front and its server; the server stops (waiting for open requests) before the front goes.
class HttpApi {
 public:
  // Null when flags.listen is empty. Every request but /health under
  // --auth-exempt-health-metrics needs a bearer token of security.token_auth when it is set,
  // checked before its body is read. Errors: CheckHttpTransport's, HttpServer::Start's.
  static absl::StatusOr<std::unique_ptr<HttpApi>> Start(const HttpFlags& flags,
                                                        rpc::ServingBackend* backend,
                                                        OpenAiFrontOptions options,
                                                        int64_t max_body_bytes,
                                                        const security::ProcessSecurity& security);
  int port() const { return server_->port(); }

 private:
  std::unique_ptr<OpenAiFront> front_;
  std::unique_ptr<HttpServer> server_;  // after front_: destroyed first
};

}  // namespace twinspan::http

#endif  // TWINSPAN_SERVICES_HTTP_HTTP_API_H_
