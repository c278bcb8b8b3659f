#include "services/http/http_api.h"

#include <utility>

#include "spdlog/spdlog.h"

namespace twinspan::http {

void AddHttpFlags(CLI::App& app, HttpFlags& flags) {
  app.add_option(
      "--http", flags.listen,
      "Serve the OpenAI-compatible HTTP API on HOST:PORT (port 0 picks one; empty: off)");
  app.add_option("--http-threads", flags.threads,
                 "HTTP requests served at once (a streamed completion holds one)");
}

absl::StatusOr<std::unique_ptr<HttpApi>> HttpApi::Start(const HttpFlags& flags,
                                                        rpc::ServingBackend* backend,
                                                        OpenAiFrontOptions options,
                                                        int64_t max_body_bytes) {
  if (flags.listen.empty()) return std::unique_ptr<HttpApi>();
  auto api = std::unique_ptr<HttpApi>(new HttpApi());
  api->front_ = std::make_unique<OpenAiFront>(backend, std::move(options));
  HttpServerOptions server;
  server.listen = flags.listen;
  server.threads = flags.threads;
  server.max_body_bytes = max_body_bytes;
  OpenAiFront* front = api->front_.get();
  absl::StatusOr<std::unique_ptr<HttpServer>> started =
      HttpServer::Start(server, [front](HttpExchange& exchange) { front->Handle(exchange); });
  if (!started.ok()) return started.status();
  api->server_ = *std::move(started);
  spdlog::info("http: OpenAI-compatible API on port {} ({} threads)", api->server_->port(),
               flags.threads);
  return api;
}

}  // namespace twinspan::http
