// twinspan-router: serves twinspan.v1.Serving and forwards to target pools (one per head variant),
// weighted and sticky per session; optionally starts the workers itself on the GPUs its config
// names; drains on SIGTERM.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/metrics/metrics_http.h"
#include "common/metrics/serving_metrics.h"
#include "services/http/http_api.h"
#include "services/router/process_launcher.h"
#include "services/router/router_backend.h"
#include "services/router/router_config.h"
#include "services/rpc/server_runner.h"
#include "services/rpc/serving_service.h"
#include "services/security/security_flags.h"
#include "spdlog/spdlog.h"

namespace {

std::string OwnDirectory() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  std::string s(path, n);
  return s.substr(0, s.find_last_of('/'));
}

int Run(int argc, char** argv) {
  CLI::App app{"twinspan-router: weighted, sticky A/B routing over target pools"};
  std::string config_path, listen, metrics_listen, log_level = "info";
  double drain_seconds = 30;
  app.add_option("--config", config_path, "Router config (JSON)")->required();
  app.add_option("--listen", listen, "Overrides the config's listen address");
  app.add_option("--metrics", metrics_listen, "Overrides the config's /metrics address");
  app.add_option("--drain-seconds", drain_seconds, "Grace period for in-flight calls on SIGTERM");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
  double max_request_seconds = 0;
  app.add_option("--max-request-seconds", max_request_seconds,
                 "Longest a Generate may run, whatever the client's deadline (0: no limit)");
  bool check_config = false;
  app.add_flag("--check-config", check_config,
               "Parse and check --config, print what it routes, and exit (0: valid, 2: not)");
  twinspan::security::SecurityFlags security_flags;
  twinspan::security::AddSecurityFlags(app, security_flags,
                                       {.token_auth = true, .upstream_tls = true});
  twinspan::http::HttpFlags http_flags;
  twinspan::http::AddHttpFlags(app, http_flags);
  CLI11_PARSE(app, argc, argv);
  twinspan::rpc::SetUpLogging("router", log_level);
  twinspan::rpc::BlockTerminationSignals();

  absl::StatusOr<twinspan::router::RouterConfig> config =
      twinspan::router::LoadRouterConfig(config_path);
  if (!config.ok()) {
    spdlog::error("{}", config.status().ToString());
    return 2;
  }
  if (!listen.empty()) config->listen = listen;
  if (!metrics_listen.empty()) config->metrics = metrics_listen;
  if (http_flags.listen.empty()) http_flags.listen = config->http;
  if (check_config) {
    std::printf("router: %s is valid: listen %s, metrics %s\n", config_path.c_str(),
                config->listen.c_str(), config->metrics.c_str());
    for (const auto& pool : config->pools) {
      std::printf("pool %s weight %g workers %s launch %zu\n", pool.variant.c_str(), pool.weight,
                  absl::StrJoin(pool.workers, ",").c_str(), pool.launch.size());
    }
    return 0;
  }

  auto security = twinspan::security::OpenSecurity(security_flags);
  if (!security.ok()) {
    spdlog::error("{}", security.status().ToString());
    return 1;
  }
  // Before any worker starts: an HTTP API that would be refused stops the router now.
  if (absl::Status s = twinspan::http::CheckHttpFlags(http_flags); !s.ok()) {
    spdlog::error("{}", s.ToString());
    return 1;
  }
  auto registry = std::make_shared<prometheus::Registry>();
  twinspan::metrics::ServingMetrics metrics(registry, "router");
  twinspan::router::ProcessLauncher launcher(
      OwnDirectory(), {}, [&metrics](const std::string& name) { metrics.RecordRestart(name); });
  for (const auto& pool : config->pools) {
    for (const auto& spec : pool.launch) {
      if (absl::Status s = launcher.Launch(spec); !s.ok()) {
        spdlog::error("{}", s.ToString());
        return 1;
      }
    }
  }
  auto http =
      twinspan::metrics::MetricsHttp::Start(config->metrics, registry, security->metrics_auth());
  if (!http.ok()) {
    spdlog::error("{}", http.status().ToString());
    return 1;
  }
  twinspan::router::RouterBackend backend(*config, &metrics, {}, security->upstream);
  bool any_launched = false;
  for (const auto& pool : config->pools) any_launched = any_launched || !pool.launch.empty();
  if (any_launched && !backend.WaitAllHealthy(config->startup_timeout)) {
    for (const std::string& e : launcher.Exits()) spdlog::error("router: worker exited: {}", e);
    spdlog::error("router: workers not healthy within {}",
                  absl::FormatDuration(config->startup_timeout));
    return 1;
  }
  twinspan::rpc::ServingService service(
      &backend,
      {max_request_seconds > 0 ? absl::Seconds(max_request_seconds) : absl::InfiniteDuration()});
  twinspan::rpc::ServerOptions options;
  options.listen = config->listen;
  options.max_message_bytes = config->max_message_bytes;
  options.credentials = security->server_credentials;
  options.health_services = {twinspan::v1::Serving::service_full_name()};
  auto server = twinspan::rpc::RunningServer::Start(options, {&service});
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  twinspan::http::OpenAiFrontOptions http_options;
  http_options.max_request_duration =
      max_request_seconds > 0 ? absl::Seconds(max_request_seconds) : absl::InfiniteDuration();
  auto http_api = twinspan::http::HttpApi::Start(http_flags, &backend, http_options,
                                                 config->max_message_bytes, *security);
  if (!http_api.ok()) {
    spdlog::error("{}", http_api.status().ToString());
    return 1;
  }
  spdlog::info("router: {} pools, listening on port {}", config->pools.size(), (*server)->port());
  twinspan::rpc::AnnounceListening("router", (*server)->port(), (*http)->port(),
                                   *http_api != nullptr ? (*http_api)->port() : 0);

  const int signal = twinspan::rpc::WaitForTerminationSignal();
  spdlog::info("router: signal {}, draining for up to {} s", signal, drain_seconds);
  // Like a target: the server stays up while open calls finish, so GetLoad can say draining.
  (*server)->SetServing(false);
  backend.Drain();
  if (!backend.WaitIdle(absl::Seconds(drain_seconds))) {
    spdlog::warn("router: calls still open after {} s of draining; stopping them", drain_seconds);
    backend.StopAll(absl::UnavailableError(
        absl::StrCat("router is draining and its grace period (--drain-seconds ", drain_seconds,
                     ") ran out before this request finished; retry it elsewhere")));
    backend.WaitIdle(absl::Seconds(5));
  }
  (*server)->Shutdown(absl::Now() + absl::Seconds(1));
  http_api->reset();  // its open requests ended with the calls above
  backend.Stop();
  launcher.StopAll(absl::Seconds(drain_seconds));
  spdlog::info("router: stopped");
  return 0;
}

}  // namespace

// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) { return Run(argc, argv); }
