// gRPC credentials for a port and for a dialled channel, on gRPC's own TLS machinery: a
// FileWatcherCertificateProvider reads the files again every reload interval, so certificates
// rotate without a restart.
#ifndef TWINSPAN_SERVICES_SECURITY_GRPC_CREDENTIALS_H_
#define TWINSPAN_SERVICES_SECURITY_GRPC_CREDENTIALS_H_

#include <memory>

#include "grpcpp/security/auth_metadata_processor.h"
#include "grpcpp/security/server_credentials.h"
#include "services/security/channel_security.h"
#include "services/security/tls_files.h"

namespace twinspan::security {

// TLS credentials for a port (mutual TLS when files.client_ca_file is set), with `auth` run on
// every call when not null. Insecure credentials when TLS is off.
// REQUIRES: CheckServerTlsFiles(files) is OK; `auth` is null when TLS is off (gRPC runs an auth
// processor only on secure ports).
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const ServerTlsFiles& files, const std::shared_ptr<grpc::AuthMetadataProcessor>& auth);

// TLS (with a client certificate when files.cert_file is set) verifying the server against
// files.ca_file, or the system's roots when it is empty; plaintext when TLS is off.
// REQUIRES: CheckClientTlsFiles(files) is OK.
ChannelSecurity MakeChannelSecurity(const ClientTlsFiles& files);

}  // namespace twinspan::security

#endif  // TWINSPAN_SERVICES_SECURITY_GRPC_CREDENTIALS_H_
