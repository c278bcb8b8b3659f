// twinspan-target: the target model behind twinspan.v1.Serving, with the lane engine; drafts come
// from a twinspan-drafter over gRPC (--drafter), from a drafter in this process (--drafter-model),
// or not at all. Drains on SIGTERM.
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "services/drafter/server/drafter_adapter.h"
#include "services/rpc/server_runner.h"
#include "services/rpc/serving_service.h"
#include "services/target/server/target_flags.h"
#include "services/target/server/target_process.h"
#include "spdlog/spdlog.h"

namespace {

int Run(int argc, char** argv) {
  CLI::App app{"twinspan-target: the target model and the lane engine behind twinspan.v1.Serving"};
  twinspan::serving::TargetFlags f;
  twinspan::serving::AddTargetFlags(app, f, /*with_grpc_drafter=*/true);
  CLI11_PARSE(app, argc, argv);
  f.Finish();
  const twinspan::serving::TargetStackOptions& o = f.stack;
  auto process = twinspan::serving::StartTargetProcess(f, &twinspan::serving::OpenInProcessDrafter);
  if (!process.ok()) {
    spdlog::error("{}", process.status().ToString());
    return 1;
  }
  twinspan::serving::TargetStack& stack = *process->stack;
  twinspan::rpc::ServingService service(&stack.backend(), {f.max_request_duration()});
  twinspan::rpc::ServerOptions options;
  options.listen = f.listen;
  options.max_message_bytes = o.max_message_bytes;
  options.credentials = process->security.server_credentials;
  options.health_services = {twinspan::v1::Serving::service_full_name()};
  auto server = twinspan::rpc::RunningServer::Start(options, {&service});
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  twinspan::rpc::AnnounceListening(o.name, (*server)->port(), process->http->port());

  twinspan::serving::DrainOnSignal(o.name, f.drain_seconds, **server, stack);
  spdlog::info("{}: stopped", o.name);
  return 0;
}

}  // namespace

// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) { return Run(argc, argv); }
