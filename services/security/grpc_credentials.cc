#include "services/security/grpc_credentials.h"

#include <algorithm>
#include <string>

#include "grpcpp/security/credentials.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "grpcpp/support/channel_arguments.h"

namespace twinspan::security {
namespace {

unsigned int IntervalSeconds(absl::Duration interval) {
  return static_cast<unsigned int>(std::max<int64_t>(1, absl::ToInt64Seconds(interval)));
}

}  // namespace

std::shared_ptr<grpc::ChannelCredentials> ChannelSecurity::CredentialsOrInsecure() const {
  return credentials != nullptr ? credentials : grpc::InsecureChannelCredentials();
}

void ChannelSecurity::ApplyTo(grpc::ChannelArguments* args) const {
  if (!server_name.empty()) args->SetSslTargetNameOverride(server_name);
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const ServerTlsFiles& files, const std::shared_ptr<grpc::AuthMetadataProcessor>& auth) {
  if (!files.enabled()) return grpc::InsecureServerCredentials();
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      files.key_file, files.cert_file, files.client_ca_file,
      IntervalSeconds(files.reload_interval));
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (files.client_ca_file.empty()) {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  } else {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::experimental::TlsServerCredentials(options);
  if (auth != nullptr) credentials->SetAuthMetadataProcessor(auth);
  return credentials;
}

ChannelSecurity MakeChannelSecurity(const ClientTlsFiles& files) {
  ChannelSecurity security;
  if (!files.enabled()) return security;
  grpc::experimental::TlsChannelCredentialsOptions options;
  if (!files.ca_file.empty() || !files.cert_file.empty()) {
    options.set_certificate_provider(
        std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
            files.key_file, files.cert_file, files.ca_file,
            IntervalSeconds(files.reload_interval)));
  }
  if (!files.ca_file.empty()) options.watch_root_certs();
  if (!files.cert_file.empty()) options.watch_identity_key_cert_pairs();
  options.set_verify_server_certs(true);
  security.credentials = grpc::experimental::TlsCredentials(options);
  security.server_name = files.server_name;
  return security;
}

}  // namespace twinspan::security
