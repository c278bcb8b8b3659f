// The encoders of a build with the CUDA backend (kernels/cuda/cuda_tile_encoder.h).
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "kernels/cuda/cuda_tile_encoder.h"
#include "tools/quantize/open_encoder.h"

namespace twinspan::quantize {

absl::StatusOr<std::unique_ptr<exl3::quantize::TileEncoder>> OpenTileEncoder(
    const std::string& device, cpu::ThreadPool* pool) {
  if (device == "cpu") return std::make_unique<exl3::quantize::CpuTileEncoder>(pool);
  int ordinal = -1;
  if (!absl::StartsWith(device, "cuda:") ||
      !absl::SimpleAtoi(absl::string_view(device).substr(5), &ordinal) || ordinal < 0) {
    return absl::InvalidArgumentError(absl::StrFormat("--device %s: cpu or cuda:N", device));
  }
  absl::StatusOr<std::unique_ptr<exl3::quantize::TileEncoder>> encoder =
      cuda::NewCudaTileEncoder(ordinal);
  if (!encoder.ok()) {
    const absl::string_view message = encoder.status().message();
    // The encoder's messages already start "cuda:N: ".
    return absl::Status(encoder.status().code(),
                        absl::StartsWith(message, device + ":")
                            ? absl::StrFormat("--device %s", message)
                            : absl::StrFormat("--device %s: %s", device, message));
  }
  return encoder;
}

}  // namespace twinspan::quantize
