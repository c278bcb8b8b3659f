// How a channel to another Twinspan process is dialled: plaintext, TLS or mutual TLS. Made from
// flags by MakeChannelSecurity (grpc_credentials.h); the default is plaintext.
#ifndef TWINSPAN_SERVICES_SECURITY_CHANNEL_SECURITY_H_
#define TWINSPAN_SERVICES_SECURITY_CHANNEL_SECURITY_H_

#include <memory>
#include <string>

namespace grpc {
class ChannelArguments;
class ChannelCredentials;
}  // namespace grpc

namespace twinspan::security {

// A value; copies share the credentials (thread-safe).
struct ChannelSecurity {
  std::shared_ptr<grpc::ChannelCredentials> credentials;  // null: plaintext
  // The name the server's certificate must carry, when it is not the dialled address's host.
  std::string server_name;

  bool tls() const { return credentials != nullptr; }
  // The credentials to dial with: `credentials`, or insecure ones when null.
  std::shared_ptr<grpc::ChannelCredentials> CredentialsOrInsecure() const;
  // Adds the server-name override to `args` when one is set.
  void ApplyTo(grpc::ChannelArguments* args) const;
};

}  // namespace twinspan::security

#endif  // TWINSPAN_SERVICES_SECURITY_CHANNEL_SECURITY_H_
