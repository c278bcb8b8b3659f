// LogitsSampler on a CUDA device: cuda::Sample (kernels/cuda/sample.cuh, the twin of
// sampler::KeyedSampler) over the logits in the CUDA backend's memory, downloading only the ids.
// It runs on a stream of its own after waiting for the backend's (the backend does not lend its
// stream), so one Sample costs a host wait for the forward that wrote the logits.
#ifndef TWINSPAN_SERVICES_DEVICE_CUDA_LOGITS_SAMPLER_H_
#define TWINSPAN_SERVICES_DEVICE_CUDA_LOGITS_SAMPLER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "services/device/logits_sampler.h"

namespace twinspan::device {

class CudaLogitsSampler : public LogitsSampler {
 public:
  // A sampler on CUDA device `ordinal`. InvalidArgument when the process has no such device;
  // Internal when the stream cannot be made.
  static absl::StatusOr<std::unique_ptr<CudaLogitsSampler>> Create(int ordinal);
  ~CudaLogitsSampler() override;
  CudaLogitsSampler(const CudaLogitsSampler&) = delete;
  CudaLogitsSampler& operator=(const CudaLogitsSampler&) = delete;

  // As LogitsSampler::Sample; `backend` must be the CUDA backend on this sampler's device.
  absl::Status Sample(backend::Backend& backend, backend::Buffer& logits, int64_t vocab,
                      absl::Span<const RowDraw> rows, std::vector<int32_t>* tokens) override;

 private:
  CudaLogitsSampler(int ordinal, void* stream) : ordinal_(ordinal), stream_(stream) {}
  // Masks the rows that carry one in place (cuda::MaskLogits) on this sampler's stream.
  absl::Status MaskRows(backend::Buffer& logits, int64_t vocab, absl::Span<const RowDraw> rows);
  // Grows the device scratch to hold `rows` ids and the sort order of `rows` x `vocab` logits.
  absl::Status Reserve(int64_t rows, int64_t vocab);

  const int ordinal_;
  void* const stream_;  // cudaStream_t, kept out of this header
  void* tokens_ = nullptr;
  size_t tokens_bytes_ = 0;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  void* masks_ = nullptr;  // rows x mask words of structured output, uploaded per Sample
  size_t masks_bytes_ = 0;
  std::vector<uint32_t> host_masks_;
};

}  // namespace twinspan::device

#endif  // TWINSPAN_SERVICES_DEVICE_CUDA_LOGITS_SAMPLER_H_
