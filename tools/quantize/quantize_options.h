// twinspan-quantize's settings, parsed once from its flags and validated in one place.
#ifndef TWINSPAN_TOOLS_QUANTIZE_QUANTIZE_OPTIONS_H_
#define TWINSPAN_TOOLS_QUANTIZE_QUANTIZE_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/exl3/format.h"
#include "common/exl3/quantize/quantize_linear.h"

namespace twinspan::quantize {

// The format version whose storage this writes (quantization_config "version").
inline constexpr char kFormatVersion[] = "1.4.1";
// quantization_config "quantizer": who wrote it.
inline constexpr char kQuantizerName[] = "twinspan-quantize";

struct QuantizeOptions {
  std::string in_dir;   // HF checkpoint: config.json + safetensors.
  std::string out_dir;  // Must not exist, or be an empty folder.
  double bits = 4.0;    // Average K of the decoder linears, 1..8; fractional mixes floor and +1.
  int head_bits = 6;    // lm_head's K, 1..8, or 16 to keep it unquantized.
  exl3::Codebook codebook = exl3::Codebook::kMul1;
  std::string calibration_file;  // UTF-8 text; empty: seeded random tokens only.
  int64_t cal_rows = 100;        // Calibration sequences (exllamav3's default is 250).
  int64_t cal_cols = 2048;       // Tokens per sequence.
  std::string device = "cpu";    // "cpu" or "cuda:N" (the encoder's device).
  int threads = 2;
  uint64_t seed = 1;
  bool out_scales = true;  // quantization_config out_scales "always" (false: "never").
  // Which basis the LDLQ Hessian is rotated into (see quantize_linear.h); kScales measures better.
  exl3::quantize::HessianBasis hessian_basis = exl3::quantize::HessianBasis::kScales;

  // InvalidArgument naming the flag: bits outside [1, 8], head bits not 1..8 or 16, cal rows or
  // cols < 1, threads < 1, an empty --in or --out, a device that is neither cpu nor cuda:N.
  absl::Status Validate() const;
};

// "mcg", "mul1", "3inst". InvalidArgument naming the value otherwise.
absl::StatusOr<exl3::Codebook> ParseCodebook(const std::string& name);

}  // namespace twinspan::quantize

#endif  // TWINSPAN_TOOLS_QUANTIZE_QUANTIZE_OPTIONS_H_
