// A Q4 weight on the device (host code): the stored codes, scales and offsets of a cpu::Q4Weight
// uploaded once, scales and offsets interleaved as (scale, offset) half pairs, and the
// Q4DeviceWeight the Q4 linear takes.
#ifndef TWINSPAN_KERNELS_CUDA_Q4_LINEAR_WEIGHT_H_
#define TWINSPAN_KERNELS_CUDA_Q4_LINEAR_WEIGHT_H_

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "kernels/cuda/q4_linear.cuh"

namespace twinspan::cuda {

// Owns the device copy; cheap to copy (shared). Not thread-safe to upload, safe to share after.
class DeviceQ4Weight {
 public:
  // Copies a Q4 weight [n, k] given as its stored parts (cpu::Q4Weight's codes(), scales(),
  // offsets(); fp16 bits) to the device, synchronously. InvalidArgument for sizes that disagree or
  // k not a multiple of 128; Internal when an allocation or copy fails.
  static absl::StatusOr<DeviceQ4Weight> Upload(int64_t n, int64_t k, std::span<const uint8_t> codes,
                                               std::span<const uint16_t> scales,
                                               std::span<const uint16_t> offsets);

  const Q4DeviceWeight& view() const { return view_; }
  // Device bytes held: k / 2 + 4 k / 128 per row.
  int64_t bytes() const { return view_.n * (view_.k / 2 + 4 * (view_.k / 128)); }

 private:
  struct Buffers;
  std::shared_ptr<Buffers> buffers_;
  Q4DeviceWeight view_;
};

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_Q4_LINEAR_WEIGHT_H_
