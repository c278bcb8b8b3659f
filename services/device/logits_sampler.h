// Keyed sampling of logits that stay in a backend's memory: on a GPU the verify window's logits
// never leave the device, only the drawn ids do. Every implementation draws what
// sampler::KeyedSampler draws from the same logits (CudaLogitsSampler: see kernels/cuda/sample.cuh
// for the one bound on that), so drafted == plain holds whichever side samples.
#ifndef TWINSPAN_SERVICES_DEVICE_LOGITS_SAMPLER_H_
#define TWINSPAN_SERVICES_DEVICE_LOGITS_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/sampler/keyed_sampler.h"
#include "kernels/backend/backend.h"

namespace twinspan::device {

// One row to draw: the request's parameters and seed, the absolute position of the token, and
// the ids structured output allows there.
struct RowDraw {
  sampler::SamplingParams params;
  uint64_t seed = 0;
  int64_t position = 0;
  // (vocab + 31) / 32 words, bit (id % 32) of word id / 32 allowing id (engine::TokenMask);
  // empty: every id. Not owned.
  absl::Span<const uint32_t> allowed;
};

// Not thread-safe; the caller is the backend's only issuer while Sample runs.
class LogitsSampler {
 public:
  virtual ~LogitsSampler() = default;
  // (*tokens)[r] = KeyedSampler::Sample(row r of `logits`, rows[r]) for r < rows.size(), or -1
  // for a row holding a NaN (which the CPU sampler refuses: the caller fails that row's stream
  // alone). `logits` holds [rows.size(), vocab] floats from its start, written by `backend` (its
  // pending ops are waited for); a row with an `allowed` mask is first masked in place
  // (MaskLogits: the other ids become -inf). InvalidArgument naming the row for bad params or a
  // mask of the wrong size, and for a buffer too small or a backend this sampler cannot read;
  // Internal for device errors.
  virtual absl::Status Sample(backend::Backend& backend, backend::Buffer& logits, int64_t vocab,
                              absl::Span<const RowDraw> rows, std::vector<int32_t>* tokens) = 0;
};

// OK when every row's mask is empty or (vocab + 31) / 32 words; else InvalidArgument naming the
// row.
inline absl::Status CheckMasks(absl::Span<const RowDraw> rows, int64_t vocab) {
  const size_t words = static_cast<size_t>((vocab + 31) / 32);
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!rows[r].allowed.empty() && rows[r].allowed.size() != words) {
      return absl::InvalidArgumentError(
          absl::StrCat("LogitsSampler: row ", r, ": a mask of ", rows[r].allowed.size(),
                       " words for vocabulary ", vocab, " (", words, " words)"));
    }
  }
  return absl::OkStatus();
}

// Downloads the logits and runs sampler::KeyedSampler on the host: any backend. The reference the
// device samplers are tested against, and the CPU tests' stand-in for them.
class HostLogitsSampler : public LogitsSampler {
 public:
  absl::Status Sample(backend::Backend& backend, backend::Buffer& logits, int64_t vocab,
                      absl::Span<const RowDraw> rows, std::vector<int32_t>* tokens) override;

 private:
  sampler::KeyedSampler sampler_;
  std::vector<float> host_;
};

}  // namespace twinspan::device

#endif  // TWINSPAN_SERVICES_DEVICE_LOGITS_SAMPLER_H_
