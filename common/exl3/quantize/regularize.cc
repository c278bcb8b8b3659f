#include "common/exl3/quantize/regularize.h"

#include <cmath>

#include "common/exl3/quantize/dense.h"

namespace twinspan::exl3::quantize {
namespace {

// Below this an RMS counts as zero (exllamav3's threshold).
constexpr double kZeroRms = 1e-30;
// Stand-in RMS for an all-zero row or column.
constexpr float kZeroStandIn = 0.1f;

}  // namespace

Regularized Regularize(const float* w, int64_t k, int64_t n, std::span<const float> su_signs,
                       std::span<const float> sv_signs, bool out_scales) {
  Regularized r;
  std::vector<double> column_sq(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < n; ++j)
      column_sq[j] += static_cast<double>(w[i * n + j]) * w[i * n + j];
  }
  std::vector<double> column_rms(static_cast<size_t>(n));
  double mean = 0;
  for (int64_t j = 0; j < n; ++j) {
    column_rms[j] = std::sqrt(column_sq[j] / static_cast<double>(k));
    mean += column_rms[j] / static_cast<double>(n);
  }
  r.sv.resize(n);
  r.sv_divisor.resize(n);
  for (int64_t j = 0; j < n; ++j) {
    const double scale = mean > kZeroRms ? column_rms[j] / mean : 0.0;
    const bool zero = scale < kZeroRms;
    const float magnitude = !out_scales ? 1.0f : zero ? kZeroStandIn : static_cast<float>(scale);
    r.sv_divisor[j] = sv_signs[j] * magnitude;
    r.sv[j] = zero ? 0.0f : r.sv_divisor[j];
  }
  r.weight.resize(static_cast<size_t>(k * n));
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < n; ++j) r.weight[i * n + j] = w[i * n + j] / r.sv_divisor[j];
  }
  HadamardRight(r.weight.data(), k, n, n);
  r.su.resize(k);
  for (int64_t i = 0; i < k; ++i) {
    double sq = 0;
    for (int64_t j = 0; j < n; ++j)
      sq += static_cast<double>(r.weight[i * n + j]) * r.weight[i * n + j];
    const double rms = std::sqrt(sq / static_cast<double>(n));
    const float row_rms = rms < kZeroRms ? kZeroStandIn : static_cast<float>(rms);
    r.su[i] = su_signs[i] * row_rms / -kCodebookRms;
    for (int64_t j = 0; j < n; ++j) r.weight[i * n + j] /= r.su[i];
  }
  HadamardLeft(r.weight.data(), k, n, n);
  return r;
}

std::vector<float> Rotate(const float* w, int64_t k, int64_t n, std::span<const float> su,
                          std::span<const float> sv) {
  std::vector<float> out(static_cast<size_t>(k * n));
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < n; ++j) out[i * n + j] = w[i * n + j] / sv[j];
  }
  HadamardRight(out.data(), k, n, n);
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < n; ++j) out[i * n + j] /= su[i];
  }
  HadamardLeft(out.data(), k, n, n);
  return out;
}

}  // namespace twinspan::exl3::quantize
