// The tile encoder twinspan-quantize's --device names. The CUDA half lives in
// open_encoder_cuda.cc, built only with the CUDA backend; without it open_encoder_cpu.cc refuses
// cuda:N, so no caller branches on the build.
#ifndef TWINSPAN_TOOLS_QUANTIZE_OPEN_ENCODER_H_
#define TWINSPAN_TOOLS_QUANTIZE_OPEN_ENCODER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/exl3/quantize/tile_encoder.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::quantize {

// "cpu": the CPU's Viterbi over `pool` (not owned; must outlive the encoder). "cuda:N": the CUDA
// encoder on device N (`pool` unused), the same bits. InvalidArgument for any other value, or for
// cuda:N the process does not see; Unimplemented for cuda:N when this build has no CUDA; the CUDA
// encoder's other errors. Every message starts "--device <value>: ".
absl::StatusOr<std::unique_ptr<exl3::quantize::TileEncoder>> OpenTileEncoder(
    const std::string& device, cpu::ThreadPool* pool);

}  // namespace twinspan::quantize

#endif  // TWINSPAN_TOOLS_QUANTIZE_OPEN_ENCODER_H_
