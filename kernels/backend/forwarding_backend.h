// A Backend that forwards every call to another one: the base of wrappers that watch or change a
// few ops (the quantizer's calibration capture) and leave the rest alone. Buffers and handles are
// the inner backend's own.
#ifndef TWINSPAN_KERNELS_BACKEND_FORWARDING_BACKEND_H_
#define TWINSPAN_KERNELS_BACKEND_FORWARDING_BACKEND_H_

#include <memory>
#include <string>

#include "kernels/backend/backend.h"

namespace twinspan::backend {

// Not thread-safe, like any Backend. REQUIRES: `inner` outlives this.
class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& inner) : inner_(inner) {}

  std::string name() const override { return inner_.name(); }
  absl::StatusOr<std::unique_ptr<Buffer>> Allocate(size_t bytes) override {
    return inner_.Allocate(bytes);
  }
  absl::Status Upload(Buffer& dst, size_t offset, const void* src, size_t bytes) override {
    return inner_.Upload(dst, offset, src, bytes);
  }
  absl::Status Download(void* dst, const Buffer& src, size_t offset, size_t bytes) override {
    return inner_.Download(dst, src, offset, bytes);
  }
  absl::Status Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                      size_t width_bytes, int64_t rows) override {
    return inner_.Copy2D(dst, dst_pitch, src, src_pitch, width_bytes, rows);
  }
  absl::Status Zero(void* dst, size_t bytes) override { return inner_.Zero(dst, bytes); }
  absl::Status Synchronize() override { return inner_.Synchronize(); }
  absl::StatusOr<std::unique_ptr<LinearHandle>> UploadLinear(
      const cpu::LinearWeight& weight) override {
    return inner_.UploadLinear(weight);
  }
  absl::StatusOr<std::unique_ptr<EmbeddingHandle>> UploadEmbedding(
      const cpu::EmbeddingTable& table) override {
    return inner_.UploadEmbedding(table);
  }
  absl::StatusOr<std::unique_ptr<Buffer>> UploadFloats(absl::Span<const float> values) override {
    return inner_.UploadFloats(values);
  }
  absl::StatusOr<std::unique_ptr<SpanHeadHandle>> UploadSpanHead(
      absl::Span<const exl3::SpanView> views) override {
    return inner_.UploadSpanHead(views);
  }
  absl::StatusOr<std::unique_ptr<KvCacheHandle>> NewKvCache(cpu::KvDtype dtype, int64_t capacity,
                                                            int64_t kv_heads,
                                                            int64_t head_dim) override {
    return inner_.NewKvCache(dtype, capacity, kv_heads, head_dim);
  }
  absl::Status Embedding(const EmbeddingHandle& table, absl::Span<const int32_t> ids,
                         float* out) override {
    return inner_.Embedding(table, ids, out);
  }
  absl::Status RmsNorm(const float* x, int64_t x_stride, int64_t rows, int64_t dim,
                       const float* weight, float eps, float* y, int64_t y_stride) override {
    return inner_.RmsNorm(x, x_stride, rows, dim, weight, eps, y, y_stride);
  }
  absl::Status AddRmsNorm(float* h, const float* delta, int64_t rows, int64_t dim,
                          const float* weight, float eps, float* y, int64_t y_stride) override {
    return inner_.AddRmsNorm(h, delta, rows, dim, weight, eps, y, y_stride);
  }
  absl::Status Linear(const float* x, int64_t x_stride, int64_t rows, const LinearHandle& w,
                      float* y, int64_t y_stride) override {
    return inner_.Linear(x, x_stride, rows, w, y, y_stride);
  }
  absl::Status Linears(const float* x, int64_t x_stride, int64_t rows,
                       absl::Span<const LinearOutput> outs) override {
    return inner_.Linears(x, x_stride, rows, outs);
  }
  absl::Status Rope(float* x, int64_t x_stride, int64_t rows, int64_t heads, int64_t head_dim,
                    int64_t rot_dim, const float* cos, const float* sin) override {
    return inner_.Rope(x, x_stride, rows, heads, head_dim, rot_dim, cos, sin);
  }
  absl::Status SwiGlu(const float* gate, const float* up, int64_t in_stride, int64_t rows,
                      int64_t dim, float* out, int64_t out_stride) override {
    return inner_.SwiGlu(gate, up, in_stride, rows, dim, out, out_stride);
  }
  absl::Status Add(const float* a, const float* b, int64_t n, float* out) override {
    return inner_.Add(a, b, n, out);
  }
  absl::Status MulSigmoid(float* x, int64_t x_stride, const float* gate, int64_t gate_stride,
                          int64_t rows, int64_t dim) override {
    return inner_.MulSigmoid(x, x_stride, gate, gate_stride, rows, dim);
  }
  absl::Status KvWrite(KvCacheHandle& kv, absl::Span<const int64_t> positions, const float* k,
                       int64_t k_stride, const float* v, int64_t v_stride) override {
    return inner_.KvWrite(kv, positions, k, k_stride, v, v_stride);
  }
  absl::Status Attention(const cpu::AttentionShape& shape, const float* q, int64_t q_stride,
                         absl::Span<const int64_t> positions, const KvCacheHandle& kv,
                         int64_t num_keys, float* out, int64_t out_stride) override {
    return inner_.Attention(shape, q, q_stride, positions, kv, num_keys, out, out_stride);
  }
  absl::Status KvCopy(const KvCacheHandle& src, int64_t src_first, KvCacheHandle& dst,
                      int64_t dst_first, int64_t rows) override {
    return inner_.KvCopy(src, src_first, dst, dst_first, rows);
  }
  absl::Status CausalConv1d(const float* x, int64_t rows, int64_t channels, const float* weight,
                            int64_t kernel, const float* state_in, float* state_out,
                            float* y) override {
    return inner_.CausalConv1d(x, rows, channels, weight, kernel, state_in, state_out, y);
  }
  absl::Status GatedDeltaNetGates(const float* a, const float* b, int64_t ab_stride, int64_t rows,
                                  int64_t v_heads, const float* a_log, const float* dt_bias,
                                  float* g, float* beta) override {
    return inner_.GatedDeltaNetGates(a, b, ab_stride, rows, v_heads, a_log, dt_bias, g, beta);
  }
  absl::Status GatedDeltaNet(const float* qkv, const float* g, const float* beta, int64_t rows,
                             const cpu::GatedDeltaNetDims& dims, const float* state_in,
                             float* state_out, float* out) override {
    return inner_.GatedDeltaNet(qkv, g, beta, rows, dims, state_in, state_out, out);
  }
  absl::Status GatherRows(const float* src, int64_t src_stride, absl::Span<const int64_t> rows,
                          int64_t width, float* dst, int64_t dst_stride) override {
    return inner_.GatherRows(src, src_stride, rows, width, dst, dst_stride);
  }
  absl::Status TreeAttention(const cpu::AttentionShape& shape, const float* q, int64_t q_stride,
                             absl::Span<const int32_t> parents, int64_t first_slot,
                             const KvCacheHandle& kv, float* out, int64_t out_stride) override {
    return inner_.TreeAttention(shape, q, q_stride, parents, first_slot, kv, out, out_stride);
  }
  absl::Status CausalConv1dTree(const float* x, absl::Span<const int32_t> parents, int64_t channels,
                                const float* weight, int64_t kernel, const float* state,
                                float* y) override {
    return inner_.CausalConv1dTree(x, parents, channels, weight, kernel, state, y);
  }
  absl::Status GatedDeltaNetTree(const float* qkv, const float* g, const float* beta,
                                 absl::Span<const int32_t> parents,
                                 const cpu::GatedDeltaNetDims& dims, const float* state,
                                 float* out) override {
    return inner_.GatedDeltaNetTree(qkv, g, beta, parents, dims, state, out);
  }
  absl::Status SelectorScoreTable(const cpu::SelectorWalkInputs& inputs, std::span<float> table,
                                  const cpu::SelectorWalkParams& params) override {
    return inner_.SelectorScoreTable(inputs, table, params);
  }
  absl::Status GatedRmsNorm(const float* x, const float* gate, int64_t groups, int64_t dim,
                            const float* weight, float eps, float* y) override {
    return inner_.GatedRmsNorm(x, gate, groups, dim, weight, eps, y);
  }
  absl::Status DynamicConv(float* out, const float* x, const float* base, const float* dynamic,
                           const cpu::DynamicConvParams& params) override {
    return inner_.DynamicConv(out, x, base, dynamic, params);
  }
  absl::Status TopK(const float* logits, float* values, int32_t* indices,
                    const cpu::TopKParams& params) override {
    return inner_.TopK(logits, values, indices, params);
  }
  absl::Status SpanLinear(const float* x, int64_t x_stride, int64_t rows,
                          const SpanHeadHandle& head, float* packed,
                          int64_t packed_stride) override {
    return inner_.SpanLinear(x, x_stride, rows, head, packed, packed_stride);
  }
  absl::Status SpanIds(absl::Span<const exl3::ColumnSpan> spans, const int32_t* columns,
                       int64_t count, int32_t* ids) override {
    return inner_.SpanIds(spans, columns, count, ids);
  }
  absl::Status SelectorWalk(const cpu::SelectorWalkInputs& inputs,
                            const cpu::SelectorWalkOutputs& outputs,
                            const cpu::SelectorWalkParams& params) override {
    return inner_.SelectorWalk(inputs, outputs, params);
  }

 protected:
  Backend& inner() { return inner_; }

 private:
  Backend& inner_;
};

}  // namespace twinspan::backend

#endif  // TWINSPAN_KERNELS_BACKEND_FORWARDING_BACKEND_H_
