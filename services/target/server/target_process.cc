#include "services/target/server/target_process.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace twinspan::serving {

absl::StatusOr<TargetProcess> StartTargetProcess(const TargetFlags& flags,
                                                 DraftModelOpener open_drafter) {
  const TargetStackOptions& o = flags.stack;
  rpc::SetUpLogging(o.name, flags.log_level);
  rpc::BlockTerminationSignals();

  TargetProcess p;
  absl::StatusOr<security::ProcessSecurity> security = security::OpenSecurity(flags.security);
  if (!security.ok()) return security.status();
  p.security = *std::move(security);
  p.registry = std::make_shared<prometheus::Registry>();
  p.metrics = std::make_unique<metrics::ServingMetrics>(p.registry, o.name);
  TargetStackOptions stack_options = o;
  stack_options.drafter_security = p.security.upstream;
  auto stack = TargetStack::Open(stack_options, p.metrics.get(), open_drafter);
  if (!stack.ok()) return stack.status();
  p.stack = *std::move(stack);
  auto http =
      metrics::MetricsHttp::Start(flags.metrics_listen, p.registry, p.security.metrics_auth());
  if (!http.ok()) return http.status();
  p.http = *std::move(http);
  return p;
}

void DrainOnSignal(const std::string& role, double drain_seconds, rpc::RunningServer& server,
                   TargetStack& stack, const std::function<void()>& on_signal) {
  const int signal = rpc::WaitForTerminationSignal();
  spdlog::info("{}: signal {}, draining for up to {} s", role, signal, drain_seconds);
  if (on_signal) on_signal();
  server.SetServing(false);
  stack.engine().Drain();
  if (!stack.engine().WaitIdle(absl::Seconds(drain_seconds))) {
    spdlog::warn("{}: requests still running after {} s of draining; stopping them", role,
                 drain_seconds);
    stack.engine().StopAll(absl::UnavailableError(
        absl::StrCat(role, " is draining and its grace period (--drain-seconds ", drain_seconds,
                     ") ran out before this request finished; retry it elsewhere")));
    stack.engine().WaitIdle(absl::Seconds(5));
  }
  server.Shutdown(absl::Now() + absl::Seconds(1));
}

}  // namespace twinspan::serving
