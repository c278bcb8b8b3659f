// The HTTP API a process serves beside gRPC: the --http, --http-threads, --http-max-connections
// and --http-plaintext flags and the OpenAiFront on an HttpServer, with the gRPC port's TLS files
// and bearer tokens. Used by twinspan-router and twinspan-serve.
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
  int max_connections = 4096;
  // Serve plaintext HTTP although the gRPC port serves TLS (a TLS-terminating proxy in front).
  bool plaintext = false;
};

void AddHttpFlags(CLI::App& app, HttpFlags& flags);

// OK unless the HTTP API is on with --http-threads or --http-max-connections out of range:
// InvalidArgument naming the flag, before anything starts.
absl::Status CheckHttpFlags(const HttpFlags& flags);

// The front and its server; the server stops (waiting for open requests) before the front goes.
class HttpApi {
 public:
  // Null when flags.listen is empty. HTTPS when the gRPC port serves TLS (with the same files,
  // client certificates included) unless flags.plaintext. Every request but /health under
  // --auth-exempt-health-metrics needs a bearer token of security.token_auth when it is set,
  // checked before its body is read. Errors: CheckHttpFlags's, HttpServer::Start's.
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
