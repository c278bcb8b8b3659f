// absl::Status <-> grpc::Status in one place: the codes are the same numbers, the message is kept,
// and an ErrorReason (common/error_reason.h) travels as an ErrorInfo in the status details.
#ifndef TWINSPAN_SERVICES_RPC_STATUS_MAPPING_H_
#define TWINSPAN_SERVICES_RPC_STATUS_MAPPING_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace twinspan::rpc {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace twinspan::rpc

#endif  // TWINSPAN_SERVICES_RPC_STATUS_MAPPING_H_
