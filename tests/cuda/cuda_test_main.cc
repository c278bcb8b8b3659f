// main() of the kernels/cuda GPU tests: gtest, then one summary line a run log can be grepped for:
// "<binary>: <passed>/<total> passed on <GPU name>" (or "no CUDA device").
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  std::string binary = argv[0];
  if (const size_t slash = binary.rfind('/'); slash != std::string::npos) {
    binary = binary.substr(slash + 1);
  }
  cudaDeviceProp prop;
  int device = 0;
  const bool have_gpu = cudaGetDevice(&device) == cudaSuccess &&
                        cudaGetDeviceProperties(&prop, device) == cudaSuccess;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  std::printf("SUMMARY %s: %d/%d passed, %d failed, %d skipped on %s\n", binary.c_str(),
              unit.successful_test_count(), unit.test_to_run_count(), unit.failed_test_count(),
              unit.skipped_test_count(), have_gpu ? prop.name : "no CUDA device");
  return rc;
}
