#include "services/device/cuda_logits_sampler.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/device_count.h"
#include "kernels/cuda/mask_logits.cuh"
#include "kernels/cuda/sample.cuh"

namespace twinspan::device {
namespace {

// Makes `ordinal` current for one call and restores the caller's device, as the backend does.
class CurrentDevice {
 public:
  explicit CurrentDevice(int ordinal) {
    cudaGetDevice(&previous_);
    if (previous_ != ordinal) cudaSetDevice(ordinal);
  }
  ~CurrentDevice() { cudaSetDevice(previous_); }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = 0;
};

// Grows a scratch buffer of the device to at least `bytes`; its contents are not kept.
absl::Status Grow(void** buffer, size_t* have, size_t bytes, const char* what) {
  if (bytes <= *have) return absl::OkStatus();
  cudaFree(*buffer);
  *buffer = nullptr;
  *have = 0;
  ABSL_RETURN_IF_ERROR(cuda::AllocStatus(cudaMalloc(buffer, bytes), bytes, what));
  *have = bytes;
  return absl::OkStatus();
}

cudaStream_t Stream(void* stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace

absl::StatusOr<std::unique_ptr<CudaLogitsSampler>> CudaLogitsSampler::Create(int ordinal) {
  ABSL_ASSIGN_OR_RETURN(const int count, cuda::VisibleDeviceCount());
  if (ordinal < 0 || ordinal >= count) {
    return absl::InvalidArgumentError(absl::StrCat("CudaLogitsSampler: device cuda:", ordinal,
                                                   ", the process sees ", count, " CUDA devices"));
  }
  CurrentDevice current(ordinal);
  cudaStream_t stream = nullptr;
  ABSL_RETURN_IF_ERROR(cuda::CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                                        "CudaLogitsSampler cudaStreamCreateWithFlags"));
  return std::unique_ptr<CudaLogitsSampler>(new CudaLogitsSampler(ordinal, stream));
}

CudaLogitsSampler::~CudaLogitsSampler() {
  CurrentDevice current(ordinal_);
  cudaStreamSynchronize(Stream(stream_));
  cudaFree(tokens_);
  cudaFree(workspace_);
  cudaFree(masks_);
  cudaStreamDestroy(Stream(stream_));
}

absl::Status CudaLogitsSampler::Reserve(int64_t rows, int64_t vocab) {
  ABSL_RETURN_IF_ERROR(Grow(&tokens_, &tokens_bytes_, static_cast<size_t>(rows) * sizeof(int32_t),
                            "CudaLogitsSampler tokens"));
  return Grow(&workspace_, &workspace_bytes_, cuda::SampleWorkspaceBytes(rows, vocab),
              "CudaLogitsSampler workspace");
}

absl::Status CudaLogitsSampler::MaskRows(backend::Buffer& logits, int64_t vocab,
                                         absl::Span<const RowDraw> rows) {
  bool any = false;
  for (const RowDraw& row : rows) any = any || !row.allowed.empty();
  if (!any) return absl::OkStatus();
  // Every row gets a mask (all ids for the unconstrained ones) so one launch covers the batch.
  const size_t words = static_cast<size_t>((vocab + 31) / 32);
  host_masks_.assign(rows.size() * words, ~0u);
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].allowed.empty()) continue;
    std::copy(rows[r].allowed.begin(), rows[r].allowed.end(), host_masks_.begin() + r * words);
  }
  const size_t bytes = host_masks_.size() * sizeof(uint32_t);
  ABSL_RETURN_IF_ERROR(Grow(&masks_, &masks_bytes_, bytes, "CudaLogitsSampler masks"));
  ABSL_RETURN_IF_ERROR(cuda::CudaStatus(
      cudaMemcpyAsync(masks_, host_masks_.data(), bytes, cudaMemcpyHostToDevice, Stream(stream_)),
      "CudaLogitsSampler mask upload"));
  cuda::Context ctx;
  ctx.stream = Stream(stream_);
  return cuda::MaskLogits(ctx, logits.floats(), vocab, vocab, static_cast<const uint32_t*>(masks_),
                          static_cast<int64_t>(rows.size()));
}

absl::Status CudaLogitsSampler::Sample(backend::Backend& backend, backend::Buffer& logits,
                                       int64_t vocab, absl::Span<const RowDraw> rows,
                                       std::vector<int32_t>* tokens) {
  tokens->clear();
  const int64_t n = static_cast<int64_t>(rows.size());
  if (backend.name() != absl::StrCat("cuda:", ordinal_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CudaLogitsSampler on cuda:", ordinal_, " cannot read logits of backend ", backend.name()));
  }
  if (vocab < 1 || logits.bytes() < static_cast<size_t>(n * vocab) * sizeof(float)) {
    return absl::InvalidArgumentError(absl::StrCat("CudaLogitsSampler: ", logits.bytes(),
                                                   " bytes of logits for ", n,
                                                   " rows of vocabulary ", vocab));
  }
  ABSL_RETURN_IF_ERROR(CheckMasks(rows, vocab));
  if (n == 0) return absl::OkStatus();
  // The forward that wrote the logits ran on the backend's stream.
  ABSL_RETURN_IF_ERROR(backend.Synchronize());
  CurrentDevice current(ordinal_);
  ABSL_RETURN_IF_ERROR(Reserve(n, vocab));
  ABSL_RETURN_IF_ERROR(MaskRows(logits, vocab, rows));
  std::vector<cuda::SampleRow> draws(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    draws[r] = cuda::SampleRow{rows[r].params, rows[r].seed, rows[r].position};
  }
  cuda::Context ctx;
  ctx.stream = Stream(stream_);
  ctx.workspace = workspace_;
  ctx.workspace_bytes = workspace_bytes_;
  ABSL_RETURN_IF_ERROR(cuda::Sample(ctx, logits.floats(), vocab, vocab, draws.data(), n,
                                    static_cast<int32_t*>(tokens_)));
  // Only the ids leave the device; -1 is the kernel's mark for a row holding a NaN.
  tokens->resize(rows.size());
  ABSL_RETURN_IF_ERROR(
      cuda::CudaStatus(cudaMemcpyAsync(tokens->data(), tokens_, n * sizeof(int32_t),
                                       cudaMemcpyDeviceToHost, Stream(stream_)),
                       "CudaLogitsSampler cudaMemcpyAsync"));
  return cuda::CudaStatus(cudaStreamSynchronize(Stream(stream_)),
                          "CudaLogitsSampler (the sample kernel failed)");
}

}  // namespace twinspan::device
