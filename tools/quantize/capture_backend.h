// The backend the calibration forward runs on: the CPU backend, except that the first call of each
// tracked linear measures its input Hessian from the call's rows (every calibration row: the
// forward runs them all at once), has it quantized, and from then on runs the quantized weight.
// Later layers therefore see the error of the earlier ones, as exllamav3's sequential calibration
// arranges, in a single forward.
#ifndef TWINSPAN_TOOLS_QUANTIZE_CAPTURE_BACKEND_H_
#define TWINSPAN_TOOLS_QUANTIZE_CAPTURE_BACKEND_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "common/exl3/quantize/hessian.h"
#include "kernels/backend/forwarding_backend.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::quantize {

// Quantizes the linear `prefix` for its input Hessian; returns the weight the forward runs from
// then on (the dequantized one).
using QuantizeLinearFn = std::function<absl::StatusOr<cpu::LinearWeight>(
    const std::string& prefix, const exl3::quantize::HessianAccumulator& hessian)>;

// Not thread-safe, like any backend. REQUIRES: `inner` keeps activations in host memory (the CPU
// backend), since they are read where they lie; `inner` and `pool` outlive this.
class CaptureBackend final : public backend::ForwardingBackend {
 public:
  // `tracked`: the prefixes (cpu::LinearWeight::source) to capture.
  CaptureBackend(backend::Backend& inner, cpu::ThreadPool* pool, std::set<std::string> tracked,
                 QuantizeLinearFn quantize)
      : ForwardingBackend(inner),
        pool_(pool),
        tracked_(std::move(tracked)),
        quantize_(std::move(quantize)) {}

  absl::StatusOr<std::unique_ptr<backend::LinearHandle>> UploadLinear(
      const cpu::LinearWeight& weight) override;
  absl::Status Linear(const float* x, int64_t x_stride, int64_t rows,
                      const backend::LinearHandle& w, float* y, int64_t y_stride) override;
  absl::Status Linears(const float* x, int64_t x_stride, int64_t rows,
                       absl::Span<const backend::LinearOutput> outs) override;

  // Tracked prefixes uploaded but never called (their layer did not run).
  std::set<std::string> uncaptured() const;

 private:
  struct Tracked {
    std::string prefix;
    std::unique_ptr<backend::LinearHandle> quantized;  // Null until captured.
  };

  cpu::ThreadPool* const pool_;
  const std::set<std::string> tracked_;
  const QuantizeLinearFn quantize_;
  std::map<const backend::LinearHandle*, Tracked> handles_;
};

}  // namespace twinspan::quantize

#endif  // TWINSPAN_TOOLS_QUANTIZE_CAPTURE_BACKEND_H_
