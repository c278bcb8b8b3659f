#include "kernels/cuda/exl3_weight.h"

#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/exl3/format.h"
#include "common/safetensors/half.h"
#include "common/status.h"
#include "kernels/cuda/exl3_layout.h"
#include "kernels/cuda/exl3_relayout.h"

namespace twinspan::cuda {

struct DeviceExl3Weight::Buffers {
  void* trellis = nullptr;
  __half* suh = nullptr;
  __half* svh = nullptr;
  __half* bias = nullptr;
  ~Buffers() {
    cudaFree(trellis);
    cudaFree(suh);
    cudaFree(svh);
    cudaFree(bias);
  }
};

namespace {

absl::Status CopyHalves(std::span<const float> values, __half** dst, const std::string& what) {
  std::vector<uint16_t> h(values.size());
  for (size_t i = 0; i < values.size(); ++i) h[i] = FloatToHalf(values[i]);  // Exact fp16 values.
  if (cudaMalloc(reinterpret_cast<void**>(dst), h.size() * sizeof(uint16_t)) != cudaSuccess ||
      cudaMemcpy(*dst, h.data(), h.size() * sizeof(uint16_t), cudaMemcpyHostToDevice) !=
          cudaSuccess)
    return absl::InternalError("DeviceExl3Weight: cannot upload " + what);
  return absl::OkStatus();
}

}  // namespace

Exl3Codebook ToDeviceCodebook(exl3::Codebook c) {
  switch (c) {
    case exl3::Codebook::k3Inst:
      return Exl3Codebook::k3inst;
    case exl3::Codebook::kMcg:
      return Exl3Codebook::kMcg;
    case exl3::Codebook::kMul1:
      break;
  }
  return Exl3Codebook::kMul1;
}

absl::StatusOr<DeviceExl3Weight> DeviceExl3Weight::Upload(const exl3::Weight& w, int threads) {
  if (w.first_column() != 0 || w.n() != w.stored_n() || w.k() <= 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "DeviceExl3Weight::Upload(\"%s\"): upload the stored matrix, not a view (first column %d, "
        "n %d of %d)",
        w.name(), w.first_column(), w.n(), w.stored_n()));
  DeviceExl3Weight d;
  d.stored_ = w;
  d.buffers_ = std::make_shared<Buffers>();
  const size_t bytes = static_cast<size_t>(w.k()) * w.n() * w.bits() / 8;
  const std::unique_ptr<uint32_t[]> layout = RelayoutExl3(w, threads);
  if (cudaMalloc(&d.buffers_->trellis, bytes) != cudaSuccess ||
      cudaMemcpy(d.buffers_->trellis, layout.get(), bytes, cudaMemcpyHostToDevice) != cudaSuccess)
    return absl::InternalError(absl::StrFormat(
        "DeviceExl3Weight: cannot upload the %d-byte trellis of \"%s\"", bytes, w.name()));
  ABSL_RETURN_IF_ERROR(CopyHalves(w.suh(), &d.buffers_->suh, w.name() + ".suh"));
  ABSL_RETURN_IF_ERROR(CopyHalves(w.svh(), &d.buffers_->svh, w.name() + ".svh"));
  if (w.has_bias())
    ABSL_RETURN_IF_ERROR(CopyHalves(w.bias(), &d.buffers_->bias, w.name() + ".bias"));
  return d;
}

absl::StatusOr<Exl3DeviceWeight> DeviceExl3Weight::View(const exl3::Weight& view) const {
  if (!buffers_ || view.name() != stored_.name() || view.k() != stored_.k() ||
      view.bits() != stored_.bits() || view.stored_n() != stored_.n())
    return absl::InvalidArgumentError(absl::StrFormat(
        "DeviceExl3Weight::View: \"%s\" [k=%d, stored n=%d, K=%d] is not a view of the uploaded "
        "\"%s\" [k=%d, n=%d, K=%d]",
        view.name(), view.k(), view.stored_n(), view.bits(), stored_.name(), stored_.k(),
        stored_.n(), stored_.bits()));
  Exl3DeviceWeight d;
  d.trellis = static_cast<const uint32_t*>(buffers_->trellis) +
              view.first_column() / exl3::kHadamardSize * Exl3BlockWords(view.k(), view.bits());
  d.suh = buffers_->suh;
  d.svh = buffers_->svh + view.first_column();
  d.bias = buffers_->bias ? buffers_->bias + view.first_column() : nullptr;
  d.k = view.k();
  d.n = view.n();
  d.bits = view.bits();
  d.codebook = ToDeviceCodebook(view.codebook());
  d.k_splits = view.plan().k_splits;
  d.warps = view.plan().warps;
  return d;
}

absl::StatusOr<Exl3DeviceSpan> DeviceExl3Weight::Span(const exl3::SpanView& span) const {
  ABSL_ASSIGN_OR_RETURN(Exl3DeviceWeight view, View(span.weight));
  return Exl3DeviceSpan{view, span.drop_front(), span.size()};
}

}  // namespace twinspan::cuda
