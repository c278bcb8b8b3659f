#include "common/exl3/weight.h"

#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/exl3/codebook.h"
#include "common/safetensors/half.h"
#include "common/status.h"

namespace twinspan::exl3 {
namespace {

// Names the file holding `view` and the tensor, for every error about it.
absl::Status Bad(const Checkpoint& checkpoint, const TensorView& view, std::string_view problem) {
  const SafetensorsFile* file = checkpoint.FileOf(view.name);
  return absl::InvalidArgumentError(absl::StrCat(file != nullptr ? file->path() : checkpoint.path(),
                                                 ": tensor ", DescribeTensor(view), ": ",
                                                 std::string(problem)));
}

bool HasShape(const TensorView& view, std::initializer_list<int64_t> shape) {
  return view.shape == std::vector<int64_t>(shape);
}

// F16 [size] to floats.
absl::StatusOr<std::vector<float>> ReadScales(const Checkpoint& checkpoint, const TensorView& view,
                                              int64_t size, std::string_view role) {
  if (view.dtype != DType::kF16 || !HasShape(view, {size})) {
    return Bad(checkpoint, view, absl::StrCat(std::string(role), " must be F16 [", size, "]"));
  }
  return ToFloat(view);
}

// Legacy I16 [size / 16] sign words to +-1: bit i of word j is element 16j + i, set means -1.
absl::StatusOr<std::vector<float>> ReadSignWords(const Checkpoint& checkpoint,
                                                 const TensorView& view, int64_t size,
                                                 std::string_view role) {
  if (view.dtype != DType::kI16 || !HasShape(view, {size / 16})) {
    return Bad(checkpoint, view,
               absl::StrCat(std::string(role), " sign words must be I16 [", size / 16, "]"));
  }
  std::vector<float> signs(static_cast<size_t>(size));
  for (int64_t j = 0; j < size / 16; ++j) {
    uint16_t word;
    std::memcpy(&word, view.data + 2 * j, 2);
    for (int i = 0; i < 16; ++i) signs[16 * j + i] = ((word >> i) & 1) ? -1.0f : 1.0f;
  }
  return signs;
}

// suh/svh, or the legacy su/sv sign words in their place.
absl::StatusOr<std::vector<float>> ReadSide(const Checkpoint& checkpoint, const std::string& prefix,
                                            const char* scale_suffix, const char* sign_suffix,
                                            int64_t size) {
  const std::string scale_name = prefix + scale_suffix;
  if (const TensorView* scales = checkpoint.Find(scale_name)) {
    return ReadScales(checkpoint, *scales, size, scale_suffix + 1);
  }
  const std::string sign_name = prefix + sign_suffix;
  if (const TensorView* signs = checkpoint.Find(sign_name)) {
    return ReadSignWords(checkpoint, *signs, size, sign_suffix + 1);
  }
  return absl::InvalidArgumentError(absl::StrCat(checkpoint.path(), ": EXL3 linear \"", prefix,
                                                 "\" has neither ", scale_name, " nor ",
                                                 sign_name));
}

// A marker must be a 0-dim I32 holding the locked multiplier (kernels never read its value).
absl::Status CheckMarker(const Checkpoint& checkpoint, const TensorView& view,
                         uint32_t multiplier) {
  if (view.dtype != DType::kI32 || !view.shape.empty()) {
    return Bad(checkpoint, view, "codebook marker must be a 0-dim I32");
  }
  uint32_t value;
  std::memcpy(&value, view.data, 4);
  if (value != multiplier) {
    return Bad(checkpoint, view,
               absl::StrCat("codebook multiplier ", absl::Hex(value, absl::kZeroPad8),
                            " is not the locked ", absl::Hex(multiplier, absl::kZeroPad8),
                            " this decoder implements"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Codebook> ReadCodebook(const Checkpoint& checkpoint, const std::string& prefix) {
  const TensorView* mcg = checkpoint.Find(prefix + kMcgSuffix);
  const TensorView* mul1 = checkpoint.Find(prefix + kMul1Suffix);
  if (mcg != nullptr && mul1 != nullptr) {
    return Bad(checkpoint, *mul1,
               absl::StrCat("EXL3 linear \"", prefix, "\" has both mcg and mul1 codebook markers"));
  }
  if (mcg != nullptr) {
    ABSL_RETURN_IF_ERROR(CheckMarker(checkpoint, *mcg, kMcgMultiplier));
    return Codebook::kMcg;
  }
  if (mul1 != nullptr) {
    ABSL_RETURN_IF_ERROR(CheckMarker(checkpoint, *mul1, kMul1Multiplier));
    return Codebook::kMul1;
  }
  return Codebook::k3Inst;
}

}  // namespace

bool Weight::IsStored(const Checkpoint& checkpoint, std::string_view prefix) {
  return checkpoint.Has(std::string(prefix) + kTrellisSuffix);
}

absl::StatusOr<Weight> Weight::Load(const Checkpoint& checkpoint, std::string_view prefix_view) {
  const std::string prefix(prefix_view);
  const TensorView* trellis = checkpoint.Find(prefix + kTrellisSuffix);
  if (trellis == nullptr) {
    return absl::NotFoundError(absl::StrCat(checkpoint.path(), ": no EXL3 linear \"", prefix,
                                            "\" (tensor ", prefix, kTrellisSuffix, " not found)"));
  }
  if (const TensorView* scale = checkpoint.Find(prefix + kScaleSuffix)) {
    return Bad(checkpoint, *scale, "a .scale tensor is no longer used (pre-release EXL3 format)");
  }
  if (trellis->dtype != DType::kI16 || trellis->shape.size() != 3) {
    return Bad(checkpoint, *trellis, "trellis must be I16 [k/16, n/16, 16*K]");
  }
  const int64_t width = trellis->shape[2];
  if (width % 16 == 8 && width > 0) {
    return Bad(checkpoint, *trellis,
               absl::StrCat("half-integer K = ", width / 16, ".5 is not supported"));
  }
  if (width % 16 != 0 || width / 16 < kMinBits || width / 16 > kMaxBits) {
    return Bad(checkpoint, *trellis,
               absl::StrCat("last dimension ", width, " is not 16 * K with K in 1..8"));
  }
  Weight w;
  w.name_ = prefix;
  w.k_ = trellis->shape[0] * kTileSize;
  w.n_ = trellis->shape[1] * kTileSize;
  w.bits_ = static_cast<int>(width / 16);
  if (w.k_ <= 0 || w.n_ <= 0 || w.k_ % kHadamardSize != 0 || w.n_ % kHadamardSize != 0) {
    return Bad(checkpoint, *trellis,
               absl::StrCat("k = ", w.k_, " and n = ", w.n_,
                            " must be positive multiples of 128 (the Hadamard block)"));
  }
  ABSL_ASSIGN_OR_RETURN(w.codebook_, ReadCodebook(checkpoint, prefix));
  ABSL_ASSIGN_OR_RETURN(std::vector<float> suh,
                        ReadSide(checkpoint, prefix, kSuhSuffix, kSuSuffix, w.k_));
  ABSL_ASSIGN_OR_RETURN(std::vector<float> svh,
                        ReadSide(checkpoint, prefix, kSvhSuffix, kSvSuffix, w.n_));
  if (const TensorView* bias = checkpoint.Find(prefix + kBiasSuffix)) {
    ABSL_ASSIGN_OR_RETURN(std::vector<float> values, ReadScales(checkpoint, *bias, w.n_, "bias"));
    w.bias_ = std::make_shared<const std::vector<float>>(std::move(values));
  }
  w.suh_ = std::make_shared<const std::vector<float>>(std::move(suh));
  w.svh_ = std::make_shared<const std::vector<float>>(std::move(svh));
  w.trellis_ = trellis->data;
  w.tile_row_stride_ = w.n_ / kTileSize;
  w.plan_ = ::twinspan::exl3::plan(w.k_, w.n_);
  return w;
}

absl::StatusOr<Weight> Weight::columns(int64_t from, int64_t n) const {
  if (from < 0 || n <= 0 || from % kHadamardSize != 0 || n % kHadamardSize != 0 || from > n_ - n) {
    return absl::InvalidArgumentError(
        absl::StrCat("EXL3 linear \"", name_, "\": columns(", from, ", ", n,
                     ") is not a range of whole 128-column blocks inside its ", n_, " columns"));
  }
  Weight view = *this;
  view.n_ = n;
  view.first_column_ = first_column_ + from;
  view.trellis_ = trellis_ + (from / kTileSize) * tile_bytes();
  return view;
}

}  // namespace twinspan::exl3
