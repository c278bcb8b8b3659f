#include "kernels/cuda/q4_linear_weight.h"

#include <cuda_runtime.h>

#include <vector>

#include "absl/strings/str_format.h"

namespace twinspan::cuda {

struct DeviceQ4Weight::Buffers {
  void* codes = nullptr;
  void* scale_offset = nullptr;
  ~Buffers() {
    cudaFree(codes);
    cudaFree(scale_offset);
  }
};

absl::StatusOr<DeviceQ4Weight> DeviceQ4Weight::Upload(int64_t n, int64_t k,
                                                      std::span<const uint8_t> codes,
                                                      std::span<const uint16_t> scales,
                                                      std::span<const uint16_t> offsets) {
  const int64_t groups = k > 0 ? n * (k / 128) : 0;
  if (n <= 0 || k <= 0 || k % 128 != 0 || static_cast<int64_t>(codes.size()) != n * k / 2 ||
      static_cast<int64_t>(scales.size()) != groups ||
      static_cast<int64_t>(offsets.size()) != groups)
    return absl::InvalidArgumentError(absl::StrFormat(
        "DeviceQ4Weight::Upload: [%d, %d] with %d code bytes, %d scales, %d offsets", n, k,
        codes.size(), scales.size(), offsets.size()));
  std::vector<uint16_t> pairs(2 * groups);  // (scale, offset): one 4-byte load per group.
  for (int64_t g = 0; g < groups; ++g) {
    pairs[2 * g] = scales[g];
    pairs[2 * g + 1] = offsets[g];
  }
  DeviceQ4Weight d;
  d.buffers_ = std::make_shared<Buffers>();
  if (cudaMalloc(&d.buffers_->codes, codes.size()) != cudaSuccess ||
      cudaMemcpy(d.buffers_->codes, codes.data(), codes.size(), cudaMemcpyHostToDevice) !=
          cudaSuccess ||
      cudaMalloc(&d.buffers_->scale_offset, pairs.size() * sizeof(uint16_t)) != cudaSuccess ||
      cudaMemcpy(d.buffers_->scale_offset, pairs.data(), pairs.size() * sizeof(uint16_t),
                 cudaMemcpyHostToDevice) != cudaSuccess)
    return absl::InternalError(
        absl::StrFormat("DeviceQ4Weight::Upload: cannot allocate or copy %d bytes",
                        codes.size() + 2 * pairs.size()));
  d.view_.codes = static_cast<const uint8_t*>(d.buffers_->codes);
  d.view_.scale_offset = static_cast<const __half2*>(d.buffers_->scale_offset);
  d.view_.n = n;
  d.view_.k = k;
  return d;
}

}  // namespace twinspan::cuda
