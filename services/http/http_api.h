// The HTTP API a process serves beside gRPC: the --http and --http-threads flags and the
// OpenAiFront on an HttpServer. Used by twinspan-router and twinspan-serve.
#ifndef TWINSPAN_SERVICES_HTTP_HTTP_API_H_
#define TWINSPAN_SERVICES_HTTP_HTTP_API_H_

#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "services/http/http_server.h"
#include "services/http/openai_front.h"

namespace twinspan::http {

struct HttpFlags {
  std::string listen;  // empty: no HTTP API
  int threads = 32;
};

void AddHttpFlags(CLI::App& app, HttpFlags& flags);

// The front and its server; the server stops (waiting for open requests) before the front goes.
class HttpApi {
 public:
  // Null when flags.listen is empty. Errors: HttpServer::Start's.
  static absl::StatusOr<std::unique_ptr<HttpApi>> Start(const HttpFlags& flags,
                                                        rpc::ServingBackend* backend,
                                                        OpenAiFrontOptions options,
                                                        int64_t max_body_bytes);
  int port() const { return server_->port(); }

 private:
  std::unique_ptr<OpenAiFront> front_;
  std::unique_ptr<HttpServer> server_;  // after front_: destroyed first
};

}  // namespace twinspan::http

#endif  // TWINSPAN_SERVICES_HTTP_HTTP_API_H_
