// Our quantizer against exllamav3's on the golden single linears (shared/golden/exl3_linear,
// README section 1): the same W and calibration rows, each side's proxy error measured the same
// way, in the original basis, from the stored tensors decoded by exl3::DequantizeDense.
#ifndef TWINSPAN_TOOLS_QUANTIZE_GOLDEN_LINEARS_H_
#define TWINSPAN_TOOLS_QUANTIZE_GOLDEN_LINEARS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exl3/quantize/quantize_linear.h"
#include "common/exl3/quantize/tile_encoder.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::quantize {

struct GoldenLinearCase {
  std::string file;      // exl3_linear_<k>x<n>.safetensors
  std::string codebook;  // "3inst", "mcg", "mul1"
  int bits = 0;
  int64_t k = 0, n = 0;
  double theirs = 0;   // exllamav3's stored tensors, original basis.
  double ours = 0;     // Ours on the same W and H, original basis.
  double seconds = 0;  // Our QuantizeLinear's wall time.
};

// The cases of `file` in `golden_dir` (every codebook and K it stores, or only those listed in
// `only` as "<cb>.K<K>"), each quantized with `options` (bits and codebook set per case, seed
// `options.seed` + K). H = Xcal^T Xcal / 256. NotFound / InvalidArgument naming the file or
// tensor; the quantizer's errors.
absl::StatusOr<std::vector<GoldenLinearCase>> CompareGoldenLinears(
    cpu::ThreadPool* pool, const exl3::quantize::TileEncoder& encoder,
    const std::string& golden_dir, const std::string& file, const std::vector<std::string>& only,
    const exl3::quantize::LinearQuantOptions& options);

// The proxy error tr(E^T H E) / tr(W^T H W), E = w - dequantized, both [k, n], H [k, k].
double ProxyError(cpu::ThreadPool* pool, const std::vector<float>& w,
                  const std::vector<float>& dequantized, const std::vector<float>& h, int64_t k,
                  int64_t n);

}  // namespace twinspan::quantize

#endif  // TWINSPAN_TOOLS_QUANTIZE_GOLDEN_LINEARS_H_
