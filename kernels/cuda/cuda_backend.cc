#include "kernels/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cpu/tree_rows.h"
#include "kernels/cuda/add.cuh"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/candidate_selector.cuh"
#include "kernels/cuda/causal_conv1d.cuh"
#include "kernels/cuda/causal_conv1d_tree.cuh"
#include "kernels/cuda/cuda_backend_handles.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cuda_weight_store.h"
#include "kernels/cuda/device_count.h"
#include "kernels/cuda/dynamic_conv.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/exl3_linear.cuh"
#include "kernels/cuda/exl3_span_linear.cuh"
#include "kernels/cuda/gated_delta_net.cuh"
#include "kernels/cuda/gated_delta_net_gates.cuh"
#include "kernels/cuda/gated_delta_net_tree.cuh"
#include "kernels/cuda/gated_rms_norm.cuh"
#include "kernels/cuda/gather_rows.cuh"
#include "kernels/cuda/kv_cache.cuh"
#include "kernels/cuda/kv_copy.cuh"
#include "kernels/cuda/linear.cuh"
#include "kernels/cuda/mul_sigmoid.cuh"
#include "kernels/cuda/q4_linear.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/span_ids.cuh"
#include "kernels/cuda/swiglu.cuh"
#include "kernels/cuda/topk.cuh"

namespace twinspan::cuda {
namespace {

absl::Status CheckRange(const backend::Buffer& buffer, size_t offset, size_t bytes,
                        const char* what) {
  if (dynamic_cast<const PoolBuffer*>(&buffer) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: the buffer was not made by a CUDA backend", what));
  }
  if (offset > buffer.bytes() || bytes > buffer.bytes() - offset) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: bytes [%d, %d) leave the %d-byte buffer",
                                                      what, offset, offset + bytes,
                                                      buffer.bytes()));
  }
  return absl::OkStatus();
}

// Whether weight h can run in one launch with `first` (Backend::Linears): both EXL3 of one k, K and
// codebook, or both Q4 of one k.
bool SharesLaunch(const CudaLinear& first, const backend::LinearHandle* h) {
  const auto* l = dynamic_cast<const CudaLinear*>(h);
  if (l == nullptr || l->kind() != first.kind()) return false;
  if (first.kind() == CudaLinear::Kind::kQ4) return l->q4().view().k == first.q4().view().k;
  if (first.kind() != CudaLinear::Kind::kExl3) return false;
  const Exl3DeviceWeight &a = first.exl3(), &b = l->exl3();
  return a.k == b.k && a.bits == b.bits && a.codebook == b.codebook;
}

class CudaBackend final : public backend::Backend {
 public:
  CudaBackend(int device, cudaStream_t stream, cudaMemPool_t pool, int upload_threads)
      : device_(device), stream_(stream), pool_(pool), weights_(upload_threads) {}
  ~CudaBackend() override {
    DeviceGuard guard(device_);
    exl3_workspace_.reset();
    cudaStreamSynchronize(stream_);
    cudaMemPoolDestroy(pool_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return absl::StrFormat("cuda:%d", device_); }

  // ---- memory ----------------------------------------------------------------------------------
  absl::StatusOr<std::unique_ptr<backend::Buffer>> Allocate(size_t bytes) override {
    DeviceGuard guard(device_);
    return PoolBuffer::Allocate(bytes, device_, stream_, pool_);
  }

  absl::Status Upload(backend::Buffer& dst, size_t offset, const void* src, size_t bytes) override {
    ABSL_RETURN_IF_ERROR(CheckRange(dst, offset, bytes, "Upload"));
    if (bytes == 0) return absl::OkStatus();
    DeviceGuard guard(device_);
    // From pageable memory the driver stages src before it returns, so src may go right after.
    return CudaStatus(cudaMemcpyAsync(static_cast<char*>(dst.data()) + offset, src, bytes,
                                      cudaMemcpyHostToDevice, stream_),
                      "Upload cudaMemcpyAsync");
  }

  absl::Status Download(void* dst, const backend::Buffer& src, size_t offset,
                        size_t bytes) override {
    ABSL_RETURN_IF_ERROR(CheckRange(src, offset, bytes, "Download"));
    DeviceGuard guard(device_);
    if (bytes > 0) {
      ABSL_RETURN_IF_ERROR(
          CudaStatus(cudaMemcpyAsync(dst, static_cast<const char*>(src.data()) + offset, bytes,
                                     cudaMemcpyDeviceToHost, stream_),
                     "Download cudaMemcpyAsync"));
    }
    return CudaStatus(cudaStreamSynchronize(stream_), "Download (an earlier op failed)");
  }

  absl::Status Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                      size_t width_bytes, int64_t rows) override {
    if (dst_pitch < width_bytes || src_pitch < width_bytes || rows < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Copy2D: pitches %d / %d below width %d bytes, or rows %d < 0", dst_pitch,
                          src_pitch, width_bytes, rows));
    }
    if (rows == 0 || width_bytes == 0) return absl::OkStatus();
    DeviceGuard guard(device_);
    if (rows == 1 || (dst_pitch == width_bytes && src_pitch == width_bytes)) {  // Contiguous.
      return CudaStatus(cudaMemcpyAsync(dst, src, width_bytes * static_cast<size_t>(rows),
                                        cudaMemcpyDeviceToDevice, stream_),
                        "Copy2D cudaMemcpyAsync");
    }
    return CudaStatus(
        cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width_bytes, static_cast<size_t>(rows),
                          cudaMemcpyDeviceToDevice, stream_),
        "Copy2D cudaMemcpy2DAsync");
  }

  absl::Status Zero(void* dst, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    DeviceGuard guard(device_);
    return CudaStatus(cudaMemsetAsync(dst, 0, bytes, stream_), "Zero cudaMemsetAsync");
  }

  absl::Status Synchronize() override {
    DeviceGuard guard(device_);
    return CudaStatus(cudaStreamSynchronize(stream_), "Synchronize");
  }

  // ---- weights ---------------------------------------------------------------------------------
  absl::StatusOr<std::unique_ptr<backend::LinearHandle>> UploadLinear(
      const cpu::LinearWeight& weight) override {
    DeviceGuard guard(device_);
    return weights_.UploadLinear(weight);
  }

  absl::StatusOr<std::unique_ptr<backend::SpanHeadHandle>> UploadSpanHead(
      absl::Span<const exl3::SpanView> views) override {
    DeviceGuard guard(device_);
    return weights_.UploadSpanHead(std::span<const exl3::SpanView>(views.data(), views.size()));
  }

  absl::StatusOr<std::unique_ptr<backend::EmbeddingHandle>> UploadEmbedding(
      const cpu::EmbeddingTable& table) override {
    DeviceGuard guard(device_);
    ABSL_ASSIGN_OR_RETURN(DeviceEmbeddingTable device, DeviceEmbeddingTable::Upload(table));
    return std::make_unique<CudaEmbedding>(std::move(device));
  }

  absl::StatusOr<std::unique_ptr<backend::Buffer>> UploadFloats(
      absl::Span<const float> values) override {
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<backend::Buffer> buffer,
                          Allocate(values.size() * sizeof(float)));
    ABSL_RETURN_IF_ERROR(Upload(*buffer, 0, values.data(), values.size() * sizeof(float)));
    return buffer;
  }

  absl::StatusOr<std::unique_ptr<backend::KvCacheHandle>> NewKvCache(cpu::KvDtype dtype,
                                                                     int64_t capacity,
                                                                     int64_t kv_heads,
                                                                     int64_t head_dim) override {
    DeviceGuard guard(device_);
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache,
                          KvCache::Create(dtype, capacity, kv_heads, head_dim, stream_, pool_));
    return std::make_unique<CudaKvCache>(std::move(cache));
  }

  // ---- ops -------------------------------------------------------------------------------------
  absl::Status Embedding(const backend::EmbeddingHandle& table, absl::Span<const int32_t> ids,
                         float* out) override {
    ABSL_ASSIGN_OR_RETURN(const CudaEmbedding* t, Ours<CudaEmbedding>(table, "Embedding"));
    DeviceGuard guard(device_);
    return cuda::Embedding(Ctx(), t->table().view(), ids.data(), static_cast<int64_t>(ids.size()),
                           out);
  }

  absl::Status RmsNorm(const float* x, int64_t x_stride, int64_t rows, int64_t dim,
                       const float* weight, float eps, float* y, int64_t y_stride) override {
    DeviceGuard guard(device_);
    return cuda::RmsNorm(Ctx(), x, x_stride, rows, dim, weight, eps, y, y_stride);
  }
  absl::Status AddRmsNorm(float* h, const float* delta, int64_t rows, int64_t dim,
                          const float* weight, float eps, float* y, int64_t y_stride) override {
    DeviceGuard guard(device_);
    return cuda::AddRmsNorm(Ctx(), h, delta, rows, dim, weight, eps, y, y_stride);
  }

  absl::Status Linear(const float* x, int64_t x_stride, int64_t rows,
                      const backend::LinearHandle& w, float* y, int64_t y_stride) override {
    ABSL_ASSIGN_OR_RETURN(const CudaLinear* linear, Ours<CudaLinear>(w, "Linear"));
    DeviceGuard guard(device_);
    if (linear->kind() == CudaLinear::Kind::kDense) {
      return cuda::Linear(Ctx(), x, x_stride, rows, linear->dense().view(), y, y_stride);
    }
    if (linear->kind() == CudaLinear::Kind::kQ4) {
      return cuda::Q4Linear(Ctx(), x, x_stride, rows, linear->q4().view(), y, y_stride);
    }
    const Exl3LinearOutput out{&linear->exl3(), y, y_stride};
    return RunExl3(x, x_stride, rows, &out, 1);
  }

  // Consecutive EXL3 weights of one k, K and codebook share a launch (Exl3Linears), as do
  // consecutive Q4 weights of one k (Q4Linears); others run alone.
  absl::Status Linears(const float* x, int64_t x_stride, int64_t rows,
                       absl::Span<const backend::LinearOutput> outs) override {
    for (size_t i = 0; i < outs.size();) {
      if (outs[i].w == nullptr) return absl::InvalidArgumentError("Linears: a null weight");
      ABSL_ASSIGN_OR_RETURN(const CudaLinear* first, Ours<CudaLinear>(*outs[i].w, "Linears"));
      const size_t most = first->kind() == CudaLinear::Kind::kExl3 ? kMaxExl3Linears
                          : first->kind() == CudaLinear::Kind::kQ4 ? kMaxQ4Linears
                                                                   : 1;
      size_t end = i + 1;
      while (end < outs.size() && end - i < most && SharesLaunch(*first, outs[end].w)) ++end;
      const int n = static_cast<int>(end - i);
      if (n < 2) {
        ABSL_RETURN_IF_ERROR(Linear(x, x_stride, rows, *outs[i].w, outs[i].y, outs[i].y_stride));
        ++i;
        continue;
      }
      DeviceGuard guard(device_);
      if (first->kind() == CudaLinear::Kind::kExl3) {
        Exl3LinearOutput group[kMaxExl3Linears];
        for (int j = 0; j < n; ++j) {
          const auto& l = static_cast<const CudaLinear&>(*outs[i + j].w);
          group[j] = {&l.exl3(), outs[i + j].y, outs[i + j].y_stride};
        }
        ABSL_RETURN_IF_ERROR(RunExl3(x, x_stride, rows, group, n));
      } else {
        Q4LinearOutput group[kMaxQ4Linears];
        for (int j = 0; j < n; ++j) {
          const auto& l = static_cast<const CudaLinear&>(*outs[i + j].w);
          group[j] = {&l.q4().view(), outs[i + j].y, outs[i + j].y_stride};
        }
        ABSL_RETURN_IF_ERROR(cuda::Q4Linears(Ctx(), x, x_stride, rows, group, n));
      }
      i = end;
    }
    return absl::OkStatus();
  }

  absl::Status Rope(float* x, int64_t x_stride, int64_t rows, int64_t heads, int64_t head_dim,
                    int64_t rot_dim, const float* cos, const float* sin) override {
    DeviceGuard guard(device_);
    return cuda::Rope(Ctx(), x, x_stride, rows, heads, head_dim, rot_dim, cos, sin);
  }

  absl::Status SwiGlu(const float* gate, const float* up, int64_t in_stride, int64_t rows,
                      int64_t dim, float* out, int64_t out_stride) override {
    DeviceGuard guard(device_);
    return cuda::SwiGlu(Ctx(), gate, up, in_stride, rows, dim, out, out_stride);
  }

  absl::Status Add(const float* a, const float* b, int64_t n, float* out) override {
    DeviceGuard guard(device_);
    return cuda::Add(Ctx(), a, b, n, out);
  }

  absl::Status MulSigmoid(float* x, int64_t x_stride, const float* gate, int64_t gate_stride,
                          int64_t rows, int64_t dim) override {
    DeviceGuard guard(device_);
    return cuda::MulSigmoid(Ctx(), x, x_stride, gate, gate_stride, rows, dim);
  }

  absl::Status KvWrite(backend::KvCacheHandle& kv, absl::Span<const int64_t> positions,
                       const float* k, int64_t k_stride, const float* v,
                       int64_t v_stride) override {
    ABSL_ASSIGN_OR_RETURN(CudaKvCache * cache, Ours<CudaKvCache>(kv, "KvWrite"));
    DeviceGuard guard(device_);
    return cache->cache().Write(Ctx(), positions.data(), static_cast<int64_t>(positions.size()), k,
                                k_stride, v, v_stride);
  }

  absl::Status KvCopy(const backend::KvCacheHandle& src, int64_t src_first,
                      backend::KvCacheHandle& dst, int64_t dst_first, int64_t rows) override {
    ABSL_ASSIGN_OR_RETURN(const CudaKvCache* from, Ours<CudaKvCache>(src, "KvCopy"));
    ABSL_ASSIGN_OR_RETURN(CudaKvCache * to, Ours<CudaKvCache>(dst, "KvCopy"));
    DeviceGuard guard(device_);
    return cuda::KvCopy(Ctx(), from->cache(), src_first, to->cache(), dst_first, rows);
  }

  absl::Status Attention(const cpu::AttentionShape& shape, const float* q, int64_t q_stride,
                         absl::Span<const int64_t> positions, const backend::KvCacheHandle& kv,
                         int64_t num_keys, float* out, int64_t out_stride) override {
    ABSL_ASSIGN_OR_RETURN(const CudaKvCache* cache, Ours<CudaKvCache>(kv, "Attention"));
    DeviceGuard guard(device_);
    const int64_t rows = static_cast<int64_t>(positions.size());
    // Decode and short verify windows spread their key chunks over blocks through this scratch.
    const size_t bytes = AttentionWorkspaceBytes(shape, rows, num_keys);
    std::unique_ptr<backend::Buffer> scratch;
    if (bytes > 0) {
      ABSL_ASSIGN_OR_RETURN(scratch, PoolBuffer::Allocate(bytes, device_, stream_, pool_));
    }
    Context ctx = Ctx();
    ctx.workspace = scratch ? scratch->data() : nullptr;
    ctx.workspace_bytes = scratch ? scratch->bytes() : 0;
    return cuda::Attention(ctx, shape, q, q_stride, positions.data(), rows, cache->cache().view(),
                           num_keys, out, out_stride);
  }

  absl::Status CausalConv1d(const float* x, int64_t rows, int64_t channels, const float* weight,
                            int64_t kernel, const float* state_in, float* state_out,
                            float* y) override {
    DeviceGuard guard(device_);
    return cuda::CausalConv1d(Ctx(), x, rows, channels, weight, kernel, state_in, state_out, y);
  }

  absl::Status GatedDeltaNetGates(const float* a, const float* b, int64_t ab_stride, int64_t rows,
                                  int64_t v_heads, const float* a_log, const float* dt_bias,
                                  float* g, float* beta) override {
    DeviceGuard guard(device_);
    return cuda::GatedDeltaNetGates(Ctx(), a, b, ab_stride, rows, v_heads, a_log, dt_bias, g, beta);
  }

  // The recurrent form for every window, prompts included: the chunked form's bits depend on how a
  // prompt is cut, which the CPU twin's never do.
  absl::Status GatedDeltaNet(const float* qkv, const float* g, const float* beta, int64_t rows,
                             const cpu::GatedDeltaNetDims& dims, const float* state_in,
                             float* state_out, float* out) override {
    DeviceGuard guard(device_);
    return cuda::GatedDeltaNet(Ctx(), qkv, g, beta, rows, dims, state_in, state_out, out);
  }

  absl::Status GatherRows(const float* src, int64_t src_stride, absl::Span<const int64_t> rows,
                          int64_t width, float* dst, int64_t dst_stride) override {
    DeviceGuard guard(device_);
    return cuda::GatherRows(Ctx(), src, src_stride, rows.data(), static_cast<int64_t>(rows.size()),
                            width, dst, dst_stride);
  }

  absl::Status TreeAttention(const cpu::AttentionShape& shape, const float* q, int64_t q_stride,
                             absl::Span<const int32_t> parents, int64_t first_slot,
                             const backend::KvCacheHandle& kv, float* out,
                             int64_t out_stride) override {
    ABSL_ASSIGN_OR_RETURN(const CudaKvCache* cache, Ours<CudaKvCache>(kv, "TreeAttention"));
    DeviceGuard guard(device_);
    const size_t bytes = TreeAttentionWorkspaceBytes(shape, parents, first_slot);
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<backend::Buffer> scratch, Scratch(bytes));
    Context ctx = WithWorkspace(scratch.get());
    return cuda::TreeAttention(ctx, shape, q, q_stride, parents.data(),
                               static_cast<int64_t>(parents.size()), first_slot,
                               cache->cache().view(), out, out_stride);
  }

  absl::Status CausalConv1dTree(const float* x, absl::Span<const int32_t> parents, int64_t channels,
                                const float* weight, int64_t kernel, const float* state,
                                float* y) override {
    DeviceGuard guard(device_);
    return cuda::CausalConv1dTree(Ctx(), x, parents.data(), static_cast<int64_t>(parents.size()),
                                  channels, weight, kernel, state, y);
  }

  absl::Status GatedDeltaNetTree(const float* qkv, const float* g, const float* beta,
                                 absl::Span<const int32_t> parents,
                                 const cpu::GatedDeltaNetDims& dims, const float* state,
                                 float* out) override {
    const int64_t rows = static_cast<int64_t>(parents.size());
    ABSL_RETURN_IF_ERROR(cpu::CheckTreeParents("GatedDeltaNetTree", parents.data(), rows));
    DeviceGuard guard(device_);
    // The states of the tree's branching rows, saved while their first subtree runs.
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<backend::Buffer> scratch,
                          Scratch(GatedDeltaNetTreeWorkspaceBytes(parents.data(), rows, dims)));
    return cuda::GatedDeltaNetTree(WithWorkspace(scratch.get()), qkv, g, beta, parents.data(), rows,
                                   dims, state, out);
  }

  absl::Status GatedRmsNorm(const float* x, const float* gate, int64_t groups, int64_t dim,
                            const float* weight, float eps, float* y) override {
    DeviceGuard guard(device_);
    return cuda::GatedRmsNorm(Ctx(), x, gate, groups, dim, weight, eps, y);
  }

  absl::Status DynamicConv(float* out, const float* x, const float* base, const float* dynamic,
                           const cpu::DynamicConvParams& p) override {
    // The spans' sizes as the CPU backend derives them; the op checks them against p.
    const bool shaped = p.rows >= 0 && p.channels > 0 && p.taps > 0 && p.group_size > 0 &&
                        p.channels % p.group_size == 0;
    const int64_t n = shaped ? p.rows * p.channels : 0;
    const int64_t base_n = shaped ? p.taps * p.channels : 0;
    const int64_t dynamic_n = !shaped || p.rows == 0 ? 0
                                                     : (p.rows - 1) * p.dynamic_row_stride +
                                                           p.taps * (p.channels / p.group_size);
    DeviceGuard guard(device_);
    return cuda::DynamicConv(Ctx(), Span(out, n), Span(x, n), Span(base, base_n),
                             Span(dynamic, dynamic_n), p);
  }

  absl::Status TopK(const float* logits, float* values, int32_t* indices,
                    const cpu::TopKParams& params) override {
    DeviceGuard guard(device_);
    return cuda::TopK(Ctx(), logits, params.cols, params.rows, params.cols, params.k, values,
                      indices);
  }

  // Up to kMaxExl3Spans spans a launch; each launch writes its spans' packed columns.
  absl::Status SpanLinear(const float* x, int64_t x_stride, int64_t rows,
                          const backend::SpanHeadHandle& head, float* packed,
                          int64_t packed_stride) override {
    ABSL_ASSIGN_OR_RETURN(const CudaSpanHead* h, Ours<CudaSpanHead>(head, "SpanLinear"));
    if (rows < 0 || packed_stride < head.columns()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("SpanLinear: rows %d, packed_stride %d for %d packed logits", rows,
                          packed_stride, head.columns()));
    }
    if (rows == 0) return absl::OkStatus();
    DeviceGuard guard(device_);
    const std::vector<Exl3DeviceSpan>& spans = h->spans();
    int64_t column = 0;
    for (size_t first = 0; first < spans.size(); first += kMaxExl3Spans) {
      const int count = static_cast<int>(std::min<size_t>(kMaxExl3Spans, spans.size() - first));
      ABSL_RETURN_IF_ERROR(
          ReserveExl3Workspace(Exl3SpanLinearWorkspaceBytes(&spans[first], count, rows)));
      Context ctx = Ctx();
      ctx.workspace = exl3_workspace_->data();
      ctx.workspace_bytes = exl3_workspace_->bytes();
      ABSL_RETURN_IF_ERROR(Exl3SpanLinear(ctx, x, x_stride, rows, &spans[first], count,
                                          packed + column, packed_stride));
      for (int i = 0; i < count; ++i) column += spans[first + i].size;
    }
    return absl::OkStatus();
  }

  absl::Status SpanIds(absl::Span<const exl3::ColumnSpan> spans, const int32_t* columns,
                       int64_t count, int32_t* ids) override {
    if (count < 0) return absl::InvalidArgumentError(absl::StrFormat("SpanIds: count %d", count));
    DeviceGuard guard(device_);
    return cuda::SpanIds(Ctx(), std::span<const exl3::ColumnSpan>(spans.data(), spans.size()),
                         Span(columns, count), Span(ids, count));
  }

  absl::Status SelectorWalk(const cpu::SelectorWalkInputs& inputs,
                            const cpu::SelectorWalkOutputs& outputs,
                            const cpu::SelectorWalkParams& params) override {
    DeviceGuard guard(device_);
    return cuda::SelectorWalk(Ctx(), inputs, outputs, params);
  }

  absl::Status SelectorScoreTable(const cpu::SelectorWalkInputs& inputs, std::span<float> table,
                                  const cpu::SelectorWalkParams& params) override {
    DeviceGuard guard(device_);
    return cuda::SelectorScoreTable(Ctx(), inputs, table, params);
  }

  cudaStream_t stream() const { return stream_; }
  // Benchmarks only (SetCudaBackendExl3Prompt); the backend is single-threaded by contract.
  void set_exl3_prompt(int rows, int tile) {
    exl3_prompt_rows_ = rows;
    exl3_prompt_tile_ = tile;
  }

 private:
  Context Ctx() const {
    Context ctx;
    ctx.stream = stream_;
    ctx.exl3_prompt_rows = exl3_prompt_rows_;
    ctx.exl3_prompt_tile = exl3_prompt_tile_;
    return ctx;
  }

  // A stream-ordered scratch buffer of `bytes` (null for 0), freed after the ops that use it.
  absl::StatusOr<std::unique_ptr<backend::Buffer>> Scratch(size_t bytes) const {
    if (bytes == 0) return std::unique_ptr<backend::Buffer>();
    return PoolBuffer::Allocate(bytes, device_, stream_, pool_);
  }
  Context WithWorkspace(backend::Buffer* scratch) const {
    Context ctx = Ctx();
    ctx.workspace = scratch != nullptr ? scratch->data() : nullptr;
    ctx.workspace_bytes = scratch != nullptr ? scratch->bytes() : 0;
    return ctx;
  }

  template <typename T>
  static std::span<T> Span(T* p, int64_t n) {
    return n > 0 ? std::span<T>(p, static_cast<size_t>(n)) : std::span<T>();
  }

  template <typename T, typename Handle>
  static absl::StatusOr<T*> Ours(Handle& handle, const char* op) {
    using Target = std::conditional_t<std::is_const_v<Handle>, const T, T>;
    Target* ours = dynamic_cast<Target*>(&handle);
    if (ours == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: the handle was not made by a CUDA backend", op));
    }
    return const_cast<T*>(ours);
  }

  // Exl3Linears on the backend's workspace, grown to what these weights need at `rows` rows.
  absl::Status RunExl3(const float* x, int64_t x_stride, int64_t rows, const Exl3LinearOutput* outs,
                       int count) {
    if (rows < 0) return absl::InvalidArgumentError(absl::StrFormat("Linear: rows %d", rows));
    if (rows == 0) return absl::OkStatus();
    ABSL_RETURN_IF_ERROR(ReserveExl3Workspace(Exl3LinearsWorkspaceBytes(outs, count, rows)));
    Context ctx = Ctx();
    ctx.workspace = exl3_workspace_->data();
    ctx.workspace_bytes = exl3_workspace_->bytes();
    return Exl3Linears(ctx, x, x_stride, rows, outs, count);
  }

  // The EXL3 linear's counters must start at zero: a larger workspace is zeroed once, in order.
  absl::Status ReserveExl3Workspace(size_t bytes) {
    if (exl3_workspace_ != nullptr && exl3_workspace_->bytes() >= bytes) return absl::OkStatus();
    exl3_workspace_.reset();
    ABSL_ASSIGN_OR_RETURN(exl3_workspace_, PoolBuffer::Allocate(bytes, device_, stream_, pool_));
    return CudaStatus(cudaMemsetAsync(exl3_workspace_->data(), 0, bytes, stream_),
                      "EXL3 workspace cudaMemsetAsync");
  }

  // Constant after construction.
  const int device_;
  const cudaStream_t stream_;
  const cudaMemPool_t pool_;
  // Used by the issuing thread only (the backend is single-threaded by contract).
  std::unique_ptr<backend::Buffer> exl3_workspace_;
  int exl3_prompt_rows_ = 0;  // Context::exl3_prompt_rows of every EXL3 call.
  int exl3_prompt_tile_ = 0;  // Context::exl3_prompt_tile of every EXL3 call.
  CudaWeightStore weights_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<backend::Backend>> NewCudaBackend(
    const CudaBackendOptions& options) {
  ABSL_ASSIGN_OR_RETURN(const int count, VisibleDeviceCount());
  if (options.device < 0 || options.device >= count) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "NewCudaBackend: device %d, the machine has %d CUDA devices", options.device, count));
  }
  DeviceGuard guard(options.device);
  cudaStream_t stream = nullptr;
  ABSL_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                                  "cudaStreamCreateWithFlags"));
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = options.device;
  cudaMemPool_t pool = nullptr;
  if (absl::Status s = CudaStatus(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate"); !s.ok()) {
    cudaStreamDestroy(stream);
    return s;
  }
  uint64_t threshold = options.pool_release_threshold;
  if (absl::Status s =
          CudaStatus(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
                     "cudaMemPoolSetAttribute");
      !s.ok()) {
    cudaMemPoolDestroy(pool);
    cudaStreamDestroy(stream);
    return s;
  }
  const int threads = options.upload_threads > 0
                          ? options.upload_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::make_unique<CudaBackend>(options.device, stream, pool, threads);
}

absl::Status SetCudaBackendExl3Prompt(backend::Backend& backend, int rows, int tile) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (cuda == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SetCudaBackendExl3Prompt: the %s backend is not a CUDA backend", backend.name()));
  }
  if (rows < -1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SetCudaBackendExl3Prompt: rows %d, need -1, 0 or a count", rows));
  }
  if (tile != 0 && tile != 64 && tile != 256) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SetCudaBackendExl3Prompt: tile %d, need 0, 64 or 256", tile));
  }
  cuda->set_exl3_prompt(rows, tile);
  return absl::OkStatus();
}

absl::StatusOr<cudaStream_t> CudaBackendStream(const backend::Backend& backend) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  if (cuda == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("CudaBackendStream: the %s backend is not a CUDA backend", backend.name()));
  }
  return cuda->stream();
}

}  // namespace twinspan::cuda
