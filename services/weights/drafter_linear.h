// Loads one of the drafter's own linears: dense (`P.weight`, bf16/fp16/fp32), EXL3 (`P.trellis` &
// co.) or Q4 (`P.q4_codes` / `P.q4_scales` / `P.q4_offsets`, docs/formats.md), and quantizes a
// dense one to Q4 at load when asked (the drafter's linears at 4 bits read a quarter of bf16's
// bytes a round).
#ifndef TWINSPAN_SERVICES_WEIGHTS_DRAFTER_LINEAR_H_
#define TWINSPAN_SERVICES_WEIGHTS_DRAFTER_LINEAR_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/safetensors/checkpoint.h"
#include "kernels/cpu/linear.h"

namespace twinspan::drafter {

// How the drafter's linears are held after loading.
enum class LinearBits {
  kAsStored,  // As the checkpoint stores each one: dense, EXL3 or Q4.
  kQ4,        // Dense linears quantized to Q4 at load; Q4 ones as stored.
};

// The linear `prefix` with HF shape [out_features, in_features]. Errors: NotFound when none of the
// three forms exists; InvalidArgument naming the tensor for a wrong dtype or shape, a Q4 linear
// whose in_features is not a multiple of 128, or kQ4 asked of an EXL3 linear (already quantized).
absl::StatusOr<cpu::LinearWeight> LoadDrafterLinear(const Checkpoint& checkpoint,
                                                    const std::string& prefix, int64_t out_features,
                                                    int64_t in_features, LinearBits bits);

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_WEIGHTS_DRAFTER_LINEAR_H_
