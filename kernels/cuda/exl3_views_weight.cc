#include "kernels/cuda/exl3_views_weight.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_format.h"
#include "common/safetensors/half.h"
#include "common/status.h"
#include "kernels/cuda/exl3_relayout.h"
#include "kernels/cuda/exl3_weight.h"

namespace twinspan::cuda {

struct DeviceExl3Views::Buffers {
  std::vector<void*> blocks;  // cudaMalloc'd: every trellis, svh, bias and the suh.
  ~Buffers() {
    for (void* p : blocks) cudaFree(p);
  }
  // A device copy of `bytes` from host `src`; Internal naming `what` on failure.
  absl::StatusOr<void*> Copy(const void* src, size_t bytes, const std::string& what) {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();
      return absl::InternalError(
          absl::StrFormat("DeviceExl3Views: cannot allocate %d bytes for %s", bytes, what));
    }
    blocks.push_back(p);
    if (cudaMemcpy(p, src, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
      return absl::InternalError(absl::StrFormat("DeviceExl3Views: cannot copy %s", what));
    }
    return p;
  }
  absl::StatusOr<const __half*> CopyHalves(std::span<const float> values, const std::string& what) {
    std::vector<uint16_t> h(values.size());
    for (size_t i = 0; i < values.size(); ++i) h[i] = FloatToHalf(values[i]);  // Exact fp16 values.
    ABSL_ASSIGN_OR_RETURN(void* p, Copy(h.data(), h.size() * sizeof(uint16_t), what));
    return static_cast<const __half*>(p);
  }
};

namespace {

bool SameMatrix(const exl3::Weight& a, const exl3::Weight& b) {
  return a.name() == b.name() && a.k() == b.k() && a.stored_n() == b.stored_n() &&
         a.bits() == b.bits() && a.codebook() == b.codebook() && a.plan() == b.plan() &&
         std::equal(a.suh().begin(), a.suh().end(), b.suh().begin(), b.suh().end());
}

}  // namespace

absl::StatusOr<DeviceExl3Views> DeviceExl3Views::Upload(std::span<const exl3::Weight> views,
                                                        int threads) {
  if (views.empty()) return absl::InvalidArgumentError("DeviceExl3Views::Upload: no views");
  for (size_t i = 0; i < views.size(); ++i) {
    if (views[i].k() <= 0 || views[i].n() <= 0 || !SameMatrix(views[i], views[0])) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "DeviceExl3Views::Upload: view %d (\"%s\", k %d, stored n %d, K %d) is not of the matrix "
          "of view 0 (\"%s\", k %d, stored n %d, K %d)",
          i, views[i].name(), views[i].k(), views[i].stored_n(), views[i].bits(), views[0].name(),
          views[0].k(), views[0].stored_n(), views[0].bits()));
    }
  }
  DeviceExl3Views d;
  d.buffers_ = std::make_shared<Buffers>();
  const std::string& name = views[0].name();
  ABSL_ASSIGN_OR_RETURN(const __half* suh, d.buffers_->CopyHalves(views[0].suh(), name + ".suh"));
  for (const exl3::Weight& v : views) {
    const std::string what =
        absl::StrFormat("%s columns [%d, %d)", name, v.first_column(), v.first_column() + v.n());
    const size_t bytes = static_cast<size_t>(v.k()) * v.n() * v.bits() / 8;
    const std::unique_ptr<uint32_t[]> layout = RelayoutExl3(v, threads);
    ABSL_ASSIGN_OR_RETURN(void* trellis, d.buffers_->Copy(layout.get(), bytes, what));
    Exl3DeviceWeight w;
    w.trellis = static_cast<const uint32_t*>(trellis);
    w.suh = suh;
    ABSL_ASSIGN_OR_RETURN(w.svh, d.buffers_->CopyHalves(v.svh(), what + " svh"));
    if (v.has_bias()) {
      ABSL_ASSIGN_OR_RETURN(w.bias, d.buffers_->CopyHalves(v.bias(), what + " bias"));
    }
    w.k = v.k();
    w.n = v.n();
    w.bits = v.bits();
    w.codebook = ToDeviceCodebook(v.codebook());
    w.k_splits = v.plan().k_splits;
    w.warps = v.plan().warps;
    d.views_.push_back(w);
    d.trellis_bytes_ += static_cast<int64_t>(bytes);
  }
  return d;
}

}  // namespace twinspan::cuda
