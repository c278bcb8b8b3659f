// Column views of one EXL3 matrix on the device without the rest of it (host code): each view's
// 128-column blocks, svh and bias, one shared suh, and the stored matrix's plan. A drafter holding
// only the two-span head of the 27B uploads 409 of its 954 MB (K = 6); the logits equal the full
// head's at the same columns, since each view launches with the head's plan.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_VIEWS_WEIGHT_H_
#define TWINSPAN_KERNELS_CUDA_EXL3_VIEWS_WEIGHT_H_

#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exl3/weight.h"
#include "kernels/cuda/exl3_linear.cuh"

namespace twinspan::cuda {

// Owns the device copies; cheap to copy (shared). Not thread-safe to upload, safe to share after.
class DeviceExl3Views {
 public:
  // Copies `views` (column views, or whole matrices, all of one stored matrix: same name, k,
  // stored n, K, codebook, plan and suh) synchronously, relaid out on `threads` host threads.
  // Each view gets its own copy, overlaps included. InvalidArgument for no views or views of
  // different matrices; Internal when an allocation or copy fails.
  static absl::StatusOr<DeviceExl3Views> Upload(std::span<const exl3::Weight> views, int threads);

  int count() const { return static_cast<int>(views_.size()); }
  // View i with its stored matrix's plan; all views share one suh pointer, so they may run in one
  // Exl3SpanLinear launch. REQUIRES: 0 <= i < count().
  const Exl3DeviceWeight& view(int i) const { return views_[i]; }
  // Device bytes of trellis held.
  int64_t trellis_bytes() const { return trellis_bytes_; }

 private:
  struct Buffers;
  std::shared_ptr<Buffers> buffers_;
  std::vector<Exl3DeviceWeight> views_;
  int64_t trellis_bytes_ = 0;
};

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_VIEWS_WEIGHT_H_
