#include "common/metrics/metrics_http.h"

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "CivetServer.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"

namespace twinspan::metrics {
namespace {

// GET /metrics: the registry in the text format, or 401 without a valid token.
class MetricsHandler final : public CivetHandler {
 public:
  MetricsHandler(std::shared_ptr<prometheus::Registry> registry, auth::BearerTokenAuth* auth)
      : registry_(std::move(registry)), auth_(auth) {}

  bool handleGet(CivetServer*, mg_connection* conn) override {
    if (auth_ != nullptr) {
      const char* header = mg_get_header(conn, "Authorization");
      if (!auth_->Check(header == nullptr ? "" : header).ok()) {
        const std::string body = std::string(auth::kUnauthenticatedMessage) + "\n";
        mg_printf(conn,
                  "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\n"
                  "Content-Type: text/plain\r\nContent-Length: %zu\r\n\r\n",
                  body.size());
        mg_write(conn, body.data(), body.size());
        return true;
      }
    }
    const std::string body = prometheus::TextSerializer().Serialize(registry_->Collect());
    mg_printf(conn,
              "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
              "Content-Length: %zu\r\n\r\n",
              body.size());
    mg_write(conn, body.data(), body.size());
    return true;
  }

 private:
  const std::shared_ptr<prometheus::Registry> registry_;
  auth::BearerTokenAuth* const auth_;
};

}  // namespace

struct MetricsHttp::Impl {
  std::unique_ptr<MetricsHandler> handler;  // outlives the server, which calls it
  std::unique_ptr<CivetServer> server;
};

absl::StatusOr<std::unique_ptr<MetricsHttp>> MetricsHttp::Start(
    const std::string& address, std::shared_ptr<prometheus::Registry> registry,
    auth::BearerTokenAuth* auth) {
  auto impl = std::make_unique<Impl>();
  impl->handler = std::make_unique<MetricsHandler>(std::move(registry), auth);
  // civetweb reports bind failures by throwing; keep the exception inside this module.
  try {
    impl->server = std::make_unique<CivetServer>(
        std::vector<std::string>{"listening_ports", address, "num_threads", "1"});
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("metrics: cannot listen on ", address, " (", e.what(), ")"));
  }
  impl->server->addHandler("/metrics", impl->handler.get());
  const std::vector<int> ports = impl->server->getListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(absl::StrCat("metrics: no listening port for ", address));
  }
  return std::unique_ptr<MetricsHttp>(new MetricsHttp(std::move(impl), ports[0]));
}

MetricsHttp::MetricsHttp(std::unique_ptr<Impl> impl, int port)
    : impl_(std::move(impl)), port_(port) {}

MetricsHttp::~MetricsHttp() {
  if (impl_ != nullptr && impl_->server != nullptr) impl_->server->close();
}

}  // namespace twinspan::metrics
