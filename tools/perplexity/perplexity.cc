#include "tools/perplexity/perplexity.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace twinspan::tools {

double PerplexityResult::perplexity() const { return std::exp(mean_nll()); }

absl::StatusOr<PerplexityResult> MeasurePerplexity(
    const target::TargetModel& model, absl::Span<const int32_t> ids, int64_t window,
    const std::function<void(int64_t, int64_t)>& progress) {
  if (window < 2 || ids.size() < 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "perplexity: window %d over %d tokens (needs a window of at least 2 and 2 tokens)", window,
        ids.size()));
  }
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t total = (n + window - 1) / window;
  const int64_t vocab = model.config().vocab_size;
  PerplexityResult result;
  for (int64_t start = 0, done = 0; start + 1 < n; start += window, ++done) {
    const int64_t len = std::min(window, n - start);
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> state, model.NewSequence());
    target::ForwardRequest request;
    request.tokens = ids.subspan(start, len);
    target::ForwardResult out;
    ABSL_RETURN_IF_ERROR(model.Forward(*state, request, &out));
    for (int64_t r = 0; r + 1 < len; ++r) {
      const float* row = out.logits.data() + r * vocab;
      const float peak = *std::max_element(row, row + vocab);
      double sum = 0.0;  // log-sum-exp in double, so the table's digits are the model's
      for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - peak);
      result.nll_sum += std::log(sum) + peak - row[ids[start + r + 1]];
    }
    result.scored_tokens += len - 1;
    ++result.windows;
    if (progress) progress(done + 1, total);
  }
  return result;
}

}  // namespace twinspan::tools
