// The CUDA backend's weight uploads (internal to cuda_backend.cc): dense, Q4 and EXL3 linears, and
// span heads. One device copy per stored EXL3 matrix, shared with its column views and span heads;
// a view whose matrix this store never uploaded gets only its own blocks (DeviceExl3Views).
#ifndef TWINSPAN_KERNELS_CUDA_CUDA_WEIGHT_STORE_H_
#define TWINSPAN_KERNELS_CUDA_CUDA_WEIGHT_STORE_H_

#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exl3/span_view.h"
#include "kernels/backend/backend.h"
#include "kernels/cuda/exl3_weight.h"

namespace twinspan::cuda {

// Used by the backend's issuing thread only. REQUIRES: the backend's device is current.
class CudaWeightStore {
 public:
  // EXL3 relayouts run on `upload_threads` host threads.
  explicit CudaWeightStore(int upload_threads) : upload_threads_(upload_threads) {}

  // A CudaLinear for `weight`. InvalidArgument for an empty weight; the uploads' errors.
  absl::StatusOr<std::unique_ptr<backend::LinearHandle>> UploadLinear(
      const cpu::LinearWeight& weight);
  // A CudaSpanHead for views of one matrix. InvalidArgument for no views or views of different
  // matrices; the uploads' errors.
  absl::StatusOr<std::unique_ptr<backend::SpanHeadHandle>> UploadSpanHead(
      std::span<const exl3::SpanView> views);

 private:
  struct Stored {
    std::weak_ptr<const DeviceExl3Weight> device;
    exl3::Weight host;  // Its scales, to tell apart two matrices of one name (two checkpoints).
  };

  // The live device copy of the stored matrix `view` is of, or null when none was uploaded.
  std::shared_ptr<const DeviceExl3Weight> FindStored(const exl3::Weight& view) const;

  const int upload_threads_;
  std::map<std::tuple<std::string, int64_t, int64_t, int>, std::vector<Stored>> stored_;
};

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_CUDA_WEIGHT_STORE_H_
