#include "services/security/token_auth_processor.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "spdlog/spdlog.h"

namespace twinspan::security {
namespace {

absl::string_view View(const grpc::string_ref& s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

grpc::Status TokenAuthProcessor::Process(const InputMetadata& auth_metadata, grpc::AuthContext*,
                                         OutputMetadata* consumed_auth_metadata, OutputMetadata*) {
  auto path = auth_metadata.find(":path");
  const absl::string_view method = path == auth_metadata.end() ? "" : View(path->second);
  if (exempt_health_ && absl::StartsWith(method, "/grpc.health.v1.Health/")) {
    return grpc::Status::OK;
  }
  auto header = auth_metadata.find("authorization");
  const absl::string_view value = header == auth_metadata.end() ? "" : View(header->second);
  if (!auth_->Check(value).ok()) {
    spdlog::debug("auth: refused a call to {}", std::string(method));
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, auth::kUnauthenticatedMessage);
  }
  consumed_auth_metadata->emplace("authorization", std::string(value));
  return grpc::Status::OK;
}

}  // namespace twinspan::security
