// The parts of a target process that twinspan-target and twinspan-serve (the single-process mode)
// start and stop the same way, so both log, count, drain and shut down alike.
#ifndef TWINSPAN_SERVICES_TARGET_SERVER_TARGET_PROCESS_H_
#define TWINSPAN_SERVICES_TARGET_SERVER_TARGET_PROCESS_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics/metrics_http.h"
#include "common/metrics/serving_metrics.h"
#include "prometheus/registry.h"
#include "services/rpc/server_runner.h"
#include "services/security/security_flags.h"
#include "services/target/server/target_flags.h"
#include "services/target/server/target_stack.h"

namespace twinspan::serving {

// Members are destroyed in reverse order: the /metrics server, then the stack, then the metrics
// the stack counts into.
struct TargetProcess {
  security::ProcessSecurity security;  // the port's credentials (ServerOptions::credentials)
  std::shared_ptr<prometheus::Registry> registry;
  std::unique_ptr<metrics::ServingMetrics> metrics;
  std::unique_ptr<TargetStack> stack;
  std::unique_ptr<metrics::MetricsHttp> http;
};

// Sets up logging as flags.stack.name, blocks the termination signals (call before any thread
// starts), opens the security flags' credentials (before the model: a bad certificate fails fast),
// opens the target stack with `open_drafter` (dialling a gRPC drafter as --upstream-tls-* say)
// and serves /metrics on flags.metrics_listen (behind the bearer token unless exempt).
// REQUIRES: flags.Finish() was called. Errors: those of security::OpenSecurity, TargetStack::Open
// and MetricsHttp::Start.
absl::StatusOr<TargetProcess> StartTargetProcess(const TargetFlags& flags,
                                                 DraftModelOpener open_drafter);

// Blocks until SIGTERM or SIGINT, logs it as `role`, runs `on_signal` (when set), then stops taking
// calls on `server`, drains `stack`'s engine for up to `drain_seconds`, ends what still runs then
// with UNAVAILABLE naming the drain, and shuts `server` down a second later.
void DrainOnSignal(const std::string& role, double drain_seconds, rpc::RunningServer& server,
                   TargetStack& stack, const std::function<void()>& on_signal = {});

}  // namespace twinspan::serving

#endif  // TWINSPAN_SERVICES_TARGET_SERVER_TARGET_PROCESS_H_
