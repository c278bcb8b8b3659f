#include "kernels/cuda/dense_weight.h"

#include <bit>
#include <cstring>
#include <vector>

#include "common/safetensors/half.h"
#include "common/status.h"

namespace twinspan::cuda {
namespace {

bool AllRoundTrip(const cpu::LinearWeight& w, uint16_t (*narrow)(float), float (*widen)(uint16_t)) {
  for (int64_t j = 0; j < w.out_features(); ++j) {
    const float* row = w.dense_row(j);
    for (int64_t i = 0; i < w.in_features(); ++i) {
      if (std::bit_cast<uint32_t>(widen(narrow(row[i]))) != std::bit_cast<uint32_t>(row[i])) {
        return false;
      }
    }
  }
  return true;
}

// [n, pitch] of 16-bit values, zero-padded.
std::vector<uint16_t> Narrow(const cpu::LinearWeight& w, int64_t pitch, uint16_t (*narrow)(float)) {
  std::vector<uint16_t> out(static_cast<size_t>(w.out_features() * pitch), 0);
  for (int64_t j = 0; j < w.out_features(); ++j) {
    const float* row = w.dense_row(j);
    for (int64_t i = 0; i < w.in_features(); ++i) out[j * pitch + i] = narrow(row[i]);
  }
  return out;
}

}  // namespace

absl::StatusOr<DeviceDenseWeight> DeviceDenseWeight::Upload(const cpu::LinearWeight& weight) {
  if (weight.empty() || weight.is_exl3()) {
    return absl::InvalidArgumentError(
        "DeviceDenseWeight::Upload: the weight is empty or EXL3 (use DeviceExl3Weight)");
  }
  const int64_t n = weight.out_features(), k = weight.in_features();
  const int64_t pitch = (k + 7) / 8 * 8;
  DeviceDenseWeight d;
  d.view_.out_features = n;
  d.view_.in_features = k;
  d.view_.row_pitch = pitch;
  std::vector<uint16_t> halves;
  std::vector<float> floats;
  const void* host = nullptr;
  size_t bytes = 0;
  if (AllRoundTrip(weight, FloatToBFloat16, BFloat16ToFloat)) {
    d.view_.dtype = DenseDtype::kBF16;
    halves = Narrow(weight, pitch, FloatToBFloat16);
  } else if (AllRoundTrip(weight, FloatToHalf, HalfToFloat)) {
    d.view_.dtype = DenseDtype::kF16;
    halves = Narrow(weight, pitch, FloatToHalf);
  } else {
    d.view_.dtype = DenseDtype::kF32;
    floats.assign(static_cast<size_t>(n * pitch), 0.0f);
    for (int64_t j = 0; j < n; ++j) {
      std::memcpy(&floats[j * pitch], weight.dense_row(j), k * sizeof(float));
    }
  }
  if (d.view_.dtype == DenseDtype::kF32) {
    host = floats.data();
    bytes = floats.size() * sizeof(float);
  } else {
    host = halves.data();
    bytes = halves.size() * sizeof(uint16_t);
  }
  ABSL_ASSIGN_OR_RETURN(d.memory_, DeviceMemory::Allocate(bytes, "DeviceDenseWeight::Upload"));
  ABSL_RETURN_IF_ERROR(CudaStatus(cudaMemcpy(d.memory_.get(), host, bytes, cudaMemcpyHostToDevice),
                                  "DeviceDenseWeight::Upload cudaMemcpy"));
  d.view_.data = d.memory_.get();
  return d;
}

}  // namespace twinspan::cuda
