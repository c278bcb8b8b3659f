// The quantizer's tile encoder (common/exl3/quantize/tile_encoder.h) on one GPU:
// cuda::TrellisEncode between host copies, so twinspan-quantize --device cuda:N writes the CPU
// encoder's bits, sooner.
#ifndef TWINSPAN_KERNELS_CUDA_CUDA_TILE_ENCODER_H_
#define TWINSPAN_KERNELS_CUDA_CUDA_TILE_ENCODER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/exl3/quantize/tile_encoder.h"

namespace twinspan::cuda {

// An encoder on CUDA device `device` with its own stream; name() is "cuda:<device>". Encode copies
// the tiles in, encodes, copies states and values out and waits, reusing device buffers that grow
// to the largest batch seen; it makes the device current for the call and restores the caller's.
// InvalidArgument naming cuda:<device> when this process sees no such device (none at all
// included); Internal naming it when CUDA cannot start or create the stream. Encode's device errors
// (ResourceExhausted for memory, else Internal) name the device too.
absl::StatusOr<std::unique_ptr<exl3::quantize::TileEncoder>> NewCudaTileEncoder(int device);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_CUDA_TILE_ENCODER_H_
