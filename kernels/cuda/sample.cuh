// The keyed sampler on the GPU: the twin of sampler::KeyedSampler::Sample
// (common/sampler/keyed_sampler.h) for a batch of logits rows, each with its own params, seed and
// position. The draw u is sampler::KeyedUniform(seed, position), the same Philox4x32-10 stream,
// computed on the host; temperature, top_k, top_p and min_p follow the CPU sampler step for step,
// in double, walking the same orders (id order, or (z descending, id ascending)).
//
// Where it can differ from the CPU sampler: sums of weights run in a parallel order with a
// rigorous error bound, and CUDA's double exp is within 1 ulp where glibc's is within 0.51 ulp.
// Each cut or draw whose bound does not settle it reruns the CPU's sequential sum on one thread,
// which matches the CPU's decision unless the two exps differ in the last bit of a weight it
// depends on; a mismatch therefore needs u (or the top_p cut) to land within about 1e-10 of a
// boundary, relative to the total weight, and the exps to disagree there. Deterministic and
// row-invariant either way: a row's token depends on its own logits and params only.
#ifndef TWINSPAN_KERNELS_CUDA_SAMPLE_CUH_
#define TWINSPAN_KERNELS_CUDA_SAMPLE_CUH_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "common/sampler/keyed_sampler.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// How sums are decided: kCertified as above; kSequential always sums in the CPU's order on one
// thread (slow; tests of that fallback).
enum class SampleSums { kCertified, kSequential };

// One row's request: the position is that of the token it samples.
struct SampleRow {
  sampler::SamplingParams params;
  uint64_t seed = 0;
  int64_t position = 0;
};

// Bytes of ctx.workspace Sample needs for `rows` rows of `vocab` logits (the sorted candidate order
// of rows with top_k or top_p on).
size_t SampleWorkspaceBytes(int64_t rows, int64_t vocab);

// tokens[r] (device int32) = KeyedSampler::Sample(logits row r, rows[r].params, rows[r].seed,
// rows[r].position), with logits row r at logits + r * logits_stride (device). The host cannot see
// the logits, so a row holding a NaN gets token -1 (the CPU sampler refuses it). InvalidArgument
// naming the row and field for bad params (SamplingParams::Validate), vocab outside [1, 2^31 - 1],
// a stride below vocab or a null pointer; ResourceExhausted for a workspace below
// SampleWorkspaceBytes when a row needs it. Asynchronous on ctx.stream.
absl::Status Sample(const Context& ctx, const float* logits, int64_t logits_stride, int64_t vocab,
                    const SampleRow* rows, int64_t num_rows, int32_t* tokens,
                    SampleSums sums = SampleSums::kCertified);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_SAMPLE_CUH_
