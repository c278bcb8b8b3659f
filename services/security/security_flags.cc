#include "services/security/security_flags.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "services/security/grpc_credentials.h"
#include "services/security/token_auth_processor.h"
#include "spdlog/spdlog.h"

namespace twinspan::security {

void AddSecurityFlags(CLI::App& app, SecurityFlags& f, SecurityFlagSet set) {
  app.add_option("--tls-cert", f.tls.cert_file,
                 "PEM certificate chain (leaf first) of the gRPC port: serve TLS");
  app.add_option("--tls-key", f.tls.key_file, "PEM private key of --tls-cert");
  app.add_option("--tls-ca", f.tls.client_ca_file,
                 "PEM CA bundle: clients must present a certificate it signed (mutual TLS)");
  app.add_option("--tls-reload-seconds", f.tls_reload_seconds,
                 "How often certificate, key and CA files are read again (rotation)");
  if (set.token_auth) {
    app.add_option("--auth-token-file", f.auth_token_file,
                   "File of bearer tokens, one a line, read again when it changes: every call "
                   "needs 'authorization: Bearer <token>' (needs --tls-cert)");
    app.add_flag("--auth-exempt-health-metrics", f.auth_exempt_health_metrics,
                 "grpc.health.v1 and /metrics answer without a token");
  }
  if (set.upstream_tls) {
    app.add_option("--upstream-tls-ca", f.upstream.ca_file,
                   "Dial over TLS, verifying the peer's certificate against this PEM CA bundle");
    app.add_option("--upstream-tls-cert", f.upstream.cert_file,
                   "PEM client certificate chain to present when dialling (mutual TLS)");
    app.add_option("--upstream-tls-key", f.upstream.key_file,
                   "PEM private key of --upstream-tls-cert");
    app.add_option("--upstream-tls-server-name", f.upstream.server_name,
                   "Name the peer's certificate must carry when it is not the dialled host");
  }
}

absl::StatusOr<ProcessSecurity> OpenSecurity(const SecurityFlags& flags) {
  ServerTlsFiles tls = flags.tls;
  ClientTlsFiles upstream = flags.upstream;
  tls.reload_interval = upstream.reload_interval = absl::Seconds(flags.tls_reload_seconds);
  if (absl::Status s = CheckServerTlsFiles(tls); !s.ok()) return s;
  if (absl::Status s = CheckClientTlsFiles(upstream); !s.ok()) return s;
  if (flags.auth_exempt_health_metrics && flags.auth_token_file.empty()) {
    return absl::InvalidArgumentError(
        "--auth-exempt-health-metrics needs --auth-token-file: without tokens everything is open");
  }
  ProcessSecurity security;
  std::shared_ptr<grpc::AuthMetadataProcessor> processor;
  if (!flags.auth_token_file.empty()) {
    if (!tls.enabled()) {
      return absl::InvalidArgumentError(
          "--auth-token-file needs --tls-cert and --tls-key: gRPC checks call credentials only "
          "on a TLS port, and a token sent in clear text is anyone's who sees the traffic");
    }
    auth::BearerTokenOptions options;
    options.token_file = flags.auth_token_file;
    absl::StatusOr<std::unique_ptr<auth::BearerTokenAuth>> token_auth =
        auth::BearerTokenAuth::Open(options);
    if (!token_auth.ok()) return token_auth.status();
    security.token_auth = *std::move(token_auth);
    security.exempt_health_metrics = flags.auth_exempt_health_metrics;
    processor =
        std::make_shared<TokenAuthProcessor>(security.token_auth, flags.auth_exempt_health_metrics);
  }
  security.server_credentials = MakeServerCredentials(tls, processor);
  security.tls = tls.enabled();
  security.tls_files = tls;
  security.upstream = MakeChannelSecurity(upstream);

  std::string port = "plaintext";
  if (tls.enabled()) {
    port = tls.client_ca_file.empty()
               ? absl::StrCat("TLS (", tls.cert_file, ")")
               : absl::StrCat("mutual TLS (", tls.cert_file, "; clients signed by ",
                              tls.client_ca_file, ")");
  }
  if (security.token_auth != nullptr) {
    absl::StrAppend(&port, ", bearer tokens from ", flags.auth_token_file,
                    security.exempt_health_metrics ? " (health and /metrics exempt)" : "");
  }
  std::string dial = "plaintext";
  if (upstream.enabled()) {
    dial = absl::StrCat(upstream.cert_file.empty() ? "TLS" : "mutual TLS", " (CA ",
                        upstream.ca_file.empty() ? "system roots" : upstream.ca_file, ")");
  }
  spdlog::info("security: gRPC port {}; dials {}", port, dial);
  return security;
}

}  // namespace twinspan::security
