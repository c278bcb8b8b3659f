// A backend::Backend that forwards every call to a CUDA backend and, while enabled, times each
// call on that backend's stream: the per-op breakdown of twinspan_round_bench --profile.
//
// Each timed call is queued behind a spin kernel (spin_us) and bracketed by two CUDA events, so
// its GPU time is its own kernels' alone, without the launch gap before it (a call whose host side
// outlasts the spin leaks the excess: the table's host column shows it). Host time is the host
// clock around the forwarded call. Linear is keyed by its weight's kind and shape, as uploaded
// through this backend ("Linear exl3 17408x5120"). Download and Synchronize wait on the host:
// Download's GPU time includes the host's reaction to the copy's end.
//
// Buffers and handles are the CUDA backend's own, so the models, the CUDA backend's stream
// (cuda::CudaBackendStream(inner)) and the inner backend's checks work as without it.
#ifndef TWINSPAN_TOOLS_GPU_PROFILING_BACKEND_H_
#define TWINSPAN_TOOLS_GPU_PROFILING_BACKEND_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend/backend.h"

namespace twinspan::gpu {

// One op's figures per run of a step: medians over the recorded runs of each run's totals.
struct OpProfile {
  std::string op;
  double calls = 0;
  double gpu_us = 0;   // kernels' time, behind the spin
  double host_us = 0;  // host clock around the forwarded call
};

struct StepProfile {
  std::vector<OpProfile> ops;  // by GPU time, largest first
  double gpu_us = 0;           // median of the runs' sums over ops
  double host_us = 0;
  int runs = 0;
};

class ProfilingBackend final : public backend::Backend {
 public:
  // Wraps `inner` (a CUDA backend, which must outlive this). InvalidArgument for another backend.
  static absl::StatusOr<std::unique_ptr<ProfilingBackend>> Create(backend::Backend& inner);
  ~ProfilingBackend() override;

  // Starts recording one run of a step, each call queued behind a spin of `spin_us`.
  void Begin(double spin_us);
  // Stops recording, waits for the stream and adds the run's per-op totals. CUDA errors.
  absl::Status End();
  // The runs added since the last Take, summarized; clears them.
  StepProfile Take();

  std::string name() const override { return inner_.name(); }
  absl::StatusOr<std::unique_ptr<backend::Buffer>> Allocate(size_t bytes) override;
  absl::Status Upload(backend::Buffer& dst, size_t offset, const void* src, size_t bytes) override;
  absl::Status Download(void* dst, const backend::Buffer& src, size_t offset,
                        size_t bytes) override;
  absl::Status Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                      size_t width_bytes, int64_t rows) override;
  absl::Status Zero(void* dst, size_t bytes) override;
  absl::Status Synchronize() override;
  absl::StatusOr<std::unique_ptr<backend::LinearHandle>> UploadLinear(
      const cpu::LinearWeight& weight) override;
  absl::StatusOr<std::unique_ptr<backend::EmbeddingHandle>> UploadEmbedding(
      const cpu::EmbeddingTable& table) override;
  absl::StatusOr<std::unique_ptr<backend::Buffer>> UploadFloats(
      absl::Span<const float> values) override;
  absl::StatusOr<std::unique_ptr<backend::SpanHeadHandle>> UploadSpanHead(
      absl::Span<const exl3::SpanView> views) override;
  absl::StatusOr<std::unique_ptr<backend::KvCacheHandle>> NewKvCache(cpu::KvDtype dtype,
                                                                     int64_t capacity,
                                                                     int64_t kv_heads,
                                                                     int64_t head_dim) override;
  absl::Status Embedding(const backend::EmbeddingHandle& table, absl::Span<const int32_t> ids,
                         float* out) override;
  absl::Status RmsNorm(const float* x, int64_t x_stride, int64_t rows, int64_t dim,
                       const float* weight, float eps, float* y, int64_t y_stride) override;
  absl::Status AddRmsNorm(float* h, const float* delta, int64_t rows, int64_t dim,
                          const float* weight, float eps, float* y, int64_t y_stride) override;
  absl::Status Linear(const float* x, int64_t x_stride, int64_t rows,
                      const backend::LinearHandle& w, float* y, int64_t y_stride) override;
  absl::Status Linears(const float* x, int64_t x_stride, int64_t rows,
                       absl::Span<const backend::LinearOutput> outs) override;
  absl::Status Rope(float* x, int64_t x_stride, int64_t rows, int64_t heads, int64_t head_dim,
                    int64_t rot_dim, const float* cos, const float* sin) override;
  absl::Status SwiGlu(const float* gate, const float* up, int64_t in_stride, int64_t rows,
                      int64_t dim, float* out, int64_t out_stride) override;
  absl::Status Add(const float* a, const float* b, int64_t n, float* out) override;
  absl::Status MulSigmoid(float* x, int64_t x_stride, const float* gate, int64_t gate_stride,
                          int64_t rows, int64_t dim) override;
  absl::Status KvWrite(backend::KvCacheHandle& kv, absl::Span<const int64_t> positions,
                       const float* k, int64_t k_stride, const float* v, int64_t v_stride) override;
  absl::Status Attention(const cpu::AttentionShape& shape, const float* q, int64_t q_stride,
                         absl::Span<const int64_t> positions, const backend::KvCacheHandle& kv,
                         int64_t num_keys, float* out, int64_t out_stride) override;
  absl::Status KvCopy(const backend::KvCacheHandle& src, int64_t src_first,
                      backend::KvCacheHandle& dst, int64_t dst_first, int64_t rows) override;
  absl::Status CausalConv1d(const float* x, int64_t rows, int64_t channels, const float* weight,
                            int64_t kernel, const float* state_in, float* state_out,
                            float* y) override;
  absl::Status GatedDeltaNetGates(const float* a, const float* b, int64_t ab_stride, int64_t rows,
                                  int64_t v_heads, const float* a_log, const float* dt_bias,
                                  float* g, float* beta) override;
  absl::Status GatedDeltaNet(const float* qkv, const float* g, const float* beta, int64_t rows,
                             const cpu::GatedDeltaNetDims& dims, const float* state_in,
                             float* state_out, float* out) override;
  absl::Status GatherRows(const float* src, int64_t src_stride, absl::Span<const int64_t> rows,
                          int64_t width, float* dst, int64_t dst_stride) override;
  absl::Status TreeAttention(const cpu::AttentionShape& shape, const float* q, int64_t q_stride,
                             absl::Span<const int32_t> parents, int64_t first_slot,
                             const backend::KvCacheHandle& kv, float* out,
                             int64_t out_stride) override;
  absl::Status CausalConv1dTree(const float* x, absl::Span<const int32_t> parents, int64_t channels,
                                const float* weight, int64_t kernel, const float* state,
                                float* y) override;
  absl::Status GatedDeltaNetTree(const float* qkv, const float* g, const float* beta,
                                 absl::Span<const int32_t> parents,
                                 const cpu::GatedDeltaNetDims& dims, const float* state,
                                 float* out) override;
  absl::Status SelectorScoreTable(const cpu::SelectorWalkInputs& inputs, std::span<float> table,
                                  const cpu::SelectorWalkParams& params) override;
  absl::Status GatedRmsNorm(const float* x, const float* gate, int64_t groups, int64_t dim,
                            const float* weight, float eps, float* y) override;
  absl::Status DynamicConv(float* out, const float* x, const float* base, const float* dynamic,
                           const cpu::DynamicConvParams& params) override;
  absl::Status TopK(const float* logits, float* values, int32_t* indices,
                    const cpu::TopKParams& params) override;
  absl::Status SpanLinear(const float* x, int64_t x_stride, int64_t rows,
                          const backend::SpanHeadHandle& head, float* packed,
                          int64_t packed_stride) override;
  absl::Status SpanIds(absl::Span<const exl3::ColumnSpan> spans, const int32_t* columns,
                       int64_t count, int32_t* ids) override;
  absl::Status SelectorWalk(const cpu::SelectorWalkInputs& inputs,
                            const cpu::SelectorWalkOutputs& outputs,
                            const cpu::SelectorWalkParams& params) override;

 private:
  struct Record {
    std::string op;
    int event = -1;  // index of the event pair; -1: host only
    double host_us = 0;
  };
  struct Totals {
    double calls = 0, gpu_us = 0, host_us = 0;
  };

  ProfilingBackend(backend::Backend& inner, cudaStream_t stream, double cycles_per_us)
      : inner_(inner), stream_(stream), cycles_per_us_(cycles_per_us) {}
  template <typename Call>
  absl::Status Timed(const std::string& op, bool on_gpu, Call&& call);

  backend::Backend& inner_;
  const cudaStream_t stream_;
  const double cycles_per_us_;
  bool recording_ = false;
  double spin_us_ = 0;
  std::vector<cudaEvent_t> events_;  // pairs: 2i before, 2i + 1 after
  int used_pairs_ = 0;
  std::vector<Record> records_;
  std::vector<std::map<std::string, Totals>> runs_;
  std::map<const backend::LinearHandle*, std::string> linear_names_;
};

}  // namespace twinspan::gpu

#endif  // TWINSPAN_TOOLS_GPU_PROFILING_BACKEND_H_
