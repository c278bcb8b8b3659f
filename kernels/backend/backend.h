// The one interface the models run on: memory, weight uploads and the op list. The CPU backend
// (kernels/cpu/cpu_backend.h) forwards each op to its twinspan::cpu op; the CUDA backend
// (kernels/cuda/cuda_backend.h) to its twinspan::cuda twin of the same name and arguments. Models
// never branch on the device: they hold a Backend* and call it (as ggml's backend interface).
//
// Pointers passed to ops point into the backend's memory (host memory for the CPU backend, device
// memory for CUDA): they come from Buffer::data() of buffers this backend allocated, or offsets
// into them. Host-side arguments (token ids, positions) are spans of host memory. Activations are
// fp32 on every backend. Ops may run asynchronously in issue order; Download and Synchronize wait.
//
// Exactness: ops under the contract (Linear, Attention, GatedDeltaNet, ...) are row-invariant on
// every backend: a row's result depends on the weight's shape and its own inputs, never on how many
// rows share the call. Backends agree with each other within each op's stated tolerance, not bit
// for bit.
//
// Errors: each op returns what its twinspan::cpu op returns for bad shapes (InvalidArgument,
// OutOfRange for a KV position past the cache). A handle or buffer from another backend is
// InvalidArgument. The CPU backend also checks that every pointer range an op touches lies inside
// one live buffer of that backend (InvalidArgument naming the op and argument), so a stray offset
// in model code fails on the CPU before it can corrupt device memory.
#ifndef TWINSPAN_KERNELS_BACKEND_BACKEND_H_
#define TWINSPAN_KERNELS_BACKEND_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/exl3/span_view.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/candidate_selector.h"
#include "kernels/cpu/dynamic_conv.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gated_delta_net.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/topk.h"

namespace twinspan::backend {

// A block of backend memory, freed (in issue order) when destroyed. Move-only through unique_ptr.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() = 0;
  virtual const void* data() const = 0;
  virtual size_t bytes() const = 0;

  float* floats() { return static_cast<float*>(data()); }
  const float* floats() const { return static_cast<const float*>(data()); }
};

// A linear layer's weight in the backend's format (dense, Q4, EXL3 or a column view of one).
class LinearHandle {
 public:
  virtual ~LinearHandle() = default;
  virtual int64_t in_features() const = 0;
  virtual int64_t out_features() const = 0;
};

// One weight of Backend::Linears and where its rows go (row stride y_stride floats).
struct LinearOutput {
  const LinearHandle* w = nullptr;
  float* y = nullptr;
  int64_t y_stride = 0;
};

// The span views of one EXL3 head (exl3::MakeSpanViews) in the backend's format: the two-span head
// of DESIGN.md, run by SpanLinear.
class SpanHeadHandle {
 public:
  virtual ~SpanHeadHandle() = default;
  virtual int64_t in_features() const = 0;
  // Logits per packed row: the spans' sizes summed (exl3::PackedSize).
  virtual int64_t columns() const = 0;
};

// An embedding table in the backend's memory.
class EmbeddingHandle {
 public:
  virtual ~EmbeddingHandle() = default;
  virtual int64_t rows() const = 0;
  virtual int64_t dim() const = 0;
};

// One attention layer's K/V cache for one sequence (slot p = absolute position p).
class KvCacheHandle {
 public:
  virtual ~KvCacheHandle() = default;
  virtual int64_t capacity() const = 0;
  virtual int64_t kv_heads() const = 0;
  virtual int64_t head_dim() const = 0;
  virtual cpu::KvDtype dtype() const = 0;
};

// Not thread-safe: one thread issues ops at a time (the CUDA backend owns one stream). The handles
// and buffers it returns must not outlive it.
class Backend {
 public:
  virtual ~Backend() = default;

  // "cpu" or "cuda:<ordinal>", for logs and ModelInfo.
  virtual std::string name() const = 0;

  // ---- memory ----------------------------------------------------------------------------------
  // `bytes` of uninitialized memory. ResourceExhausted naming the bytes when it cannot be had.
  virtual absl::StatusOr<std::unique_ptr<Buffer>> Allocate(size_t bytes) = 0;
  // dst[offset, offset + bytes) = host src. InvalidArgument when the range leaves the buffer.
  virtual absl::Status Upload(Buffer& dst, size_t offset, const void* src, size_t bytes) = 0;
  // Host dst = src[offset, offset + bytes), after every op issued before it. InvalidArgument when
  // the range leaves the buffer; the device's error (Internal) when an earlier op failed.
  virtual absl::Status Download(void* dst, const Buffer& src, size_t offset, size_t bytes) = 0;
  // rows x width_bytes from src (row pitch src_pitch bytes) to dst (dst_pitch); both in this
  // backend's memory, not overlapping. Packs span logits, splits q from the output gate, gathers
  // taps. InvalidArgument for a pitch below width_bytes.
  virtual absl::Status Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                              size_t width_bytes, int64_t rows) = 0;
  // `bytes` zero bytes at dst.
  virtual absl::Status Zero(void* dst, size_t bytes) = 0;
  // Waits for every op issued so far; returns the first device error.
  virtual absl::Status Synchronize() = 0;

  // Conveniences over the above (not virtual). n floats; InvalidArgument for n < 0.
  absl::StatusOr<std::unique_ptr<Buffer>> AllocateFloats(int64_t n) {
    if (n < 0) return absl::InvalidArgumentError("AllocateFloats: negative count");
    return Allocate(static_cast<size_t>(n) * sizeof(float));
  }
  // `bytes` contiguous bytes from src to dst (Copy2D of one row).
  absl::Status Copy(void* dst, const void* src, size_t bytes) {
    return Copy2D(dst, bytes, src, bytes, bytes, 1);
  }

  // ---- weights (synchronous; the host copies may be dropped afterwards) -------------------------
  virtual absl::StatusOr<std::unique_ptr<LinearHandle>> UploadLinear(
      const cpu::LinearWeight& weight) = 0;
  virtual absl::StatusOr<std::unique_ptr<EmbeddingHandle>> UploadEmbedding(
      const cpu::EmbeddingTable& table) = 0;
  // A buffer holding `values` (norm weights, gates' constants, conv kernels).
  virtual absl::StatusOr<std::unique_ptr<Buffer>> UploadFloats(absl::Span<const float> values) = 0;
  // The span views of one EXL3 head, for SpanLinear. Each view keeps the head's plan; a device
  // backend shares the head's stored matrix when it uploaded it (UploadLinear) and otherwise
  // uploads only the views' blocks. InvalidArgument for no views or views of different matrices;
  // the upload's errors.
  virtual absl::StatusOr<std::unique_ptr<SpanHeadHandle>> UploadSpanHead(
      absl::Span<const exl3::SpanView> views) = 0;
  // An empty cache of `capacity` positions. ResourceExhausted naming the bytes.
  virtual absl::StatusOr<std::unique_ptr<KvCacheHandle>> NewKvCache(cpu::KvDtype dtype,
                                                                    int64_t capacity,
                                                                    int64_t kv_heads,
                                                                    int64_t head_dim) = 0;

  // ---- ops: each is its twinspan::cpu op of the same name (see that header for the contract) ---
  // out[r] = table row ids[r]. InvalidArgument naming the row for an id outside the table.
  virtual absl::Status Embedding(const EmbeddingHandle& table, absl::Span<const int32_t> ids,
                                 float* out) = 0;
  virtual absl::Status RmsNorm(const float* x, int64_t x_stride, int64_t rows, int64_t dim,
                               const float* weight, float eps, float* y, int64_t y_stride) = 0;
  // h[rows, dim] += delta (both contiguous), then RmsNorm of h into y: a residual add and the norm
  // after it. A device backend may fuse the two; the bits are those of Add then RmsNorm.
  virtual absl::Status AddRmsNorm(float* h, const float* delta, int64_t rows, int64_t dim,
                                  const float* weight, float eps, float* y, int64_t y_stride) {
    if (absl::Status s = Add(h, delta, rows * dim, h); !s.ok()) return s;
    return RmsNorm(h, dim, rows, dim, weight, eps, y, y_stride);
  }
  virtual absl::Status Linear(const float* x, int64_t x_stride, int64_t rows, const LinearHandle& w,
                              float* y, int64_t y_stride) = 0;
  // Linear of x with each weight in turn: the linears of one input (gate and up; q, k and v). A
  // device backend may run several in one launch; each output gets the bits its Linear gives it.
  virtual absl::Status Linears(const float* x, int64_t x_stride, int64_t rows,
                               absl::Span<const LinearOutput> outs) {
    for (const LinearOutput& o : outs) {
      if (o.w == nullptr) return absl::InvalidArgumentError("Linears: a null weight");
      if (absl::Status s = Linear(x, x_stride, rows, *o.w, o.y, o.y_stride); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  // cos/sin: [rows, rot_dim / 2] in backend memory (cpu::RopeAngles computed on the host, then
  // uploaded).
  virtual absl::Status Rope(float* x, int64_t x_stride, int64_t rows, int64_t heads,
                            int64_t head_dim, int64_t rot_dim, const float* cos,
                            const float* sin) = 0;
  virtual absl::Status SwiGlu(const float* gate, const float* up, int64_t in_stride, int64_t rows,
                              int64_t dim, float* out, int64_t out_stride) = 0;
  // out[i] = a[i] + b[i] for i < n (the residual add); out may alias a or b (cpu/add.h).
  virtual absl::Status Add(const float* a, const float* b, int64_t n, float* out) = 0;
  // x[r, i] *= sigmoid(gate[r, i]) for `rows` rows of `dim` values (attention's output gate;
  // cpu/mul_sigmoid.h).
  virtual absl::Status MulSigmoid(float* x, int64_t x_stride, const float* gate,
                                  int64_t gate_stride, int64_t rows, int64_t dim) = 0;
  // Writes rows' K and V (row strides k_stride / v_stride floats) at `positions`, all or none
  // (cpu/kv_write.h). OutOfRange naming the position past the cache's capacity.
  virtual absl::Status KvWrite(KvCacheHandle& kv, absl::Span<const int64_t> positions,
                               const float* k, int64_t k_stride, const float* v,
                               int64_t v_stride) = 0;
  virtual absl::Status Attention(const cpu::AttentionShape& shape, const float* q, int64_t q_stride,
                                 absl::Span<const int64_t> positions, const KvCacheHandle& kv,
                                 int64_t num_keys, float* out, int64_t out_stride) = 0;
  // dst positions [dst_first, dst_first + rows) = src's from src_first, bit for bit: a cached
  // prompt prefix into a new sequence, a sequence's rows into the cache (cpu/kv_copy.h).
  virtual absl::Status KvCopy(const KvCacheHandle& src, int64_t src_first, KvCacheHandle& dst,
                              int64_t dst_first, int64_t rows) = 0;
  // The conv over `rows` rows from the window state_in ([kernel - 1, channels]); the window after
  // the last row goes to state_out: state_in itself (in place) or a disjoint buffer, so a caller
  // can keep the start state without copying it. InvalidArgument when they overlap otherwise.
  virtual absl::Status CausalConv1d(const float* x, int64_t rows, int64_t channels,
                                    const float* weight, int64_t kernel, const float* state_in,
                                    float* state_out, float* y) = 0;
  virtual absl::Status GatedDeltaNetGates(const float* a, const float* b, int64_t ab_stride,
                                          int64_t rows, int64_t v_heads, const float* a_log,
                                          const float* dt_bias, float* g, float* beta) = 0;
  // The recurrence over `rows` rows from state_in ([v_heads, k_dim, v_dim]); the state after the
  // last row goes to state_out, in place or disjoint as CausalConv1d's.
  virtual absl::Status GatedDeltaNet(const float* qkv, const float* g, const float* beta,
                                     int64_t rows, const cpu::GatedDeltaNetDims& dims,
                                     const float* state_in, float* state_out, float* out) = 0;
  virtual absl::Status GatedRmsNorm(const float* x, const float* gate, int64_t groups, int64_t dim,
                                    const float* weight, float eps, float* y) = 0;
  // dst[i, :width] = src[rows[i], :width] (row strides in floats; rows on the host): a tree
  // verify's kept path out of its window's rows (cpu/gather_rows.h).
  virtual absl::Status GatherRows(const float* src, int64_t src_stride,
                                  absl::Span<const int64_t> rows, int64_t width, float* dst,
                                  int64_t dst_stride) = 0;

  // ---- tree windows (cpu/tree_rows.h): `parents` on the host, one per row ---------------------
  // Attention of rows written to cache slots first_slot + r, each over the committed slots and its
  // ancestors only, at positions by depth (cpu::TreeAttention).
  virtual absl::Status TreeAttention(const cpu::AttentionShape& shape, const float* q,
                                     int64_t q_stride, absl::Span<const int32_t> parents,
                                     int64_t first_slot, const KvCacheHandle& kv, float* out,
                                     int64_t out_stride) = 0;
  // CausalConv1d and GatedDeltaNet of a tree's rows, each along its own path from the state, which
  // is only read (cpu::CausalConv1dTree, cpu::GatedDeltaNetTree).
  virtual absl::Status CausalConv1dTree(const float* x, absl::Span<const int32_t> parents,
                                        int64_t channels, const float* weight, int64_t kernel,
                                        const float* state, float* y) = 0;
  virtual absl::Status GatedDeltaNetTree(const float* qkv, const float* g, const float* beta,
                                         absl::Span<const int32_t> parents,
                                         const cpu::GatedDeltaNetDims& dims, const float* state,
                                         float* out) = 0;

  // The drafter's ops. Sizes as cpu::DynamicConvParams / cpu::TopKParams describe.
  virtual absl::Status DynamicConv(float* out, const float* x, const float* base,
                                   const float* dynamic, const cpu::DynamicConvParams& params) = 0;
  virtual absl::Status TopK(const float* logits, float* values, int32_t* indices,
                            const cpu::TopKParams& params) = 0;
  // packed[r, :] = the head's logits at its spans' columns, side by side in span order, from x
  // [rows, in_features] (row stride x_stride); packed has row stride packed_stride >= columns().
  // Bit-equal to the full head's logits at those columns (cpu/exl3_span_linear.h; on CUDA one
  // launch for up to four spans). InvalidArgument for rows < 0 or a small stride.
  virtual absl::Status SpanLinear(const float* x, int64_t x_stride, int64_t rows,
                                  const SpanHeadHandle& head, float* packed,
                                  int64_t packed_stride) = 0;
  // ids[i] = the vocabulary id of packed column columns[i] of a row holding `spans` (host memory)
  // side by side (cpu/span_ids.h): top-k columns of span logits become token ids on the backend.
  // -1 stays -1. InvalidArgument for count < 0 or bad spans; the CPU backend also for a column
  // outside [-1, columns), which a device backend maps to -1.
  virtual absl::Status SpanIds(absl::Span<const exl3::ColumnSpan> spans, const int32_t* columns,
                               int64_t count, int32_t* ids) = 0;
  // DFlash2's candidate selector walk (cpu/candidate_selector.h). Every span of `inputs` and
  // `outputs`, and the codebooks' data, lie in this backend's memory, except inputs.uniforms: host
  // memory, like token ids (at most 64 values). Sequential over the slots.
  virtual absl::Status SelectorWalk(const cpu::SelectorWalkInputs& inputs,
                                    const cpu::SelectorWalkOutputs& outputs,
                                    const cpu::SelectorWalkParams& params) = 0;
  // Every score the walk could meet, [S, k, k] into `table` (cpu::SelectorScoreTable), for a
  // tree of drafts built on the host. Memory as SelectorWalk's; uniforms and temperature unused.
  virtual absl::Status SelectorScoreTable(const cpu::SelectorWalkInputs& inputs,
                                          std::span<float> table,
                                          const cpu::SelectorWalkParams& params) = 0;
};

}  // namespace twinspan::backend

#endif  // TWINSPAN_KERNELS_BACKEND_BACKEND_H_
