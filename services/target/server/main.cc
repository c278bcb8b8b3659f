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
#include "services/target/server/target_stack.h"
#include "spdlog/spdlog.h"

namespace {

int Run(int argc, char** argv) {
  CLI::App app{"twinspan-target: the target model and the lane engine behind twinspan.v1.Serving"};
  twinspan::serving::TargetStackOptions o;
  std::string listen = "127.0.0.1:50051", metrics_listen = "127.0.0.1:0", log_level = "info";
  double draft_timeout_ms = 500, drain_seconds = 30;
  int max_message_mb = 64;
  app.add_option("--model", o.model_dir, "Target checkpoint folder")->required();
  app.add_option("--listen", listen, "gRPC address (port 0 picks one)");
  app.add_option("--metrics", metrics_listen, "/metrics address (port 0 picks one)");
  app.add_option("--name", o.name, "Name in logs and replies");
  app.add_option("--drafter", o.drafter_address, "twinspan-drafter address (split mode)");
  app.add_option("--drafter-model", o.drafter_model_dir, "Drafter checkpoint run in this process");
  app.add_option("--head-variant", o.head_variant, "Head variant of the in-process drafter");
  app.add_option("--parallel", o.parallel, "Live streams per round");
  app.add_option("--context", o.context, "Positions per stream (prompt + completion)");
  app.add_option("--threads", o.threads, "CPU threads (0: all)");
  app.add_option("--draft-timeout-ms", draft_timeout_ms, "Per-round wait for proposals");
  app.add_option("--max-waiting", o.max_waiting, "Queued requests beyond the live ones");
  app.add_option("--max-prompt-tokens", o.max_prompt_tokens, "Prompt limit (0: context - 1)");
  app.add_option("--max-tokens-limit", o.max_tokens_limit, "Largest max_tokens accepted");
  app.add_option("--default-max-tokens", o.default_max_tokens, "max_tokens when a request has 0");
  app.add_option("--max-message-mb", max_message_mb, "gRPC message size limit");
  app.add_option("--drain-seconds", drain_seconds, "Grace period for in-flight calls on SIGTERM");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
  CLI11_PARSE(app, argc, argv);
  twinspan::rpc::SetUpLogging(o.name, log_level);
  twinspan::rpc::BlockTerminationSignals();
  o.draft_timeout = absl::Milliseconds(draft_timeout_ms);
  o.max_message_bytes = max_message_mb << 20;

  auto registry = std::make_shared<prometheus::Registry>();
  twinspan::metrics::ServingMetrics metrics(registry, o.name);
  auto stack =
      twinspan::serving::TargetStack::Open(o, &metrics, &twinspan::serving::OpenInProcessDrafter);
  if (!stack.ok()) {
    spdlog::error("{}", stack.status().ToString());
    return 1;
  }
  auto http = twinspan::metrics::MetricsHttp::Start(metrics_listen, registry);
  if (!http.ok()) {
    spdlog::error("{}", http.status().ToString());
    return 1;
  }
  twinspan::rpc::ServingService service(&(*stack)->backend());
  twinspan::rpc::ServerOptions options;
  options.listen = listen;
  options.max_message_bytes = o.max_message_bytes;
  auto server = twinspan::rpc::RunningServer::Start(options, {&service});
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  twinspan::rpc::AnnounceListening(o.name, (*server)->port(), (*http)->port());

  const int signal = twinspan::rpc::WaitForTerminationSignal();
  spdlog::info("{}: signal {}, draining for up to {} s", o.name, signal, drain_seconds);
  (*server)->SetServing(false);
  (*stack)->engine().Drain();
  (*stack)->engine().WaitIdle(absl::Seconds(drain_seconds));
  (*server)->Shutdown(absl::Now() + absl::Seconds(1));
  spdlog::info("{}: stopped", o.name);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
