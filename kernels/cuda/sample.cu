// Host side of the keyed sampler: validation, the Philox draws (sampler::KeyedUniform, the CPU
// sampler's own function) and launches of at most kMaxRows rows.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/sample.cuh"
#include "kernels/cuda/sample_kernel.cuh"

namespace twinspan::cuda {
namespace {

namespace sk = sample_kernel;

bool NeedsOrder(const sampler::SamplingParams& params, int64_t vocab) {
  if (params.temperature == 0.0f || params.top_k == 1) return false;
  return (params.top_k > 0 && params.top_k < vocab) || params.top_p < 1.0f;
}

}  // namespace

size_t SampleWorkspaceBytes(int64_t rows, int64_t vocab) {
  return static_cast<size_t>(std::clamp<int64_t>(rows, 0, sk::kMaxRows) *
                             std::max<int64_t>(vocab, 0)) *
         sizeof(int32_t);
}

absl::Status Sample(const Context& ctx, const float* logits, int64_t logits_stride, int64_t vocab,
                    const SampleRow* rows, int64_t num_rows, int32_t* tokens, SampleSums sums) {
  if (vocab < 1 || vocab > 0x7fffffff || logits_stride < vocab || num_rows < 0) {
    return absl::InvalidArgumentError(absl::StrFormat("Sample: vocab %d, logits_stride %d, rows %d",
                                                      vocab, logits_stride, num_rows));
  }
  if (num_rows == 0) return absl::OkStatus();
  if (logits == nullptr || rows == nullptr || tokens == nullptr) {
    return absl::InvalidArgumentError("Sample: logits, rows and tokens must not be null");
  }
  bool needs_order = false;
  for (int64_t r = 0; r < num_rows; ++r) {
    if (absl::Status s = rows[r].params.Validate(); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("Sample: row %d: %s", r, s.message()));
    }
    needs_order |= NeedsOrder(rows[r].params, vocab);
  }
  const size_t needed = SampleWorkspaceBytes(num_rows, vocab);
  if (needs_order && (ctx.workspace == nullptr || ctx.workspace_bytes < needed)) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "Sample: workspace of %d bytes, top_k / top_p rows need %d for %d rows of %d logits",
        ctx.workspace_bytes, needed, num_rows, vocab));
  }
  sk::Params p;
  p.stride = logits_stride;
  p.vocab = vocab;
  p.order = static_cast<int32_t*>(ctx.workspace);
  p.sequential = sums == SampleSums::kSequential;
  for (int64_t r0 = 0; r0 < num_rows; r0 += sk::kMaxRows) {
    const int64_t n = std::min<int64_t>(sk::kMaxRows, num_rows - r0);
    for (int64_t r = 0; r < n; ++r) {
      const SampleRow& row = rows[r0 + r];
      sk::RowParams& rp = p.rows.v[r];
      rp.temperature = row.params.temperature;
      rp.top_k = row.params.top_k;
      rp.top_p = row.params.top_p;
      rp.min_p = row.params.min_p;
      rp.uniform =
          row.params.temperature == 0.0f ? 0.0 : sampler::KeyedUniform(row.seed, row.position);
    }
    p.logits = logits + r0 * logits_stride;
    p.tokens = tokens + r0;
    sk::SampleKernel<<<static_cast<unsigned>(n), sk::kThreads, 0, ctx.stream>>>(p);
    ABSL_RETURN_IF_ERROR(LaunchStatus("Sample launch"));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
