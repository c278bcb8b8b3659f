#include "common/exl3/quantize/quantize_linear.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "common/exl3/quantize/dense.h"
#include "common/exl3/quantize/hessian.h"
#include "common/exl3/quantize/ldlq.h"
#include "common/exl3/quantize/regularize.h"
#include "common/exl3/quantize/scale_search.h"
#include "common/exl3/tile_pack.h"
#include "common/safetensors/half.h"
#include "common/sampler/philox.h"
#include "common/status.h"

namespace twinspan::exl3::quantize {
namespace {

// Below this mean diagonal the Hessian carries no information (exllamav3's fallback threshold).
constexpr double kDegenerateDiagonal = 1e-20;

// +-1 per index, stream 0 for the input side and 1 for the output side.
std::vector<float> Signs(uint64_t seed, uint32_t stream, int64_t count) {
  const sampler::PhiloxKey key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  std::vector<float> signs(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const sampler::PhiloxCounter c = sampler::Philox4x32(
        {static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), stream, 0}, key);
    signs[i] = (c[0] & 1) != 0 ? -1.0f : 1.0f;
  }
  return signs;
}

// fp16 bits of a scale; one too small for fp16 keeps its sign at the smallest subnormal, so it
// stays invertible.
uint16_t ScaleToHalf(float v) {
  uint16_t h = FloatToHalf(v);
  if ((h & 0x7fff) == 0 && v != 0.0f) h = static_cast<uint16_t>((h & 0x8000) | 1);
  return h;
}

bool UsableHessian(std::span<const float> h, int64_t k) {
  double diagonal = 0;
  for (float v : h) {
    if (!std::isfinite(v)) return false;
  }
  for (int64_t i = 0; i < k; ++i) diagonal += h[i * k + i];
  return diagonal / static_cast<double>(k) >= kDegenerateDiagonal;
}

// sum of m (.) (H m) over the matrix, H [k, k] symmetric (m^T H m's trace), or of m (.) m.
double Weighted(cpu::ThreadPool* pool, std::span<const float> h, const std::vector<float>& m,
                int64_t k, int64_t n) {
  double sum = 0;
  if (h.empty()) {
    for (float v : m) sum += static_cast<double>(v) * v;
    return sum;
  }
  std::vector<float> hm(m.size(), 0.0f);
  GemmTN(pool, k, n, k, h.data(), k, m.data(), n, hm.data(), n);
  for (size_t i = 0; i < m.size(); ++i) sum += static_cast<double>(m[i]) * hm[i];
  return sum;
}

absl::Status Validate(const LinearQuantInput& in, const LinearQuantOptions& o) {
  if (in.weight == nullptr || in.k <= 0 || in.n <= 0 || in.k % kHadamardSize != 0 ||
      in.n % kHadamardSize != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a [k %d, n %d] weight: EXL3 needs k and n positive multiples of 128", in.k, in.n));
  }
  if (o.bits < kMinBits || o.bits > kMaxBits) {
    return absl::InvalidArgumentError(absl::StrFormat("bits %d outside 1..8", o.bits));
  }
  if (!in.hessian.empty() && in.hessian.size() != static_cast<size_t>(in.k * in.k)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a Hessian of %d values for k = %d", in.hessian.size(), in.k));
  }
  if (!in.bias.empty() && in.bias.size() != static_cast<size_t>(in.n)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a bias of %d values for n = %d", in.bias.size(), in.n));
  }
  for (int64_t i = 0; i < in.k * in.n; ++i) {
    if (!std::isfinite(in.weight[i])) {
      return absl::InvalidArgumentError(
          absl::StrFormat("weight element (%d, %d) is not finite", i / in.n, i % in.n));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<QuantizedLinear> QuantizeLinear(cpu::ThreadPool* pool, const TileEncoder& encoder,
                                               const LinearQuantInput& in,
                                               const LinearQuantOptions& options) {
  ABSL_RETURN_IF_ERROR(Validate(in, options));
  const int64_t k = in.k, n = in.n;
  const TileCode code{options.bits, options.codebook};
  QuantizedLinear q;
  q.k = k;
  q.n = n;
  q.bits = options.bits;
  q.codebook = options.codebook;
  const std::vector<float> su_signs = Signs(options.seed, 0, k);
  const Regularized reg =
      Regularize(in.weight, k, n, su_signs, Signs(options.seed, 1, n), options.out_scales);
  ABSL_ASSIGN_OR_RETURN(q.global_scale, SearchGlobalScale(encoder, code, reg.weight.data(), k, n));
  // The stored fp16 scales, and the target recomputed from them so they describe it exactly.
  std::vector<float> suh(k), svh(n), sv_divisor(n);
  q.suh.resize(k);
  q.svh.resize(n);
  for (int64_t i = 0; i < k; ++i) {
    q.suh[i] = ScaleToHalf(reg.su[i] / q.global_scale);
    suh[i] = HalfToFloat(q.suh[i]);
  }
  for (int64_t j = 0; j < n; ++j) {
    q.svh[j] = reg.sv[j] == 0.0f ? 0 : ScaleToHalf(reg.sv[j]);
    svh[j] = HalfToFloat(q.svh[j]);
    sv_divisor[j] = HalfToFloat(ScaleToHalf(reg.sv_divisor[j]));
  }
  for (int64_t i = 0; i < k; ++i) {
    if (!std::isfinite(suh[i])) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "input channel %d's scale %g overflows fp16", i, reg.su[i] / q.global_scale));
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    if (!std::isfinite(svh[j]) || !std::isfinite(sv_divisor[j])) {
      return absl::InvalidArgumentError(
          absl::StrFormat("output channel %d's scale %g overflows fp16", j, reg.sv[j]));
    }
  }
  const std::vector<float> target = Rotate(in.weight, k, n, suh, sv_divisor);
  std::vector<float> l;
  q.calibrated = !in.hessian.empty() && UsableHessian(in.hessian, k);
  if (q.calibrated) {
    const std::span<const float> basis =
        options.hessian_basis == HessianBasis::kScales ? std::span<const float>(suh) : su_signs;
    ABSL_ASSIGN_OR_RETURN(l, LdlFactor(pool, in.hessian, basis, LdlOptions{options.sigma_reg, 10}));
  }
  ABSL_ASSIGN_OR_RETURN(LdlqResult coded, Ldlq(pool, encoder, code, target.data(), k, n, l));
  const int64_t words = int64_t{16} * options.bits;
  q.trellis.resize(static_cast<size_t>(k * n / kTileWeights * words));
  for (int64_t t = 0; t < k * n / kTileWeights; ++t) {
    PackTile(coded.states.data() + t * kTileWeights, options.bits, q.trellis.data() + t * words);
  }
  // Dequantize as exl3::DequantizeDense does, op for op.
  q.dequantized = std::move(coded.quantized);
  HadamardLeft(q.dequantized.data(), k, n, n);
  HadamardRight(q.dequantized.data(), k, n, n);
  for (int64_t i = 0; i < k; ++i) {
    float* row = q.dequantized.data() + i * n;
    for (int64_t j = 0; j < n; ++j) row[j] = row[j] * suh[i] * svh[j];
  }
  for (float b : in.bias) q.bias.push_back(FloatToHalf(b));
  const std::span<const float> h = q.calibrated ? in.hessian : std::span<const float>();
  std::vector<float> error(static_cast<size_t>(k * n));
  for (size_t i = 0; i < error.size(); ++i) error[i] = in.weight[i] - q.dequantized[i];
  const std::vector<float> weight(in.weight, in.weight + k * n);
  const double denominator = Weighted(pool, h, weight, k, n);
  q.proxy_error = denominator > 0 ? Weighted(pool, h, error, k, n) / denominator : 0.0;
  return q;
}

std::vector<OwnedTensor> StoredTensors(const std::string& prefix, const QuantizedLinear& q) {
  std::vector<OwnedTensor> tensors;
  tensors.push_back(OwnedTensor::FromRaw(prefix + kTrellisSuffix, DType::kI16,
                                         {q.k / kTileSize, q.n / kTileSize, int64_t{16} * q.bits},
                                         q.trellis));
  tensors.push_back(OwnedTensor::FromRaw(prefix + kSuhSuffix, DType::kF16, {q.k}, q.suh));
  tensors.push_back(OwnedTensor::FromRaw(prefix + kSvhSuffix, DType::kF16, {q.n}, q.svh));
  if (q.codebook != Codebook::k3Inst) {
    const bool mcg = q.codebook == Codebook::kMcg;
    const std::vector<uint32_t> marker = {mcg ? kMcgMultiplier : kMul1Multiplier};
    tensors.push_back(
        OwnedTensor::FromRaw(prefix + (mcg ? kMcgSuffix : kMul1Suffix), DType::kI32, {}, marker));
  }
  if (!q.bias.empty()) {
    tensors.push_back(OwnedTensor::FromRaw(prefix + kBiasSuffix, DType::kF16, {q.n}, q.bias));
  }
  return tensors;
}

}  // namespace twinspan::exl3::quantize
