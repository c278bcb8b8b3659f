// twinspan-serve: the single-process mode. Router, target and drafter in one process: the drafter
// behind the in-process DraftChannel, the target's Serving service on an internal gRPC server with
// no port, reached by the router through gRPC's in-process transport (no socket), and the router's
// Serving service on --listen. The embedded default and the tests' one-process setup.
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "grpcpp/server_builder.h"
#include "services/drafter/server/drafter_adapter.h"
#include "services/http/http_api.h"
#include "services/router/router_backend.h"
#include "services/router/router_config.h"
#include "services/rpc/server_runner.h"
#include "services/rpc/serving_service.h"
#include "services/target/server/target_flags.h"
#include "services/target/server/target_process.h"
#include "spdlog/spdlog.h"

namespace {

// The router's name for the in-process target (not a network address).
constexpr char kInProcessWorker[] = "in-process";

int Run(int argc, char** argv) {
  CLI::App app{
      "twinspan-serve: router, target and drafter in one process (the single-process mode)"};
  twinspan::serving::TargetFlags f;
  f.listen = "127.0.0.1:50050";
  f.stack.name = "serve";
  twinspan::serving::AddTargetFlags(app, f, /*with_grpc_drafter=*/false);
  twinspan::http::HttpFlags http_flags;
  twinspan::http::AddHttpFlags(app, http_flags);
  CLI11_PARSE(app, argc, argv);
  f.Finish();
  // Before the model loads: an HTTP API that would be refused stops the process now.
  if (absl::Status s = twinspan::http::CheckHttpFlags(http_flags); !s.ok()) {
    spdlog::error("{}", s.ToString());
    return 1;
  }
  const twinspan::serving::TargetStackOptions& o = f.stack;
  auto process = twinspan::serving::StartTargetProcess(f, &twinspan::serving::OpenInProcessDrafter);
  if (!process.ok()) {
    spdlog::error("{}", process.status().ToString());
    return 1;
  }
  twinspan::serving::TargetStack& stack = *process->stack;
  twinspan::metrics::ServingMetrics& metrics = *process->metrics;

  // The target behind a server without ports: only the in-process channel reaches it.
  twinspan::rpc::ServingService target_service(&stack.backend());
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(o.max_message_bytes);
  builder.SetMaxSendMessageSize(o.max_message_bytes);
  builder.RegisterService(&target_service);
  std::unique_ptr<grpc::Server> internal = builder.BuildAndStart();
  if (internal == nullptr) {
    spdlog::error("serve: cannot start the in-process target server");
    return 1;
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(o.max_message_bytes);
  args.SetMaxSendMessageSize(o.max_message_bytes);

  twinspan::router::RouterConfig config;
  config.listen = f.listen;
  config.health_interval = absl::Milliseconds(200);
  config.max_retries = 0;  // one worker: nothing to retry on
  config.max_message_bytes = o.max_message_bytes;
  twinspan::router::PoolConfig pool;
  pool.variant = o.drafter_model_dir.empty() ? "none" : o.head_variant;
  pool.workers = {kInProcessWorker};
  config.pools.push_back(pool);
  twinspan::router::RouterBackend router(config, &metrics,
                                         {{kInProcessWorker, internal->InProcessChannel(args)}});
  if (!router.WaitAllHealthy(absl::Seconds(30))) {
    spdlog::error("serve: the in-process target did not answer GetLoad within 30 s");
    return 1;
  }
  twinspan::rpc::ServingService router_service(&router, {f.max_request_duration()});
  twinspan::rpc::ServerOptions options;
  options.listen = f.listen;
  options.max_message_bytes = o.max_message_bytes;
  options.credentials = process->security.server_credentials;
  options.health_services = {twinspan::v1::Serving::service_full_name()};
  auto server = twinspan::rpc::RunningServer::Start(options, {&router_service});
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  twinspan::http::OpenAiFrontOptions http_options;
  http_options.max_request_duration = f.max_request_duration();
  auto http_api = twinspan::http::HttpApi::Start(http_flags, &router, http_options,
                                                 o.max_message_bytes, process->security);
  if (!http_api.ok()) {
    spdlog::error("{}", http_api.status().ToString());
    return 1;
  }
  spdlog::info("serve: router, target ({}) and drafter ({}) in one process", o.model_dir,
               o.drafter_model_dir.empty() ? "none" : o.drafter_model_dir);
  twinspan::rpc::AnnounceListening(o.name, (*server)->port(), process->http->port(),
                                   *http_api != nullptr ? (*http_api)->port() : 0);

  twinspan::serving::DrainOnSignal("serve", f.drain_seconds, **server, stack,
                                   [&router] { router.Drain(); });
  http_api->reset();  // its open requests ended with the drain
  router.Stop();
  internal->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  spdlog::info("serve: stopped");
  return 0;
}

}  // namespace

// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) { return Run(argc, argv); }
