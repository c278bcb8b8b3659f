#include "kernels/cuda/cuda_weight_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cuda/cuda_backend_handles.h"
#include "kernels/cuda/exl3_views_weight.h"

namespace twinspan::cuda {
namespace {

auto Key(const exl3::Weight& w) { return std::make_tuple(w.name(), w.k(), w.stored_n(), w.bits()); }

bool SameValues(std::span<const float> a, std::span<const float> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

}  // namespace

std::shared_ptr<const DeviceExl3Weight> CudaWeightStore::FindStored(
    const exl3::Weight& view) const {
  const auto it = stored_.find(Key(view));
  if (it == stored_.end()) return nullptr;
  for (const Stored& s : it->second) {
    std::shared_ptr<const DeviceExl3Weight> device = s.device.lock();
    if (device == nullptr || s.host.codebook() != view.codebook() || s.host.plan() != view.plan())
      continue;
    const std::span<const float> svh = s.host.svh().subspan(view.first_column(), view.n());
    if (SameValues(s.host.suh(), view.suh()) && SameValues(svh, view.svh())) return device;
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<backend::LinearHandle>> CudaWeightStore::UploadLinear(
    const cpu::LinearWeight& weight) {
  if (weight.empty()) return absl::InvalidArgumentError("UploadLinear: empty weight");
  if (weight.is_q4()) {
    const cpu::Q4Weight& q = *weight.q4();
    ABSL_ASSIGN_OR_RETURN(DeviceQ4Weight device,
                          DeviceQ4Weight::Upload(q.out_features(), q.in_features(), q.codes(),
                                                 q.scales(), q.offsets()));
    return std::make_unique<CudaLinear>(std::move(device));
  }
  if (!weight.is_exl3()) {
    ABSL_ASSIGN_OR_RETURN(DeviceDenseWeight dense, DeviceDenseWeight::Upload(weight));
    return std::make_unique<CudaLinear>(std::move(dense));
  }
  const exl3::Weight& w = *weight.exl3();
  if (std::shared_ptr<const DeviceExl3Weight> stored = FindStored(w)) {
    ABSL_ASSIGN_OR_RETURN(Exl3DeviceWeight view, stored->View(w));
    return std::make_unique<CudaLinear>(std::move(stored), view);
  }
  if (w.first_column() != 0 || w.n() != w.stored_n()) {  // A view alone: only its blocks.
    ABSL_ASSIGN_OR_RETURN(DeviceExl3Views views,
                          DeviceExl3Views::Upload(std::span(&w, 1), upload_threads_));
    const Exl3DeviceWeight view = views.view(0);
    return std::make_unique<CudaLinear>(std::make_shared<const DeviceExl3Views>(std::move(views)),
                                        view);
  }
  ABSL_ASSIGN_OR_RETURN(DeviceExl3Weight uploaded, DeviceExl3Weight::Upload(w, upload_threads_));
  auto stored = std::make_shared<const DeviceExl3Weight>(std::move(uploaded));
  std::vector<Stored>& same_key = stored_[Key(w)];
  std::erase_if(same_key, [](const Stored& s) { return s.device.expired(); });
  same_key.push_back({stored, w});
  ABSL_ASSIGN_OR_RETURN(Exl3DeviceWeight view, stored->View(w));
  return std::make_unique<CudaLinear>(std::move(stored), view);
}

absl::StatusOr<std::unique_ptr<backend::SpanHeadHandle>> CudaWeightStore::UploadSpanHead(
    std::span<const exl3::SpanView> views) {
  if (views.empty()) return absl::InvalidArgumentError("UploadSpanHead: no span views");
  std::vector<std::shared_ptr<const void>> owners;
  std::vector<Exl3DeviceSpan> spans;
  if (std::shared_ptr<const DeviceExl3Weight> stored = FindStored(views[0].weight)) {
    for (size_t i = 0; i < views.size(); ++i) {
      if (FindStored(views[i].weight) != stored) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "UploadSpanHead: view %d (\"%s\") is not of the matrix of view 0 (\"%s\")", i,
            views[i].weight.name(), views[0].weight.name()));
      }
      ABSL_ASSIGN_OR_RETURN(Exl3DeviceSpan span, stored->Span(views[i]));
      spans.push_back(span);
    }
    owners.push_back(std::move(stored));
  } else {
    std::vector<exl3::Weight> weights;
    for (const exl3::SpanView& v : views) weights.push_back(v.weight);
    ABSL_ASSIGN_OR_RETURN(DeviceExl3Views device,
                          DeviceExl3Views::Upload(weights, upload_threads_));
    for (size_t i = 0; i < views.size(); ++i) {
      spans.push_back({device.view(static_cast<int>(i)), views[i].drop_front(), views[i].size()});
    }
    owners.push_back(std::make_shared<const DeviceExl3Views>(std::move(device)));
  }
  return std::make_unique<CudaSpanHead>(std::move(owners), std::move(spans));
}

}  // namespace twinspan::cuda
