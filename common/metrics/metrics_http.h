// Serves a registry on http://<address>/metrics (Prometheus text format) through civetweb, behind
// an optional bearer token.
#ifndef TWINSPAN_COMMON_METRICS_METRICS_HTTP_H_
#define TWINSPAN_COMMON_METRICS_METRICS_HTTP_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/auth/bearer_token_auth.h"
#include "prometheus/registry.h"

namespace twinspan::metrics {

// Owns the HTTP listener; stops it on destruction. Thread-safe after construction.
class MetricsHttp {
 public:
  // Listens on `address` ("127.0.0.1:9100"; port 0 picks a free one). With `auth` (not owned,
  // must outlive this) a scrape needs "Authorization: Bearer <token>" and gets 401 otherwise.
  // Errors: Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsHttp>> Start(
      const std::string& address, std::shared_ptr<prometheus::Registry> registry,
      auth::BearerTokenAuth* auth = nullptr);
  ~MetricsHttp();
  MetricsHttp(const MetricsHttp&) = delete;
  MetricsHttp& operator=(const MetricsHttp&) = delete;

  // The bound port (the real one when 0 was asked for).
  int port() const { return port_; }

 private:
  struct Impl;
  MetricsHttp(std::unique_ptr<Impl> impl, int port);
  std::unique_ptr<Impl> impl_;
  int port_;
};

}  // namespace twinspan::metrics

#endif  // TWINSPAN_COMMON_METRICS_METRICS_HTTP_H_
