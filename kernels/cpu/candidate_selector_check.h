// SelectorWalk's argument checks, shared by the CPU op and its CUDA twin so both refuse the same
// arguments with the same messages. A backend with limits of its own checks them between the two.
#ifndef TWINSPAN_KERNELS_CPU_CANDIDATE_SELECTOR_CHECK_H_
#define TWINSPAN_KERNELS_CPU_CANDIDATE_SELECTOR_CHECK_H_

#include "absl/status/status.h"
#include "kernels/cpu/candidate_selector.h"

namespace twinspan::cpu {

// Where a walk's candidate ids and codebooks live. kHost: the ids are read and range-checked here.
// kDevice: the ids are not readable here (the kernel fails a bad one visibly) and each codebook
// must be aligned for its element type; uniforms are host memory either way.
enum class SelectorWalkMemory { kHost, kDevice };

// Errors: InvalidArgument unless slots >= 0, top_k > 0 and rank > 0.
absl::Status CheckSelectorWalkShape(const SelectorWalkParams& params);

// REQUIRES: CheckSelectorWalkShape(params) is OK.
// Errors: InvalidArgument naming the argument for temperature < 0, a size that disagrees with
// `params`, a codebook of the wrong shape (or misaligned, kDevice), codebooks of different
// row counts, an anchor id outside [0, V), a candidate id outside [0, V) (kHost), or a sampled
// walk without one uniform in [0, 1) per slot; checked in that order.
absl::Status CheckSelectorWalkArguments(const SelectorWalkInputs& inputs,
                                        const SelectorWalkOutputs& outputs,
                                        const SelectorWalkParams& params,
                                        SelectorWalkMemory memory);

// SelectorScoreTable's checks: those of the walk's inputs (sizes, codebooks, anchor and, kHost,
// candidate ids, in the walk's order), then the table's size (S * k * k).
// REQUIRES: CheckSelectorWalkShape(params) is OK.
absl::Status CheckSelectorScoreTableArguments(const SelectorWalkInputs& inputs, size_t table_size,
                                              const SelectorWalkParams& params,
                                              SelectorWalkMemory memory);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_CANDIDATE_SELECTOR_CHECK_H_
