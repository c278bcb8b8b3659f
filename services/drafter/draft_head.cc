#include "services/drafter/draft_head.h"

#include <algorithm>
#include <span>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace twinspan::drafter {

absl::StatusOr<DraftHead> DraftHead::Create(const cpu::LinearWeight& lm_head, HeadVariant variant) {
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
    for (const exl3::SpanView& view : head.exl3_views_) {
      head.exl3_view_weights_.push_back(cpu::LinearWeight::Exl3(view.weight));
    }
  } else {
    std::vector<float> rows;
    rows.reserve(head.columns_ * h);
    for (const exl3::ColumnSpan& span : variant.spans) {
      for (int64_t j = span.begin; j < span.end; ++j) {
        rows.insert(rows.end(), lm_head.dense_row(j), lm_head.dense_row(j) + h);
      }
    }
    ABSL_ASSIGN_OR_RETURN(head.dense_spans_,
                          cpu::LinearWeight::Dense(head.columns_, h, std::move(rows)));
  }
  head.variant_ = std::move(variant);
  return head;
}

absl::Status DraftHead::Logits(const cpu::Context& ctx, const float* hidden, int64_t rows,
                               float* logits) const {
  if (exl3_views_.empty()) return cpu::Linear(ctx, hidden, rows, dense_spans_, logits);
  std::vector<std::vector<float>> outputs(exl3_views_.size());
  std::vector<const float*> pointers;
  for (size_t i = 0; i < exl3_views_.size(); ++i) {
    outputs[i].resize(rows * exl3_views_[i].weight.n());
    ABSL_RETURN_IF_ERROR(cpu::Linear(ctx, hidden, rows, exl3_view_weights_[i], outputs[i].data()));
    pointers.push_back(outputs[i].data());
  }
  return exl3::PackSpanLogits(exl3_views_, pointers, rows, logits, columns_);
}

}  // namespace twinspan::drafter
