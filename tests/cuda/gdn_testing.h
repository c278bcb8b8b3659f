// Helpers of the Gated DeltaNet and drafter-op GPU tests: device arrays poisoned on creation,
// seeded random inputs that are never zero, comparisons with stated tolerances, and the one-line
// summary each test binary prints last (gdn_testing.cc holds main()).
#ifndef TWINSPAN_TESTS_CUDA_GDN_TESTING_H_
#define TWINSPAN_TESTS_CUDA_GDN_TESTING_H_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cuda/exl3_linear.cuh"

namespace twinspan::cuda::testing {

// One device allocation of `size` T (at least 16 bytes, so an empty array still has a valid
// pointer), every byte 0xFF when made (NaN floats, -1 ints), so an element an op should have
// written and did not shows up.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t size) : size_(size) {
    EXPECT_EQ(cudaMalloc(&ptr_, std::max<size_t>(Bytes(), 16)), cudaSuccess);
    Poison();
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { Upload(host); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(ptr_); }

  T* get() const { return static_cast<T*>(ptr_); }
  size_t size() const { return size_; }
  std::span<T> span() const { return {get(), size_}; }
  std::span<const T> cspan() const { return {get(), size_}; }

  // Both wait for the device: the ops run on a non-blocking stream, which does not wait for
  // cudaMemset's or a pageable cudaMemcpy's work on the legacy stream.
  void Poison() {
    EXPECT_EQ(cudaMemset(ptr_, 0xFF, std::max<size_t>(Bytes(), 16)), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  void Upload(const std::vector<T>& host) {
    ASSERT_EQ(host.size(), size_);
    if (size_ == 0) return;
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), Bytes(), cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  // Waits for the device, then copies back.
  std::vector<T> Download() const {
    std::vector<T> host(size_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    if (size_ == 0) return host;
    EXPECT_EQ(cudaMemcpy(host.data(), ptr_, Bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

 private:
  size_t Bytes() const { return size_ * sizeof(T); }
  void* ptr_ = nullptr;
  size_t size_;
};

// A non-default stream and the context the ops get; checks the stream and the last error.
class TestStream {
 public:
  TestStream();
  ~TestStream();
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  const Context& ctx() const { return ctx_; }
  // Synchronizes the stream; the status names the device error, if any.
  ::testing::AssertionResult Finish() const;

 private:
  Context ctx_;
};

// n draws of scale * N(0, 1), redrawn when exactly zero.
std::vector<float> RandomNormal(size_t n, float scale, std::mt19937& rng);
// n draws of U(lo, hi), redrawn when exactly zero.
std::vector<float> RandomUniform(size_t n, float lo, float hi, std::mt19937& rng);

// |got - ref| against the reference: rel_fro = ||got - ref|| / ||ref|| must be <= rel_fro, and
// every element within element * (rms(ref) + |ref_i|). NaN or inf where ref is finite fails.
struct Tolerance {
  double rel_fro;
  double element;
};
void ExpectClose(const std::vector<float>& ref, const std::vector<float>& got, Tolerance tol,
                 const std::string& what);
// Element for element the same bits.
void ExpectBitEqual(const std::vector<float>& ref, const std::vector<float>& got,
                    const std::string& what);
void ExpectBitEqual(const std::vector<int32_t>& ref, const std::vector<int32_t>& got,
                    const std::string& what);

// Rows [row0, row0 + rows) of a row-major [*, width] array.
std::vector<float> Rows(const std::vector<float>& a, int64_t width, int64_t row0, int64_t rows);

}  // namespace twinspan::cuda::testing

#endif  // TWINSPAN_TESTS_CUDA_GDN_TESTING_H_
