// The bearer-token check on a gRPC port: gRPC's AuthMetadataProcessor hook, run on every call
// before any handler, so health checks and reflection are covered as well as the Serving API.
#ifndef TWINSPAN_SERVICES_SECURITY_TOKEN_AUTH_PROCESSOR_H_
#define TWINSPAN_SERVICES_SECURITY_TOKEN_AUTH_PROCESSOR_H_

#include <memory>

#include "common/auth/bearer_token_auth.h"
#include "grpcpp/security/auth_metadata_processor.h"

namespace twinspan::security {

// Thread-safe. Refuses a call without "authorization: Bearer <token>" for a token of `auth` with
// UNAUTHENTICATED and the same message whatever was wrong; a call that passes no longer carries
// the header (handlers never see, log or forward it). With `exempt_health`, grpc.health.v1 calls
// pass without a token (probes that cannot send one).
class TokenAuthProcessor final : public grpc::AuthMetadataProcessor {
 public:
  TokenAuthProcessor(std::shared_ptr<auth::BearerTokenAuth> auth, bool exempt_health)
      : auth_(std::move(auth)), exempt_health_(exempt_health) {}

  // The check is a digest and a compare (a file read at most once a reload interval): inline.
  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  const std::shared_ptr<auth::BearerTokenAuth> auth_;
  const bool exempt_health_;
};

}  // namespace twinspan::security

#endif  // TWINSPAN_SERVICES_SECURITY_TOKEN_AUTH_PROCESSOR_H_
