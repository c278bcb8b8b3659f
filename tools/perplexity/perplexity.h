// Perplexity of a target model on a token stream: the quantizer's quality table (docs/quantize.md)
// compares bf16 and each EXL3 bit width on held-out text with it. Backs twinspan-perplexity.
#ifndef TWINSPAN_TOOLS_PERPLEXITY_PERPLEXITY_H_
#define TWINSPAN_TOOLS_PERPLEXITY_PERPLEXITY_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "services/target/target_model.h"

namespace twinspan::tools {

struct PerplexityResult {
  int64_t windows = 0;
  int64_t scored_tokens = 0;  // Every token of a window but its first.
  double nll_sum = 0.0;       // Natural log, summed over scored tokens.

  double mean_nll() const { return scored_tokens > 0 ? nll_sum / scored_tokens : 0.0; }
  double perplexity() const;
};

// Cuts `ids` into consecutive windows of `window` tokens (a shorter last one if it has at least
// two), runs each as one fresh sequence and scores each token after the first by the log-softmax
// of the row before it. `progress(done, total)` is called after each window when set.
// InvalidArgument for window < 2 or fewer than two ids; the model's errors (a window longer than
// its context, ids outside the vocabulary).
absl::StatusOr<PerplexityResult> MeasurePerplexity(
    const target::TargetModel& model, absl::Span<const int32_t> ids, int64_t window,
    const std::function<void(int64_t, int64_t)>& progress = nullptr);

}  // namespace twinspan::tools

#endif  // TWINSPAN_TOOLS_PERPLEXITY_PERPLEXITY_H_
