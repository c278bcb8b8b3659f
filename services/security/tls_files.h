// The certificate files of a TLS port or of a TLS client, and their check at startup: gRPC's file
// watcher only logs a bad file and then fails every handshake, so a typo must stop the process
// first, with the file's name.
#ifndef TWINSPAN_SERVICES_SECURITY_TLS_FILES_H_
#define TWINSPAN_SERVICES_SECURITY_TLS_FILES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace twinspan::security {

// A gRPC port's TLS: --tls-cert, --tls-key, --tls-ca.
struct ServerTlsFiles {
  std::string cert_file;  // PEM certificate chain, leaf first; empty: plaintext
  std::string key_file;   // PEM private key of the leaf
  // PEM CA bundle; set: every client must present a certificate it signed (mutual TLS).
  std::string client_ca_file;
  // How often the files are read again (certificate rotation without a restart).
  absl::Duration reload_interval = absl::Seconds(10);

  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

// How this process dials another (a target its drafter, the router its workers):
// --upstream-tls-ca, --upstream-tls-cert, --upstream-tls-key, --upstream-tls-server-name.
struct ClientTlsFiles {
  std::string ca_file;  // PEM CA bundle the server's certificate must chain to; empty: system roots
  std::string cert_file;  // PEM client certificate chain (mutual TLS); empty: none
  std::string key_file;
  // The name the server's certificate must carry when it is not the dialled address's host.
  std::string server_name;
  absl::Duration reload_interval = absl::Seconds(10);

  bool enabled() const { return !ca_file.empty() || !cert_file.empty() || !key_file.empty(); }
};

// OK when TLS is off or the files are usable: the certificate and key parse, belong together and
// the certificate has not expired; the CA bundle holds at least one certificate. InvalidArgument
// naming the flag, the file and the fix otherwise.
absl::Status CheckServerTlsFiles(const ServerTlsFiles& files);
absl::Status CheckClientTlsFiles(const ClientTlsFiles& files);

}  // namespace twinspan::security

#endif  // TWINSPAN_SERVICES_SECURITY_TLS_FILES_H_
