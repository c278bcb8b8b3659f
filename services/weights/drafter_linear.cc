#include "services/weights/drafter_linear.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "services/weights/weight_loader.h"

namespace twinspan::drafter {
namespace {

// The tensor `name` as raw elements of `dtype` with exactly `shape`.
template <typename T>
absl::StatusOr<std::vector<T>> LoadRaw(const Checkpoint& checkpoint, const std::string& name,
                                       DType dtype, const std::vector<int64_t>& shape) {
  ABSL_ASSIGN_OR_RETURN(const TensorView view, checkpoint.Get(name));
  if (view.dtype != dtype || view.shape != shape) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: Q4 tensor %s is %s, expected %s[%s]", checkpoint.path(), name,
                        DescribeTensor(view), DTypeName(dtype), absl::StrJoin(shape, ", ")));
  }
  std::vector<T> out(view.nbytes / sizeof(T));
  if (view.nbytes > 0) std::memcpy(out.data(), view.data, view.nbytes);
  return out;
}

absl::StatusOr<cpu::LinearWeight> LoadQ4(const Checkpoint& checkpoint, const std::string& prefix,
                                         int64_t out, int64_t in) {
  if (in % cpu::kQ4GroupSize != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: Q4 linear %s has in_features %d, not a multiple of %d",
                        checkpoint.path(), prefix, in, cpu::kQ4GroupSize));
  }
  const int64_t groups = in / cpu::kQ4GroupSize;
  ABSL_ASSIGN_OR_RETURN(
      std::vector<uint8_t> codes,
      LoadRaw<uint8_t>(checkpoint, prefix + cpu::kQ4CodesSuffix, DType::kU8, {out, in / 2}));
  ABSL_ASSIGN_OR_RETURN(
      std::vector<uint16_t> scales,
      LoadRaw<uint16_t>(checkpoint, prefix + cpu::kQ4ScalesSuffix, DType::kF16, {out, groups}));
  ABSL_ASSIGN_OR_RETURN(
      std::vector<uint16_t> offsets,
      LoadRaw<uint16_t>(checkpoint, prefix + cpu::kQ4OffsetsSuffix, DType::kF16, {out, groups}));
  ABSL_ASSIGN_OR_RETURN(cpu::Q4Weight w,
                        cpu::Q4Weight::Create(prefix, out, in, std::move(codes), std::move(scales),
                                              std::move(offsets)));
  return cpu::LinearWeight::Q4(std::move(w));
}

}  // namespace

absl::StatusOr<cpu::LinearWeight> LoadDrafterLinear(const Checkpoint& checkpoint,
                                                    const std::string& prefix, int64_t out_features,
                                                    int64_t in_features, LinearBits bits) {
  if (checkpoint.Has(prefix + cpu::kQ4CodesSuffix)) {
    return LoadQ4(checkpoint, prefix, out_features, in_features);
  }
  ABSL_ASSIGN_OR_RETURN(cpu::LinearWeight w,
                        target::LoadLinear(checkpoint, prefix, out_features, in_features));
  if (bits == LinearBits::kAsStored) return w;
  if (w.is_exl3()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s is an EXL3 linear; only dense linears are quantized to Q4 at load",
                        checkpoint.path(), prefix));
  }
  std::vector<float> values;
  values.reserve(out_features * in_features);
  for (int64_t j = 0; j < out_features; ++j) {
    values.insert(values.end(), w.dense_row(j), w.dense_row(j) + in_features);
  }
  ABSL_ASSIGN_OR_RETURN(cpu::Q4Weight q,
                        cpu::Q4Weight::Quantize(prefix, out_features, in_features, values));
  return cpu::LinearWeight::Q4(std::move(q));
}

}  // namespace twinspan::drafter
