// What every Twinspan server process does the same way: gRPC server with health checking and
// reflection, explicit message-size limits, /metrics, SIGTERM drain, and spdlog set up per role.
#ifndef TWINSPAN_SERVICES_RPC_SERVER_RUNNER_H_
#define TWINSPAN_SERVICES_RPC_SERVER_RUNNER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"

namespace twinspan::rpc {

struct ServerOptions {
  std::string listen = "127.0.0.1:0";  // port 0 picks a free one
  int max_message_bytes = 64 << 20;    // receive and send limit
  int max_concurrent_streams = 1024;   // per HTTP/2 connection
  absl::Duration drain_timeout = absl::Seconds(30);
  // TLS, mutual TLS and bearer tokens (security::OpenSecurity); null: plaintext.
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // Service names grpc.health.v1 answers besides "" (probes name the service they check).
  std::vector<std::string> health_services;
};

// Starts and stops one gRPC server. Thread-safe.
class RunningServer {
 public:
  // Builds the server with `services`, grpc.health.v1 (SERVING) and reflection. The services are
  // not owned and must outlive the server. Unavailable when `listen` cannot be bound.
  static absl::StatusOr<std::unique_ptr<RunningServer>> Start(
      const ServerOptions& options, const std::vector<grpc::Service*>& services);
  ~RunningServer();

  int port() const { return port_; }
  // Health status of the whole server ("" and every name of ServerOptions::health_services).
  void SetServing(bool serving);
  // Stops accepting, lets calls finish until `deadline`, then cancels the rest.
  void Shutdown(absl::Time deadline);

 private:
  RunningServer(std::unique_ptr<grpc::Server> server, int port)
      : server_(std::move(server)), port_(port) {}
  std::unique_ptr<grpc::Server> server_;
  int port_;
  bool shut_down_ = false;
};

// Sets the default spdlog logger's name to `role` and a pattern that carries it; call first.
void SetUpLogging(const std::string& role, const std::string& level);
// Blocks SIGTERM and SIGINT in this thread and the threads it starts later; call before any thread
// starts. WaitForTerminationSignal then returns the signal that arrived.
void BlockTerminationSignals();
int WaitForTerminationSignal();

// Prints "<role> listening grpc=<port> metrics=<port>" on stdout (tests and scripts read it),
// then " http=<port>" when the process serves the HTTP API (http_port > 0).
void AnnounceListening(const std::string& role, int grpc_port, int metrics_port, int http_port = 0);

}  // namespace twinspan::rpc

#endif  // TWINSPAN_SERVICES_RPC_SERVER_RUNNER_H_
