// A dense linear weight on the device (host code: it reads cpu::LinearWeight). The CPU weight is
// fp32; it is stored as bf16 when every value is a bf16 value (a bf16 checkpoint), else as f16
// when every value is an f16 value, else as f32: exact either way, at half the memory for
// checkpoints stored in 16 bits.
#ifndef TWINSPAN_KERNELS_CUDA_DENSE_WEIGHT_H_
#define TWINSPAN_KERNELS_CUDA_DENSE_WEIGHT_H_

#include "absl/status/statusor.h"
#include "kernels/cpu/linear.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/linear.cuh"

namespace twinspan::cuda {

// Owns the device copy; move-only. Safe to share read-only between ops once uploaded.
class DeviceDenseWeight {
 public:
  // Copies the dense `weight` to the current device synchronously. InvalidArgument for an empty
  // or EXL3 weight; ResourceExhausted naming the bytes; Internal when the copy fails.
  static absl::StatusOr<DeviceDenseWeight> Upload(const cpu::LinearWeight& weight);

  const DenseWeightView& view() const { return view_; }

 private:
  DeviceMemory memory_;
  DenseWeightView view_;
};

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_DENSE_WEIGHT_H_
