// twinspan-target: the target model behind twinspan.v1.Serving, with the lane engine; drafts come
// from a twinspan-drafter over gRPC (--drafter), from a drafter in this process (--drafter-model),
// or not at all. Drains on SIGTERM.
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "common/metrics/metrics_http.h"
#include "common/metrics/serving_metrics.h"
#include "services/drafter/server/drafter_adapter.h"
#include "services/engine/grpc/server_runner.h"
#include "services/engine/grpc/serving_service.h"
#include "services/target/server/target_flags.h"
#include "services/target/server/target_stack.h"
#include "spdlog/spdlog.h"

namespace {

int Run(int argc, char** argv) {
  CLI::App app{"twinspan-target: the target model and the lane engine behind twinspan.v1.Serving"};
  twinspan::serving::TargetFlags f;
  twinspan::serving::AddTargetFlags(app, f, /*with_grpc_drafter=*/true);
  CLI11_PARSE(app, argc, argv);
  f.Finish();
  const twinspan::serving::TargetStackOptions& o = f.stack;
  twinspan::rpc::SetUpLogging(o.name, f.log_level);
  twinspan::rpc::BlockTerminationSignals();

  auto registry = std::make_shared<prometheus::Registry>();
  twinspan::metrics::ServingMetrics metrics(registry, o.name);
  auto stack =
      twinspan::serving::TargetStack::Open(o, &metrics, &twinspan::serving::OpenInProcessDrafter);
  if (!stack.ok()) {
    spdlog::error("{}", stack.status().ToString());
    return 1;
  }
  auto http = twinspan::metrics::MetricsHttp::Start(f.metrics_listen, registry);
  if (!http.ok()) {
    spdlog::error("{}", http.status().ToString());
    return 1;
  }
  twinspan::rpc::ServingService service(&(*stack)->backend(), {f.max_request_duration()});
  twinspan::rpc::ServerOptions options;
  options.listen = f.listen;
  options.max_message_bytes = o.max_message_bytes;
  auto server = twinspan::rpc::RunningServer::Start(options, {&service});
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  twinspan::rpc::AnnounceListening(o.name, (*server)->port(), (*http)->port());

  const int signal = twinspan::rpc::WaitForTerminationSignal();
  spdlog::info("{}: signal {}, draining for up to {} s", o.name, signal, f.drain_seconds);
  (*server)->SetServing(false);
  (*stack)->engine().Drain();
  (*stack)->engine().WaitIdle(absl::Seconds(f.drain_seconds));
  (*server)->Shutdown(absl::Now() + absl::Seconds(1));
  spdlog::info("{}: stopped", o.name);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
