#include "services/drafter/draft_head.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace twinspan::drafter {

absl::StatusOr<DraftHead> DraftHead::Create(backend::Backend& backend,
                                            const cpu::LinearWeight& lm_head, HeadVariant variant) {
  if (lm_head.empty())
    return absl::InvalidArgumentError("DraftHead: the target's lm_head is empty");
  const int64_t vocab = lm_head.out_features(), h = lm_head.in_features();
  for (const exl3::ColumnSpan& span : variant.spans) {
    if (span.begin < 0 || span.begin >= span.end || span.end > vocab) {
      return absl::InvalidArgumentError(
          absl::StrFormat("DraftHead: head variant %s span %d:%d is outside the head's [0, %d)",
                          variant.name, span.begin, span.end, vocab));
    }
  }
  if (lm_head.is_q4()) {
    return absl::UnimplementedError("DraftHead: a Q4 lm_head is not supported (dense or EXL3)");
  }
  DraftHead head;
  head.columns_ = variant.columns();
  head.hidden_size_ = h;
  if (lm_head.is_exl3()) {
    ABSL_ASSIGN_OR_RETURN(head.exl3_views_, exl3::MakeSpanViews(*lm_head.exl3(), variant.spans));
    ABSL_ASSIGN_OR_RETURN(head.span_head_, backend.UploadSpanHead(head.exl3_views_));
  } else {
    std::vector<float> rows;
    rows.reserve(head.columns_ * h);
    for (const exl3::ColumnSpan& span : variant.spans) {
      for (int64_t j = span.begin; j < span.end; ++j) {
        rows.insert(rows.end(), lm_head.dense_row(j), lm_head.dense_row(j) + h);
      }
    }
    ABSL_ASSIGN_OR_RETURN(const cpu::LinearWeight spans,
                          cpu::LinearWeight::Dense(head.columns_, h, std::move(rows)));
    ABSL_ASSIGN_OR_RETURN(head.dense_spans_, backend.UploadLinear(spans));
  }
  head.variant_ = std::move(variant);
  return head;
}

absl::Status DraftHead::Logits(backend::Backend& backend, const float* hidden,
                               int64_t hidden_stride, int64_t rows, float* logits) const {
  if (rows < 0 || rows > kMaxHeadRows) {
    return absl::InvalidArgumentError(
        absl::StrFormat("DraftHead::Logits: rows = %d is outside [0, %d]", rows, kMaxHeadRows));
  }
  if (rows == 0) return absl::OkStatus();
  if (dense_spans_ != nullptr) {
    return backend.Linear(hidden, hidden_stride, rows, *dense_spans_, logits, columns_);
  }
  return backend.SpanLinear(hidden, hidden_stride, rows, *span_head_, logits, columns_);
}

}  // namespace twinspan::drafter
