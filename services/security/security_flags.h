// The security flags every server binary spells the same way, and what they open: the gRPC port's
// credentials (TLS, mutual TLS, bearer tokens), the token check for /metrics, and how the process
// dials the others.
//
//   --tls-cert, --tls-key        serve TLS on the gRPC port
//   --tls-ca                     and require client certificates signed by this CA (mutual TLS)
//   --tls-reload-seconds         how often certificate and key files are read again
//   --auth-token-file            require "authorization: Bearer <token>" (public API ports)
//   --auth-exempt-health-metrics grpc.health.v1 and /metrics answer without a token
//   --upstream-tls-ca, --upstream-tls-cert, --upstream-tls-key, --upstream-tls-server-name
//                                dial the drafter (target) or the workers (router) over TLS
#ifndef TWINSPAN_SERVICES_SECURITY_SECURITY_FLAGS_H_
#define TWINSPAN_SERVICES_SECURITY_SECURITY_FLAGS_H_

#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "common/auth/bearer_token_auth.h"
#include "grpcpp/security/server_credentials.h"
#include "services/security/channel_security.h"
#include "services/security/tls_files.h"

namespace twinspan::security {

struct SecurityFlags {
  ServerTlsFiles tls;
  ClientTlsFiles upstream;
  std::string auth_token_file;
  bool auth_exempt_health_metrics = false;
  double tls_reload_seconds = 10;
};

// Which flags a binary has: every server has the port's TLS flags.
struct SecurityFlagSet {
  bool token_auth = false;    // a public API port (router, target, serve)
  bool upstream_tls = false;  // dials other Twinspan processes (target, router)
};

void AddSecurityFlags(CLI::App& app, SecurityFlags& flags, SecurityFlagSet set);

// What a process serves and dials with. Copies share the parts (thread-safe).
struct ProcessSecurity {
  std::shared_ptr<grpc::ServerCredentials> server_credentials;  // insecure when no TLS
  bool tls = false;          // the gRPC port serves TLS (--tls-cert, --tls-key)
  ServerTlsFiles tls_files;  // its files, which the HTTP API serves HTTPS with too
  std::shared_ptr<auth::BearerTokenAuth> token_auth;  // null: no token required
  bool exempt_health_metrics = false;
  ChannelSecurity upstream;  // plaintext when no --upstream-tls-*

  // The check /metrics applies: null when it is open.
  auth::BearerTokenAuth* metrics_auth() const {
    return exempt_health_metrics ? nullptr : token_auth.get();
  }
};

// Checks the flags and files and opens the credentials; logs what the process will serve and dial
// with. InvalidArgument naming the flag (and file) for anything unusable: a certificate without
// its key, a key of another certificate, an expired certificate, an empty token file, a token
// file on a plaintext port (gRPC checks tokens only on TLS ports, and a token sent in clear text
// is anyone's), --auth-exempt-health-metrics without --auth-token-file.
absl::StatusOr<ProcessSecurity> OpenSecurity(const SecurityFlags& flags);

}  // namespace twinspan::security

#endif  // TWINSPAN_SERVICES_SECURITY_SECURITY_FLAGS_H_
