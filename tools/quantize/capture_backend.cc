#include "tools/quantize/capture_backend.h"

#include <vector>

#include "common/status.h"

namespace twinspan::quantize {

absl::StatusOr<std::unique_ptr<backend::LinearHandle>> CaptureBackend::UploadLinear(
    const cpu::LinearWeight& weight) {
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<backend::LinearHandle> handle,
                        inner().UploadLinear(weight));
  if (tracked_.count(weight.source()) > 0) handles_[handle.get()] = Tracked{weight.source(), {}};
  return handle;
}

absl::Status CaptureBackend::Linear(const float* x, int64_t x_stride, int64_t rows,
                                    const backend::LinearHandle& w, float* y, int64_t y_stride) {
  const backend::LinearOutput out{&w, y, y_stride};
  return Linears(x, x_stride, rows, absl::MakeConstSpan(&out, 1));
}

absl::Status CaptureBackend::Linears(const float* x, int64_t x_stride, int64_t rows,
                                     absl::Span<const backend::LinearOutput> outs) {
  std::vector<backend::LinearOutput> run(outs.begin(), outs.end());
  std::unique_ptr<exl3::quantize::HessianAccumulator> hessian;  // One per input, if needed.
  for (backend::LinearOutput& o : run) {
    auto it = handles_.find(o.w);
    if (it == handles_.end()) continue;
    Tracked& t = it->second;
    if (t.quantized == nullptr) {
      if (hessian == nullptr) {
        hessian = std::make_unique<exl3::quantize::HessianAccumulator>(o.w->in_features());
        hessian->Add(pool_, x, rows, x_stride);
      }
      ABSL_ASSIGN_OR_RETURN(const cpu::LinearWeight quantized, quantize_(t.prefix, *hessian));
      ABSL_ASSIGN_OR_RETURN(t.quantized, inner().UploadLinear(quantized));
    }
    o.w = t.quantized.get();
  }
  return inner().Linears(x, x_stride, rows, run);
}

std::set<std::string> CaptureBackend::uncaptured() const {
  std::set<std::string> left;
  for (const auto& [handle, t] : handles_) {
    if (t.quantized == nullptr) left.insert(t.prefix);
  }
  return left;
}

}  // namespace twinspan::quantize
