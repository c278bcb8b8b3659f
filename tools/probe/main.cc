// twinspan-probe: the client a container image and a cluster need without Python: `health` asks a
// server's grpc.health.v1 service (the image's HEALTHCHECK, exec probes over TLS), `generate` sends
// one request and prints its final message as JSON (helm test, smoke checks). Exit 0 only on
// success, so a shell or a probe can act on the status alone.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "common/status.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "twinspan/v1/serving.grpc.pb.h"

namespace {

struct Connection {
  std::string address;
  double timeout_seconds = 5;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_server_name;
  std::string auth_token_file;
};

absl::StatusOr<std::string> ReadFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(flag + ": cannot open " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Plaintext unless a CA is given; a client certificate and key go together (mutual TLS).
absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenChannel(const Connection& c) {
  if (c.tls_ca.empty()) {
    if (!c.tls_cert.empty() || !c.tls_key.empty())
      return absl::InvalidArgumentError("--tls-cert and --tls-key need --tls-ca");
    return grpc::CreateChannel(c.address, grpc::InsecureChannelCredentials());
  }
  if (c.tls_cert.empty() != c.tls_key.empty())
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  grpc::SslCredentialsOptions ssl;
  ABSL_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadFile("--tls-ca", c.tls_ca));
  if (!c.tls_cert.empty()) {
    ABSL_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadFile("--tls-cert", c.tls_cert));
    ABSL_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadFile("--tls-key", c.tls_key));
  }
  grpc::ChannelArguments args;
  if (!c.tls_server_name.empty()) args.SetSslTargetNameOverride(c.tls_server_name);
  return grpc::CreateCustomChannel(c.address, grpc::SslCredentials(ssl), args);
}

absl::Status PrepareContext(const Connection& c, grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(c.timeout_seconds * 1e3)));
  if (c.auth_token_file.empty()) return absl::OkStatus();
  ABSL_ASSIGN_OR_RETURN(std::string token, ReadFile("--auth-token-file", c.auth_token_file));
  token = std::string(absl::StripAsciiWhitespace(token));
  if (token.empty()) return absl::InvalidArgumentError(c.auth_token_file + " holds no token");
  context->AddMetadata("authorization", "Bearer " + token);
  return absl::OkStatus();
}

absl::Status FromGrpc(const std::string& what, const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      what + ": " + s.error_message());
}

absl::Status Health(const Connection& c, const std::string& service) {
  ABSL_ASSIGN_OR_RETURN(auto channel, OpenChannel(c));
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  ABSL_RETURN_IF_ERROR(PrepareContext(c, &context));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  ABSL_RETURN_IF_ERROR(FromGrpc(c.address + " health", stub->Check(&context, request, &response)));
  if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError(
        c.address +
        " health: " + grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status()));
  }
  std::printf("%s SERVING\n", c.address.c_str());
  return absl::OkStatus();
}

struct GenerateOptions {
  std::string prompt;
  uint32_t max_tokens = 8;
  std::string head_variant;
  bool plain = false;
};

absl::Status Generate(const Connection& c, const GenerateOptions& g) {
  ABSL_ASSIGN_OR_RETURN(auto channel, OpenChannel(c));
  auto stub = twinspan::v1::Serving::NewStub(channel);
  grpc::ClientContext context;
  ABSL_RETURN_IF_ERROR(PrepareContext(c, &context));
  twinspan::v1::GenerateRequest request;
  request.set_request_id("twinspan-probe");
  request.set_prompt(g.prompt);
  request.set_head_variant(g.head_variant);
  request.mutable_sampling()->set_max_tokens(g.max_tokens);
  request.mutable_sampling()->mutable_draft()->set_value(!g.plain);
  auto reader = stub->Generate(&context, request);
  std::string text;
  twinspan::v1::GenerateResponse response;
  twinspan::v1::GenerateFinal final;
  bool have_final = false;
  while (reader->Read(&response)) {
    if (response.has_chunk()) text += response.chunk().text();
    if (response.has_final()) {
      final = response.final();
      have_final = true;
    }
  }
  ABSL_RETURN_IF_ERROR(FromGrpc(c.address + " Generate", reader->Finish()));
  if (!have_final) return absl::DataLossError(c.address + " Generate: no final message");
  if (final.completion_tokens() == 0)
    return absl::DataLossError(c.address + " Generate: no token generated");
  const nlohmann::json out = {
      {"text", text},
      {"token_sha256", final.token_sha256()},
      {"prompt_tokens", final.prompt_tokens()},
      {"completion_tokens", final.completion_tokens()},
      {"drafted", final.drafted()},
      {"accepted", final.accepted()},
      {"rounds", final.rounds()},
      {"head_variant", final.head_variant()},
      {"served_by", final.served_by()},
      {"finish_reason", twinspan::v1::FinishReason_Name(final.finish_reason())},
  };
  std::printf("%s\n", out.dump().c_str());
  return absl::OkStatus();
}

void AddConnectionOptions(CLI::App* app, Connection* c) {
  app->add_option("--addr", c->address, "server address, host:port")->required();
  app->add_option("--timeout", c->timeout_seconds, "deadline of the call in seconds")
      ->check(CLI::PositiveNumber);
  app->add_option("--tls-ca", c->tls_ca, "CA bundle (PEM) that signed the server's certificate");
  app->add_option("--tls-cert", c->tls_cert, "client certificate (PEM), for mutual TLS");
  app->add_option("--tls-key", c->tls_key, "client private key (PEM), for mutual TLS");
  app->add_option("--tls-server-name", c->tls_server_name,
                  "name the server's certificate must carry, when it differs from --addr's host");
  app->add_option("--auth-token-file", c->auth_token_file,
                  "file holding a bearer token sent as 'authorization: Bearer <token>'");
}

}  // namespace

// CLI11_PARSE catches CLI11's own exceptions; any other (bad_alloc) should end the program.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  CLI::App app{"Probe a Twinspan server: gRPC health, or one Generate request"};
  app.require_subcommand(1);
  Connection health_connection;
  std::string service;
  CLI::App* health = app.add_subcommand("health", "grpc.health.v1 Check; exit 0 when SERVING");
  AddConnectionOptions(health, &health_connection);
  health->add_option("--service", service, "service name to check (default: the server's)");

  Connection generate_connection;
  GenerateOptions options;
  CLI::App* generate =
      app.add_subcommand("generate", "one Generate request; prints its final message as JSON");
  AddConnectionOptions(generate, &generate_connection);
  generate_connection.timeout_seconds = 60;
  generate->add_option("--prompt", options.prompt, "prompt text (no chat template)")->required();
  generate->add_option("--max-tokens", options.max_tokens, "tokens to generate")
      ->check(CLI::Range(1, 4096));
  generate->add_option("--head-variant", options.head_variant,
                       "head variant to ask for (router: pins the pool)");
  generate->add_flag("--plain", options.plain, "draft: false (plain decoding)");
  CLI11_PARSE(app, argc, argv);

  const absl::Status status = health->parsed() ? Health(health_connection, service)
                                               : Generate(generate_connection, options);
  if (!status.ok()) {
    std::fprintf(stderr, "twinspan-probe: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
