#include "services/rpc/status_mapping.h"

#include <optional>
#include <string>

#include "common/error_reason.h"
#include "twinspan/v1/error.pb.h"

namespace twinspan::rpc {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl::StatusCode and grpc::StatusCode share the google.rpc.Code numbering.
  const auto code = static_cast<grpc::StatusCode>(status.code());
  const std::string message(status.message());
  const std::optional<ErrorReason> why = GetErrorReason(status);
  if (!why.has_value()) return grpc::Status(code, message);
  v1::ErrorInfo info;
  info.set_reason(why->reason);
  info.set_param(why->param);
  v1::RpcStatus details;
  details.set_code(static_cast<int32_t>(status.code()));
  details.set_message(message);
  details.add_details()->PackFrom(info);
  return grpc::Status(code, message, details.SerializeAsString());
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status result(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  v1::RpcStatus details;
  if (status.error_details().empty() || !details.ParseFromString(status.error_details())) {
    return result;
  }
  for (const google::protobuf::Any& any : details.details()) {
    v1::ErrorInfo info;
    if (any.UnpackTo(&info)) return WithErrorReason(result, {info.reason(), info.param()});
  }
  return result;
}

}  // namespace twinspan::rpc
