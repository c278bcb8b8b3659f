// twinspan-drafter: a DFlash / DFlash2 drafter over the target's embedding and head, serving the
// twinspan.v1.Drafter Draft stream to any number of targets. Drains on SIGTERM.
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "common/metrics/metrics_http.h"
#include "common/metrics/serving_metrics.h"
#include "kernels/cpu/parallel.h"
#include "services/drafter/server/drafter_adapter.h"
#include "services/drafter/server/drafter_service.h"
#include "services/rpc/server_runner.h"
#include "services/security/security_flags.h"
#include "spdlog/spdlog.h"

namespace {

int Run(int argc, char** argv) {
  CLI::App app{"twinspan-drafter: DFlash2 proposals over a bidirectional gRPC stream"};
  twinspan::serving::DrafterAdapterOptions o;
  std::string listen = "127.0.0.1:50052", metrics_listen = "127.0.0.1:0", log_level = "info";
  int max_message_mb = 64;
  int64_t prefix_cache_mb = 1024;
  double drain_seconds = 5;
  app.add_option("--model", o.drafter_dir, "Drafter checkpoint folder")->required();
  app.add_option("--target-model", o.target_dir,
                 "Target checkpoint folder (embedding, lm_head, tokenizer)")
      ->required();
  app.add_option("--head-variant", o.head_variant, "full, two-span, or spans a:b,c:d");
  app.add_option("--listen", listen, "gRPC address (port 0 picks one)");
  app.add_option("--metrics", metrics_listen, "/metrics address (port 0 picks one)");
  app.add_option("--context", o.context, "Positions per stream (context plus one block)");
  app.add_option("--threads", o.threads, "CPU threads (0: all)");
  app.add_option("--device", o.device,
                 "cpu, or cuda:N (N among the visible devices: cuda:0 under the router's "
                 "placement)");
  app.add_option("--drafter-bits", o.drafter_bits,
                 "16: linears as stored; 4: dense linears quantized to Q4 at load");
  app.add_option("--max-streams", o.max_streams, "Open streams per target connection");
  app.add_option("--prefix-cache-mb", prefix_cache_mb,
                 "Prompt-prefix cache of context K/V, MiB (0: none); must hold at least the "
                 "prompt rows its targets' caches hold")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--prefix-block-tokens", o.prefix_block_tokens,
                 "Prefix cache granularity in tokens (the targets' --prefix-block-tokens)");
  app.add_option("--draft-tree-nodes", o.tree_nodes,
                 "Drafts per proposal as a best-first tree (DFlash2; default 15); 0: the "
                 "selector walk's chain");
  app.add_option("--max-message-mb", max_message_mb, "gRPC message size limit");
  app.add_option("--drain-seconds", drain_seconds, "Grace period on SIGTERM");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
  twinspan::security::SecurityFlags security_flags;
  twinspan::security::AddSecurityFlags(app, security_flags, {});
  CLI11_PARSE(app, argc, argv);
  o.prefix_cache_bytes = prefix_cache_mb << 20;
  twinspan::rpc::SetUpLogging("drafter", log_level);
  twinspan::rpc::BlockTerminationSignals();
  auto security = twinspan::security::OpenSecurity(security_flags);
  if (!security.ok()) {
    spdlog::error("{}", security.status().ToString());
    return 1;
  }

  auto model = twinspan::serving::OpenDrafterAdapter(o);
  if (!model.ok()) {
    spdlog::error("{}", model.status().ToString());
    return 1;
  }
  const auto& info = (*model)->info();
  spdlog::info(
      "drafter: {} over {}: head {}, block {}, {}, taps from layers [{}], device {}, prefix cache "
      "{} MiB in blocks of {} tokens",
      o.drafter_dir, o.target_dir, info.head_variant, info.block_size,
      info.tree_nodes > 0 ? fmt::format("trees of {} drafts", info.tree_nodes)
                          : std::string("chains"),
      fmt::join(info.target_layer_ids, ","),
      o.device == "cpu" ? fmt::format("cpu, threads {}", twinspan::cpu::ThreadCount(o.threads))
                        : o.device,
      prefix_cache_mb, o.prefix_block_tokens);
  auto registry = std::make_shared<prometheus::Registry>();
  twinspan::metrics::ServingMetrics metrics(registry, "drafter");
  auto http = twinspan::metrics::MetricsHttp::Start(metrics_listen, registry);
  if (!http.ok()) {
    spdlog::error("{}", http.status().ToString());
    return 1;
  }
  twinspan::rpc::DrafterServiceOptions service_options;
  service_options.max_streams_per_connection = o.max_streams;
  twinspan::rpc::DrafterService service(model->get(), service_options, &metrics);
  twinspan::rpc::ServerOptions options;
  options.listen = listen;
  options.max_message_bytes = max_message_mb << 20;
  options.credentials = security->server_credentials;
  options.health_services = {twinspan::v1::Drafter::service_full_name()};
  auto server = twinspan::rpc::RunningServer::Start(options, {&service});
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  twinspan::rpc::AnnounceListening("drafter", (*server)->port(), (*http)->port());
  const int signal = twinspan::rpc::WaitForTerminationSignal();
  spdlog::info("drafter: signal {}, stopping (targets continue without drafts)", signal);
  service.StopAll();
  (*server)->Shutdown(absl::Now() + absl::Seconds(drain_seconds));
  spdlog::info("drafter: stopped");
  return 0;
}

}  // namespace

// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) { return Run(argc, argv); }
