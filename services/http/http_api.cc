#include "services/http/http_api.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace twinspan::http {

void AddHttpFlags(CLI::App& app, HttpFlags& flags) {
  app.add_option(
      "--http", flags.listen,
      "Serve the OpenAI-compatible HTTP API on HOST:PORT (port 0 picks one; empty: off)");
  app.add_option("--http-threads", flags.threads,
                 "HTTP requests served at once (a streamed completion holds one)");
  app.add_flag("--http-plaintext", flags.plaintext,
               "Serve --http in plaintext although --tls-cert puts the gRPC port on TLS: for a "
               "TLS-terminating proxy in front of it (the HTTP API cannot serve HTTPS)");
}

absl::Status CheckHttpTransport(const HttpFlags& flags, bool grpc_tls) {
  if (flags.listen.empty() || !grpc_tls || flags.plaintext) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "--http ", flags.listen,
      ": the gRPC port serves TLS (--tls-cert, --tls-key) but the HTTP API can only serve "
      "plaintext (Debian's civetweb 1.15 cannot load OpenSSL 3 for HTTPS); put a "
      "TLS-terminating proxy in front of it and add --http-plaintext, or drop --http"));
}

absl::StatusOr<std::unique_ptr<HttpApi>> HttpApi::Start(const HttpFlags& flags,
                                                        rpc::ServingBackend* backend,
                                                        OpenAiFrontOptions options,
                                                        int64_t max_body_bytes,
                                                        const security::ProcessSecurity& security) {
  if (flags.listen.empty()) return std::unique_ptr<HttpApi>();
  if (absl::Status s = CheckHttpTransport(flags, security.tls); !s.ok()) return s;
  if (security.token_auth != nullptr) {
    options.authorize = [auth = security.token_auth](absl::string_view authorization) {
      return auth->Check(authorization);
    };
    options.exempt_health = security.exempt_health_metrics;
  }
  auto api = std::unique_ptr<HttpApi>(new HttpApi());
  api->front_ = std::make_unique<OpenAiFront>(backend, std::move(options));
  HttpServerOptions server;
  server.listen = flags.listen;
  server.threads = flags.threads;
  server.max_body_bytes = max_body_bytes;
  OpenAiFront* front = api->front_.get();
  absl::StatusOr<std::unique_ptr<HttpServer>> started = HttpServer::Start(
      server, [front](HttpExchange& exchange) { front->Handle(exchange); },
      [front](HttpExchange& exchange) { return front->Admit(exchange); });
  if (!started.ok()) return started.status();
  api->server_ = *std::move(started);
  spdlog::info("http: OpenAI-compatible API on port {} ({} threads), plaintext{}{}",
               api->server_->port(), flags.threads,
               security.tls ? " behind a TLS proxy (--http-plaintext)" : "",
               security.token_auth == nullptr   ? ""
               : security.exempt_health_metrics ? ", bearer tokens (/health exempt)"
                                                : ", bearer tokens");
  return api;
}

}  // namespace twinspan::http
