#include "kernels/cpu/q4_linear.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/safetensors/half.h"
#include "kernels/cpu/dot.h"

namespace twinspan::cpu {
namespace {

// Output columns per parallel task, as cpu::Linear's dense path: each task dequantizes its
// columns once and shares them across all rows.
constexpr int64_t kColumnsPerTask = 16;
constexpr float kHalfMax = 65504.0f;

// The fp16 next to `h` towards +infinity / -infinity (h finite).
uint16_t HalfNextUp(uint16_t h) {
  if (h == 0x8000) return 0x0001;
  return (h & 0x8000) ? h - 1 : h + 1;
}
uint16_t HalfNextDown(uint16_t h) {
  if (h == 0x0000) return 0x8001;
  return (h & 0x8000) ? h + 1 : h - 1;
}

// Largest fp16 <= v and smallest fp16 >= v, for finite v inside fp16's range.
uint16_t HalfAtMost(double v) {
  uint16_t h = FloatToHalf(static_cast<float>(v));
  while (HalfToFloat(h) > v) h = HalfNextDown(h);
  return h;
}
uint16_t HalfAtLeast(double v) {
  uint16_t h = FloatToHalf(static_cast<float>(v));
  while (HalfToFloat(h) < v) h = HalfNextUp(h);
  return h;
}

bool FiniteHalf(uint16_t h) { return (h & 0x7c00) != 0x7c00; }

}  // namespace

absl::StatusOr<Q4Weight> Q4Weight::Create(const std::string& name, int64_t n, int64_t k,
                                          std::vector<uint8_t> codes, std::vector<uint16_t> scales,
                                          std::vector<uint16_t> offsets) {
  if (n <= 0 || k <= 0 || k % kQ4GroupSize != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Q4 weight %s: shape [%d, %d] needs positive sizes and in_features a multiple of %d", name,
        n, k, kQ4GroupSize));
  }
  const int64_t groups = n * (k / kQ4GroupSize);
  if (static_cast<int64_t>(codes.size()) != n * k / 2 ||
      static_cast<int64_t>(scales.size()) != groups ||
      static_cast<int64_t>(offsets.size()) != groups) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Q4 weight %s [%d, %d]: %d code bytes, %d scales, %d offsets; expected %d, %d, %d", name, n,
        k, codes.size(), scales.size(), offsets.size(), n * k / 2, groups, groups));
  }
  for (int64_t g = 0; g < groups; ++g) {
    if (!FiniteHalf(scales[g]) || !FiniteHalf(offsets[g])) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Q4 weight %s: group %d of row %d has a scale or offset that is not "
                          "finite",
                          name, g % (k / kQ4GroupSize), g / (k / kQ4GroupSize)));
    }
  }
  Q4Weight w;
  w.n_ = n;
  w.k_ = k;
  w.codes_ = std::move(codes);
  w.scales_ = std::move(scales);
  w.offsets_ = std::move(offsets);
  return w;
}

absl::StatusOr<Q4Weight> Q4Weight::Quantize(const std::string& name, int64_t n, int64_t k,
                                            std::span<const float> values) {
  if (n <= 0 || k <= 0 || k % kQ4GroupSize != 0 || static_cast<int64_t>(values.size()) != n * k) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Q4 weight %s: %d values for shape [%d, %d]; needs positive sizes and in_features a "
        "multiple of %d",
        name, values.size(), n, k, kQ4GroupSize));
  }
  const int64_t per_row = k / kQ4GroupSize;
  std::vector<uint8_t> codes(n * k / 2, 0);
  std::vector<uint16_t> scales(n * per_row), offsets(n * per_row);
  for (int64_t g = 0; g < n * per_row; ++g) {
    const float* w = values.data() + g * kQ4GroupSize;
    float lo = w[0], hi = w[0];
    for (int64_t i = 0; i < kQ4GroupSize; ++i) {
      if (!(std::fabs(w[i]) <= kHalfMax)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "Q4 weight %s: element [%d, %d] = %g is not finite or outside fp16's range", name,
            g / per_row, (g % per_row) * kQ4GroupSize + i, w[i]));
      }
      lo = std::min(lo, w[i]);
      hi = std::max(hi, w[i]);
    }
    offsets[g] = HalfAtMost(lo);
    const double o = HalfToFloat(offsets[g]);
    scales[g] = HalfAtLeast((static_cast<double>(hi) - o) / kQ4MaxCode);
    const double s = HalfToFloat(scales[g]);
    uint8_t* out = codes.data() + g * kQ4GroupSize / 2;
    for (int64_t i = 0; i < kQ4GroupSize; ++i) {
      const double t = s > 0.0 ? (static_cast<double>(w[i]) - o) / s : 0.0;
      const int q = static_cast<int>(std::clamp(std::floor(t + 0.5), 0.0, double{kQ4MaxCode}));
      out[i / 2] |= static_cast<uint8_t>(i % 2 == 0 ? q : q << 4);
    }
  }
  return Create(name, n, k, std::move(codes), std::move(scales), std::move(offsets));
}

int64_t Q4Weight::bytes() const {
  return static_cast<int64_t>(codes_.size() + 2 * (scales_.size() + offsets_.size()));
}

void Q4Weight::DequantizeRow(int64_t j, float* out) const {
  const int64_t per_row = groups_per_row();
  for (int64_t g = 0; g < per_row; ++g) {
    const float s = HalfToFloat(scales_[j * per_row + g]);
    const float o = HalfToFloat(offsets_[j * per_row + g]);
    float value[kQ4MaxCode + 1];  // The group's 16 possible weights: exact s * q, one rounding.
    for (int q = 0; q <= kQ4MaxCode; ++q) value[q] = s * static_cast<float>(q) + o;
    const uint8_t* in = codes_.data() + (j * k_ + g * kQ4GroupSize) / 2;
    float* group = out + g * kQ4GroupSize;
    for (int64_t b = 0; b < kQ4GroupSize / 2; ++b) {
      group[2 * b] = value[in[b] & 0xf];
      group[2 * b + 1] = value[in[b] >> 4];
    }
  }
}

std::vector<float> Q4Weight::Dequantize() const {
  std::vector<float> out(n_ * k_);
  for (int64_t j = 0; j < n_; ++j) DequantizeRow(j, out.data() + j * k_);
  return out;
}

absl::Status Q4Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                      const Q4Weight& w, float* y, int64_t y_stride) {
  const int64_t n = w.out_features(), k = w.in_features();
  if (n == 0) return absl::InvalidArgumentError("Q4Linear: empty weight");
  if (rows < 0 || x_stride < k || y_stride < n) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Q4Linear: rows %d, x_stride %d, y_stride %d for weight [%d, %d]", rows,
                        x_stride, y_stride, n, k));
  }
  if (rows == 0) return absl::OkStatus();
  const int64_t tasks = (n + kColumnsPerTask - 1) / kColumnsPerTask;
  const int64_t threads = ctx.pool == nullptr ? 1 : ctx.pool->num_threads();
  const int64_t grain = std::max<int64_t>(1, tasks / (4 * threads));
  ParallelFor(ctx.pool, tasks, grain, [&](int64_t t0, int64_t t1) {
    std::vector<float> row(k);
    for (int64_t j = t0 * kColumnsPerTask; j < std::min(n, t1 * kColumnsPerTask); ++j) {
      w.DequantizeRow(j, row.data());
      int64_t r = 0;
      for (; r + 4 <= rows; r += 4) {  // Dot4 equals Dot per row bit for bit: rows share the load.
        float out[4];
        Dot4(x + r * x_stride, x + (r + 1) * x_stride, x + (r + 2) * x_stride,
             x + (r + 3) * x_stride, row.data(), k, out);
        for (int i = 0; i < 4; ++i) y[(r + i) * y_stride + j] = out[i];
      }
      for (; r < rows; ++r) y[r * y_stride + j] = Dot(x + r * x_stride, row.data(), k);
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
