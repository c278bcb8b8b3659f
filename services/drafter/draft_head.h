// The drafter's output head: the target's lm_head (dense or EXL3) restricted to a head variant's
// spans, in the drafter's backend. For EXL3 each span runs as a view of whole 128-column blocks
// that plans as the whole head does (exl3::MakeSpanViews), and the backend's SpanLinear writes the
// spans' logits side by side (one launch on CUDA), so its logits equal the full head's at the same
// columns bit for bit.
#ifndef TWINSPAN_SERVICES_DRAFTER_DRAFT_HEAD_H_
#define TWINSPAN_SERVICES_DRAFTER_DRAFT_HEAD_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/exl3/span_view.h"
#include "kernels/backend/backend.h"
#include "kernels/cpu/linear.h"
#include "services/drafter/head_variant.h"

namespace twinspan::drafter {

// Rows one Logits call takes: a block's proposals (B - 1 <= 15).
inline constexpr int64_t kMaxHeadRows = 16;

// Immutable after Create; calls issue backend ops, so they run under the Drafter's model's backend
// lock. Movable; must not outlive its backend.
class DraftHead {
 public:
  DraftHead() = default;

  // Uploads the head's span weights to `backend`. `lm_head` is the target's [V, H] head
  // (out_features = V); an EXL3 head's views share its memory on the CPU backend. InvalidArgument
  // when a span lies outside [0, V) or an EXL3 view cannot be made; Unimplemented for a Q4 head;
  // the backend's upload errors.
  static absl::StatusOr<DraftHead> Create(backend::Backend& backend,
                                          const cpu::LinearWeight& lm_head, HeadVariant variant);

  const HeadVariant& variant() const { return variant_; }
  int64_t columns() const { return columns_; }
  int64_t hidden_size() const { return hidden_size_; }
  // An EXL3 head's span views (empty for a dense head), for byte counts.
  const std::vector<exl3::SpanView>& exl3_views() const { return exl3_views_; }

  // logits[rows, columns()] (row stride columns()) = the head's logits at the variant's columns,
  // in span order, from hidden [rows, H] (row stride hidden_stride); both in backend memory. Column
  // c is token variant().GlobalId(c). InvalidArgument for rows outside [0, kMaxHeadRows]; errors of
  // the backend's ops. REQUIRES: `backend` is the one Create uploaded to.
  absl::Status Logits(backend::Backend& backend, const float* hidden, int64_t hidden_stride,
                      int64_t rows, float* logits) const;

 private:
  HeadVariant variant_;
  int64_t columns_ = 0;
  int64_t hidden_size_ = 0;
  // Dense heads: one weight of the spans' rows, copied once (Linear's per-column Dot keeps them
  // bit-identical to the full head). EXL3 heads: the span views, uploaded as one span head.
  std::unique_ptr<backend::LinearHandle> dense_spans_;
  std::vector<exl3::SpanView> exl3_views_;
  std::unique_ptr<backend::SpanHeadHandle> span_head_;
};

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_DRAFT_HEAD_H_
