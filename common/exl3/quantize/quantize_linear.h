// Quantizes one linear to EXL3: W (+ its input Hessian) -> trellis, suh, svh (+ bias), the whole
// recipe of exl3-format.md section 5 (regularize, global scale, LDLQ, pack).
#ifndef TWINSPAN_COMMON_EXL3_QUANTIZE_QUANTIZE_LINEAR_H_
#define TWINSPAN_COMMON_EXL3_QUANTIZE_QUANTIZE_LINEAR_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exl3/format.h"
#include "common/exl3/quantize/tile_encoder.h"
#include "common/safetensors/writer.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::exl3::quantize {

// Which input scales rotate the Hessian LDLQ factors. exllamav3 uses only su's signs, so its LDL
// factor belongs to a basis slightly off the one quantized; kScales uses the final suh (the
// "matched" Hessian of exl3-format.md section 5.2).
enum class HessianBasis { kSigns, kScales };

struct LinearQuantOptions {
  int bits = 4;  // K, 1..8.
  Codebook codebook = Codebook::kMul1;
  uint64_t seed = 0;  // Draws the sign flips: the same seed gives the same tensors.
  double sigma_reg = 0.025;
  bool out_scales = true;  // exllamav3's "always"; false is "never".
  HessianBasis hessian_basis = HessianBasis::kScales;
};

struct LinearQuantInput {
  const float* weight = nullptr;  // [k, n] row-major, EXL3 orientation (HF weight transposed).
  int64_t k = 0;
  int64_t n = 0;
  // [k, k]: mean x^T x of the inputs (HessianAccumulator::Mean). Empty: no calibration, each
  // strip is encoded alone and the proxy error weighs every input alike.
  std::span<const float> hessian;
  std::span<const float> bias;  // [n] or empty; stored as fp16.
};

struct QuantizedLinear {
  int64_t k = 0;
  int64_t n = 0;
  int bits = 0;
  Codebook codebook = Codebook::kMul1;
  std::vector<uint16_t> trellis;  // [k / 16, n / 16, 16 K] int16 words.
  std::vector<uint16_t> suh;      // [k] fp16 bits.
  std::vector<uint16_t> svh;      // [n] fp16 bits.
  std::vector<uint16_t> bias;     // [n] fp16 bits, or empty.
  // [k, n]: diag(suh) B W_hat B diag(svh) in fp32, bit-equal to exl3::DequantizeDense of the
  // stored tensors.
  std::vector<float> dequantized;
  // tr(E^T H E) / tr(W^T H W), E = W - dequantized, H the input Hessian (the identity without
  // one): the relative output error on the calibration inputs, in the original basis.
  double proxy_error = 0;
  float global_scale = 1;
  bool calibrated = false;  // LDLQ ran with a Hessian.
};

// InvalidArgument for k or n not a positive multiple of 128, bits outside 1..8, a Hessian or bias
// of the wrong size, a non-finite weight, or scales that overflow fp16; FailedPrecondition when
// the damped Hessian stays indefinite; the encoder's errors. Deterministic for a given seed and
// bit-identical for any pool size.
absl::StatusOr<QuantizedLinear> QuantizeLinear(cpu::ThreadPool* pool, const TileEncoder& encoder,
                                               const LinearQuantInput& input,
                                               const LinearQuantOptions& options);

// The tensors a checkpoint stores for it under `prefix`: .trellis I16, .suh / .svh F16, the
// codebook marker (.mcg / .mul1, I32 scalar; none for 3inst) and .bias F16 when there is one.
std::vector<OwnedTensor> StoredTensors(const std::string& prefix, const QuantizedLinear& q);

}  // namespace twinspan::exl3::quantize

#endif  // TWINSPAN_COMMON_EXL3_QUANTIZE_QUANTIZE_LINEAR_H_
