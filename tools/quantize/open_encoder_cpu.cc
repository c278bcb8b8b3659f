// The encoders of a build without CUDA: only the CPU.
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "tools/quantize/open_encoder.h"

namespace twinspan::quantize {

absl::StatusOr<std::unique_ptr<exl3::quantize::TileEncoder>> OpenTileEncoder(
    const std::string& device, cpu::ThreadPool* pool) {
  if (device == "cpu") return std::make_unique<exl3::quantize::CpuTileEncoder>(pool);
  if (absl::StartsWith(device, "cuda:")) {
    return absl::UnimplementedError(
        absl::StrFormat("--device %s: this build has no CUDA (configured without nvcc, or with "
                        "-DTWINSPAN_CUDA=OFF); rebuild with nvcc installed, or use --device cpu",
                        device));
  }
  return absl::InvalidArgumentError(absl::StrFormat("--device %s: cpu or cuda:N", device));
}

}  // namespace twinspan::quantize
