// The drafter's output head: the target's lm_head (dense or EXL3) restricted to a head variant's
// spans. For EXL3 each span reads a view of whole 128-column blocks that plans as the whole head
// does (exl3::MakeSpanViews), so its logits equal the full head's at the same columns bit for bit.
#ifndef TWINSPAN_SERVICES_DRAFTER_DRAFT_HEAD_H_
#define TWINSPAN_SERVICES_DRAFTER_DRAFT_HEAD_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/exl3/span_view.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/linear.h"
#include "services/drafter/head_variant.h"

namespace twinspan::drafter {

// Immutable after Create; any number of threads may call Logits.
class DraftHead {
 public:
  DraftHead() = default;

  // `lm_head` is the target's [V, H] head (out_features = V), shared, not copied for EXL3.
  // InvalidArgument when a span lies outside [0, V) or an EXL3 view cannot be made.
  static absl::StatusOr<DraftHead> Create(const cpu::LinearWeight& lm_head, HeadVariant variant);

  const HeadVariant& variant() const { return variant_; }
  int64_t columns() const { return columns_; }
  int64_t hidden_size() const { return hidden_size_; }

  // logits[rows, columns()] (row stride columns()) = the head's logits at the variant's columns,
  // in span order; column c is token variant().GlobalId(c). Errors from the linear op.
  absl::Status Logits(const cpu::Context& ctx, const float* hidden, int64_t rows,
                      float* logits) const;

 private:
  HeadVariant variant_;
  int64_t columns_ = 0;
  int64_t hidden_size_ = 0;
  // Dense heads: one weight of the spans' rows, copied once (Linear's per-column Dot keeps them
  // bit-identical to the full head). EXL3 heads: one column view per span.
  cpu::LinearWeight dense_spans_;
  std::vector<exl3::SpanView> exl3_views_;
  std::vector<cpu::LinearWeight> exl3_view_weights_;
};

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_DRAFT_HEAD_H_
