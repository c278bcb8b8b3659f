#include "services/rpc/server_runner.h"

#include <signal.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace twinspan::rpc {

absl::StatusOr<std::unique_ptr<RunningServer>> RunningServer::Start(
    const ServerOptions& options, const std::vector<grpc::Service*>& services) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(
      options.listen,
      options.credentials != nullptr ? options.credentials : grpc::InsecureServerCredentials(),
      &port);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams);
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen));
  }
  for (const std::string& name : options.health_services) {
    server->GetHealthCheckService()->SetServingStatus(name, true);
  }
  server->GetHealthCheckService()->SetServingStatus(true);
  return std::unique_ptr<RunningServer>(new RunningServer(std::move(server), port));
}

RunningServer::~RunningServer() { Shutdown(absl::Now()); }

void RunningServer::SetServing(bool serving) {
  server_->GetHealthCheckService()->SetServingStatus(serving);
}

void RunningServer::Shutdown(absl::Time deadline) {
  if (shut_down_) return;
  shut_down_ = true;
  server_->GetHealthCheckService()->SetServingStatus(false);
  server_->Shutdown(absl::ToChronoTime(deadline));
  server_->Wait();
}

void SetUpLogging(const std::string& role, const std::string& level) {
  // Logs go to stderr; stdout carries only the "listening" line scripts read.
  spdlog::set_default_logger(spdlog::stderr_color_mt(role));
  spdlog::default_logger()->set_pattern(absl::StrCat("%Y-%m-%dT%H:%M:%S.%e ", role, " %^%l%$ %v"));
  spdlog::set_level(spdlog::level::from_str(level));
}

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForTerminationSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int signal = 0;
  sigwait(&set, &signal);
  return signal;
}

void AnnounceListening(const std::string& role, int grpc_port, int metrics_port, int http_port) {
  if (http_port > 0) {
    std::printf("%s listening grpc=%d metrics=%d http=%d\n", role.c_str(), grpc_port, metrics_port,
                http_port);
  } else {
    std::printf("%s listening grpc=%d metrics=%d\n", role.c_str(), grpc_port, metrics_port);
  }
  std::fflush(stdout);
}

}  // namespace twinspan::rpc
