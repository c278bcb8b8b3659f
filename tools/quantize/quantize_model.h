// twinspan-quantize's driver: an HF qwen3 / qwen3_5 checkpoint in, an EXL3 checkpoint out.
//
// 1. Checks the options, the output folder (staged beside it), the config and every weight.
// 2. Runs the calibration rows through the model itself (services/target on the CPU backend)
//    once, on a CaptureBackend: each linear is quantized when the forward first reaches it, from
//    the Hessian of the inputs it sees there, and runs quantized from then on (sequential
//    calibration). The head is quantized last, from the final norm of the last layer's output.
// 3. Writes the folder and moves it into place; on any error nothing is left at --out.
#ifndef TWINSPAN_TOOLS_QUANTIZE_QUANTIZE_MODEL_H_
#define TWINSPAN_TOOLS_QUANTIZE_QUANTIZE_MODEL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/exl3/quantize/tile_encoder.h"
#include "tools/quantize/progress.h"
#include "tools/quantize/quantize_options.h"

namespace twinspan::quantize {

struct QuantizeSummary {
  int64_t tensors = 0;      // Linears quantized (the head included).
  double average_bits = 0;  // Over the decoder linears.
  double worst_proxy_error = 0;
  std::string worst_tensor;
  double seconds = 0;
};

// Errors name what is wrong: options (InvalidArgument), --device (those of OpenTileEncoder:
// Unimplemented for cuda:N in a build without CUDA), the output folder (AlreadyExists, NotFound,
// PermissionDenied), the model (those of PlanModel and OpenTargetModel), the calibration file, the
// quantizer. `encoder` encodes the tiles (not owned; tests inject one); null: the one
// options.device names (tools/quantize/open_encoder.h).
absl::StatusOr<QuantizeSummary> QuantizeModel(const QuantizeOptions& options, Progress& progress,
                                              const exl3::quantize::TileEncoder* encoder = nullptr);

}  // namespace twinspan::quantize

#endif  // TWINSPAN_TOOLS_QUANTIZE_QUANTIZE_MODEL_H_
