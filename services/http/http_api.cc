#include "services/http/http_api.h"

#include <sys/resource.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace twinspan::http {

void AddHttpFlags(CLI::App& app, HttpFlags& flags) {
  app.add_option(
      "--http", flags.listen,
      "Serve the OpenAI-compatible HTTP API on HOST:PORT (port 0 picks one; empty: off)");
  app.add_option("--http-threads", flags.threads,
                 "HTTP requests served at once (a streamed completion holds one); one more gets "
                 "503 with Retry-After");
  app.add_option("--http-max-connections", flags.max_connections,
                 "HTTP connections open at once, idle ones included; one more is refused");
  app.add_flag("--http-plaintext", flags.plaintext,
               "Serve --http in plaintext although --tls-cert puts the gRPC port on TLS: for a "
               "TLS-terminating proxy in front of it (otherwise --http serves HTTPS)");
}

absl::Status CheckHttpFlags(const HttpFlags& flags) {
  if (flags.listen.empty()) return absl::OkStatus();
  if (flags.threads < 1 || flags.threads > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-threads ", flags.threads, " must be in [1, 4096]"));
  }
  if (flags.max_connections < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-max-connections ", flags.max_connections, " must be at least 1"));
  }
  return absl::OkStatus();
}

namespace {

// Each connection holds a descriptor, and the common default soft limit (1024) is below the
// connection limit: raise it as far as the hard limit allows.
void RaiseDescriptorLimit(int max_connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t wanted = static_cast<rlim_t>(max_connections) + 1024;
  if (limit.rlim_cur >= wanted) return;
  const rlim_t old = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
  if (limit.rlim_cur <= old || setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    spdlog::warn(
        "http: open-file limit {} is below --http-max-connections {}; raise it (ulimit -n)", old,
        max_connections);
    return;
  }
  spdlog::info("http: open-file limit raised from {} to {} for --http-max-connections {}", old,
               limit.rlim_cur, max_connections);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpApi>> HttpApi::Start(const HttpFlags& flags,
                                                        rpc::ServingBackend* backend,
                                                        OpenAiFrontOptions options,
                                                        int64_t max_body_bytes,
                                                        const security::ProcessSecurity& security) {
  if (flags.listen.empty()) return std::unique_ptr<HttpApi>();
  if (absl::Status s = CheckHttpFlags(flags); !s.ok()) return s;
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
  server.max_connections = flags.max_connections;
  server.max_body_bytes = max_body_bytes;
  server.inline_paths = {"/health"};  // OpenAiFront answers it from GetLoad, without waiting
  if (!flags.plaintext) server.tls = security.tls_files;
  RaiseDescriptorLimit(flags.max_connections);
  OpenAiFront* front = api->front_.get();
  absl::StatusOr<std::unique_ptr<HttpServer>> started = HttpServer::Start(
      server, [front](HttpExchange& exchange) { front->Handle(exchange); },
      [front](HttpExchange& exchange) { return front->Admit(exchange); });
  if (!started.ok()) return started.status();
  api->server_ = *std::move(started);
  const std::string transport =
      server.tls.enabled()
          ? (server.tls.client_ca_file.empty() ? "HTTPS" : "HTTPS with client certificates")
          : (security.tls ? "plaintext behind a TLS proxy (--http-plaintext)" : "plaintext");
  spdlog::info("http: OpenAI-compatible API on port {} ({} threads, {} connections), {}{}",
               api->server_->port(), flags.threads, flags.max_connections, transport,
               security.token_auth == nullptr   ? ""
               : security.exempt_health_metrics ? ", bearer tokens (/health exempt)"
                                                : ", bearer tokens");
  return api;
}

}  // namespace twinspan::http
