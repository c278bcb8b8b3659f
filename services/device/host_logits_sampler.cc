#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "kernels/cpu/mask_logits.h"
#include "services/device/logits_sampler.h"

namespace twinspan::device {

absl::Status HostLogitsSampler::Sample(backend::Backend& backend, backend::Buffer& logits,
                                       int64_t vocab, absl::Span<const RowDraw> rows,
                                       std::vector<int32_t>* tokens) {
  const size_t floats = rows.size() * static_cast<size_t>(vocab);
  if (vocab < 1 || logits.bytes() < floats * sizeof(float)) {
    return absl::InvalidArgumentError(absl::StrCat("LogitsSampler: ", logits.bytes(),
                                                   " bytes of logits for ", rows.size(),
                                                   " rows of vocabulary ", vocab));
  }
  ABSL_RETURN_IF_ERROR(CheckMasks(rows, vocab));
  host_.resize(floats);
  ABSL_RETURN_IF_ERROR(backend.Download(host_.data(), logits, 0, floats * sizeof(float)));
  tokens->clear();
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!rows[r].allowed.empty()) {
      ABSL_RETURN_IF_ERROR(
          cpu::MaskLogits({}, host_.data() + r * vocab, vocab, vocab, rows[r].allowed.data(), 1));
    }
    const absl::Span<const float> row = absl::MakeConstSpan(host_).subspan(r * vocab, vocab);
    if (std::any_of(row.begin(), row.end(), [](float x) { return std::isnan(x); })) {
      tokens->push_back(-1);  // As the CUDA kernel marks it.
      continue;
    }
    absl::StatusOr<int32_t> id =
        sampler_.Sample(row, rows[r].params, rows[r].seed, rows[r].position);
    if (!id.ok()) {
      return absl::Status(id.status().code(),
                          absl::StrCat("LogitsSampler: row ", r, ": ", id.status().message()));
    }
    tokens->push_back(*id);
  }
  return absl::OkStatus();
}

}  // namespace twinspan::device
