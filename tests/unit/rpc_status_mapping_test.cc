// Codes, messages and ErrorReasons survive absl::Status -> grpc::Status -> absl::Status, so a
// router's HTTP front names a target's refusal as the target did.
#include "common/error_reason.h"
#include "gtest/gtest.h"
#include "services/rpc/status_mapping.h"
#include "twinspan/v1/error.pb.h"

namespace twinspan::rpc {
namespace {

TEST(StatusMappingTest, ReasonAndParamCrossTheWire) {
  const absl::Status refused =
      WithErrorReason(absl::ResourceExhaustedError("request: prompt has 9 tokens; the limit is 4"),
                      {kContextLengthExceeded, "prompt"});
  const grpc::Status wire = ToGrpcStatus(refused);
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  v1::RpcStatus details;  // google.rpc.Status's wire form for standard clients.
  ASSERT_TRUE(details.ParseFromString(wire.error_details()));
  EXPECT_EQ(details.code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  ASSERT_EQ(details.details_size(), 1);
  EXPECT_EQ(details.details(0).type_url(), kErrorReasonUrl);

  const absl::Status back = FromGrpcStatus(wire);
  EXPECT_EQ(back.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(back.message(), refused.message());
  const std::optional<ErrorReason> why = GetErrorReason(back);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->reason, kContextLengthExceeded);
  EXPECT_EQ(why->param, "prompt");
}

TEST(StatusMappingTest, PlainStatusesAndForeignDetails) {
  const grpc::Status wire = ToGrpcStatus(absl::UnavailableError("draining"));
  EXPECT_TRUE(wire.error_details().empty());
  const absl::Status back = FromGrpcStatus(wire);
  EXPECT_EQ(back.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(GetErrorReason(back).has_value());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  // Details that are not ours, or not a status at all, leave the code and message alone.
  const absl::Status junk =
      FromGrpcStatus(grpc::Status(grpc::StatusCode::INTERNAL, "boom", std::string("\xff\x01", 2)));
  EXPECT_EQ(junk.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(junk.message(), "boom");
  EXPECT_FALSE(GetErrorReason(junk).has_value());
}

}  // namespace
}  // namespace twinspan::rpc
