// twinspan-quantize's --device (tools/quantize/open_encoder.h) as a build without CUDA sees it:
// cpu opens the CPU encoder, cuda:N is refused saying the build has no CUDA, anything else is bad.
#include "tools/quantize/open_encoder.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace twinspan::quantize {
namespace {

TEST(OpenEncoderCpuOnlyTest, CpuOpensTheCpuEncoder) {
  cpu::ThreadPool pool(2);
  absl::StatusOr<std::unique_ptr<exl3::quantize::TileEncoder>> cpu = OpenTileEncoder("cpu", &pool);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ((*cpu)->name(), "cpu");
}

TEST(OpenEncoderCpuOnlyTest, CudaIsRefusedNamingTheFlagAndTheBuild) {
  cpu::ThreadPool pool(1);
  for (const char* device : {"cuda:0", "cuda:3"}) {
    absl::StatusOr<std::unique_ptr<exl3::quantize::TileEncoder>> cuda =
        OpenTileEncoder(device, &pool);
    ASSERT_FALSE(cuda.ok()) << device;
    EXPECT_EQ(cuda.status().code(), absl::StatusCode::kUnimplemented) << cuda.status();
    const std::string message(cuda.status().message());
    EXPECT_NE(message.find(std::string("--device ") + device + ": this build has no CUDA"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("--device cpu"), std::string::npos) << message;
  }
}

TEST(OpenEncoderCpuOnlyTest, OtherDevicesAreInvalid) {
  cpu::ThreadPool pool(1);
  for (const char* device : {"gpu0", "", "CPU"}) {
    absl::StatusOr<std::unique_ptr<exl3::quantize::TileEncoder>> bad =
        OpenTileEncoder(device, &pool);
    ASSERT_FALSE(bad.ok()) << device;
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
    EXPECT_NE(bad.status().message().find("cpu or cuda:N"), std::string::npos) << bad.status();
  }
}

}  // namespace
}  // namespace twinspan::quantize
