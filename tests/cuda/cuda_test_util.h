// Helpers for the GPU tests of kernels/cuda: device arrays that are poisoned before an op runs,
// launch checks, random inputs that are never zero, and the error measures the tests state.
#ifndef TWINSPAN_TESTS_CUDA_CUDA_TEST_UTIL_H_
#define TWINSPAN_TESTS_CUDA_CUDA_TEST_UTIL_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace twinspan::cuda::testing {

// The last launch's error and every asynchronous error so far, as gtest failures.
#define EXPECT_CUDA_CLEAN()                                                   \
  do {                                                                        \
    const cudaError_t launch_error = cudaGetLastError();                      \
    EXPECT_EQ(launch_error, cudaSuccess) << cudaGetErrorString(launch_error); \
    const cudaError_t sync_error = cudaDeviceSynchronize();                   \
    EXPECT_EQ(sync_error, cudaSuccess) << cudaGetErrorString(sync_error);     \
  } while (false)

// A device copy of n elements of T. Move-only.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t n) : n_(n) {
    if (n > 0) {
      EXPECT_EQ(cudaMalloc(&ptr_, n * sizeof(T)), cudaSuccess);
    }
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { Upload(host); }
  DeviceArray(DeviceArray&& other) noexcept : ptr_(other.ptr_), n_(other.n_) {
    other.ptr_ = nullptr;
    other.n_ = 0;
  }
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(n_, other.n_);
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(ptr_); }

  T* get() const { return static_cast<T*>(ptr_); }
  size_t size() const { return n_; }

  void Upload(const std::vector<T>& host) {
    ASSERT_LE(host.size(), n_);
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  std::vector<T> Download() const {
    std::vector<T> host(n_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  // All bytes 0xFF: NaN for floats, -1 for integers, so an element an op failed to write shows.
  void Poison() { EXPECT_EQ(cudaMemset(ptr_, 0xFF, n_ * sizeof(T)), cudaSuccess); }

 private:
  void* ptr_ = nullptr;
  size_t n_ = 0;
};

inline uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline bool IsPoison(float f) { return Bits(f) == 0xFFFFFFFFu; }

// Uniform in [-scale, scale], never 0 (values nearer than scale / 1000 move away from it).
std::vector<float> RandomFloats(size_t n, uint32_t seed, float scale = 1.0f);

// Count of positions where the bits differ (NaN compares by bits too).
size_t BitMismatches(const std::vector<float>& a, const std::vector<float>& b);

// ||a - ref||_F / ||ref||_F; infinity when a holds a non-finite value ref does not.
double RelFro(const std::vector<float>& a, const std::vector<float>& ref);

// Counts elements with |a - ref| > rel * |ref| + abs (or a non-finite a).
size_t OutsideTolerance(const std::vector<float>& a, const std::vector<float>& ref, double rel,
                        double abs);

}  // namespace twinspan::cuda::testing

#endif  // TWINSPAN_TESTS_CUDA_CUDA_TEST_UTIL_H_
