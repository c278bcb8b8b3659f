// TWINSPAN_CUDA_PDL's values (kernels/cuda/pdl_scope.h), on the CPU.
#include "kernels/cuda/pdl_scope.h"

#include <gtest/gtest.h>

#include <string>

namespace twinspan::cuda {
namespace {

TEST(PdlScope, KnownValuesAndTheDefault) {
  EXPECT_EQ(*ParsePdlScope(""), PdlScope::kAll);
  EXPECT_EQ(*ParsePdlScope("all"), PdlScope::kAll);
  EXPECT_EQ(*ParsePdlScope("exl3"), PdlScope::kExl3);
  EXPECT_EQ(*ParsePdlScope("none"), PdlScope::kNone);
}

TEST(PdlScope, AnUnknownValueIsAnErrorNamingTheVariableAndItsValues) {
  for (const char* bad : {"ALL", "off", "0", "exl3 "}) {
    const absl::StatusOr<PdlScope> s = ParsePdlScope(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(s.status().message());
    EXPECT_NE(message.find(std::string("TWINSPAN_CUDA_PDL=") + bad), std::string::npos) << message;
    EXPECT_NE(message.find("all, exl3 or none"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace twinspan::cuda
