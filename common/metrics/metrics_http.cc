#include "common/metrics/metrics_http.h"

#include <exception>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "prometheus/exposer.h"

namespace twinspan::metrics {

struct MetricsHttp::Impl {
  std::unique_ptr<prometheus::Exposer> exposer;
};

absl::StatusOr<std::unique_ptr<MetricsHttp>> MetricsHttp::Start(
    const std::string& address, std::shared_ptr<prometheus::Registry> registry) {
  auto impl = std::make_unique<Impl>();
  // civetweb reports bind failures by throwing; keep the exception inside this module.
  try {
    impl->exposer = std::make_unique<prometheus::Exposer>(address, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("metrics: cannot listen on ", address, " (", e.what(), ")"));
  }
  impl->exposer->RegisterCollectable(registry, "/metrics");
  const std::vector<int> ports = impl->exposer->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(absl::StrCat("metrics: no listening port for ", address));
  }
  return std::unique_ptr<MetricsHttp>(new MetricsHttp(std::move(impl), ports[0]));
}

MetricsHttp::MetricsHttp(std::unique_ptr<Impl> impl, int port)
    : impl_(std::move(impl)), port_(port) {}

MetricsHttp::~MetricsHttp() = default;

}  // namespace twinspan::metrics
