#include "kernels/cpu/cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"
#include "kernels/cpu/add.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/candidate_selector.h"
#include "kernels/cpu/causal_conv1d.h"
#include "kernels/cpu/dynamic_conv.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/exl3_linear.h"
#include "kernels/cpu/exl3_span_linear.h"
#include "kernels/cpu/gated_delta_net.h"
#include "kernels/cpu/gated_rms_norm.h"
#include "kernels/cpu/gather_rows.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/cpu/kv_copy.h"
#include "kernels/cpu/kv_write.h"
#include "kernels/cpu/mul_sigmoid.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/span_ids.h"
#include "kernels/cpu/state_overlap.h"
#include "kernels/cpu/swiglu.h"
#include "kernels/cpu/topk.h"

namespace twinspan::cpu {
namespace {

// 64-byte blocks: a cache line, and every 4-float vector load stays within one line.
constexpr std::align_val_t kAlignment{64};
constexpr size_t kFloat = sizeof(float);

// The live blocks of one backend, so ops can check that a pointer range lies inside one of them.
// Thread-safe: buffers may be freed on any thread.
class Registry {
 public:
  void Add(const void* base, size_t bytes) {
    absl::MutexLock lock(&mu_);
    blocks_[reinterpret_cast<uintptr_t>(base)] = bytes;
  }
  void Remove(const void* base) {
    absl::MutexLock lock(&mu_);
    blocks_.erase(reinterpret_cast<uintptr_t>(base));
  }
  // True when [p, p + bytes) lies inside one live block.
  bool Contains(const void* p, size_t bytes) const {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
    absl::MutexLock lock(&mu_);
    auto it = blocks_.upper_bound(begin);
    if (it == blocks_.begin()) return false;
    --it;
    const uintptr_t offset = begin - it->first;
    return offset <= it->second && bytes <= it->second - offset;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<uintptr_t, size_t> blocks_ ABSL_GUARDED_BY(mu_);
};

class CpuBuffer final : public backend::Buffer {
 public:
  CpuBuffer(std::shared_ptr<Registry> registry, void* data, size_t bytes)
      : registry_(std::move(registry)), data_(data), bytes_(bytes) {
    if (data_ != nullptr) registry_->Add(data_, bytes_);
  }
  ~CpuBuffer() override {
    if (data_ == nullptr) return;
    registry_->Remove(data_);
    ::operator delete(data_, kAlignment);
  }
  CpuBuffer(const CpuBuffer&) = delete;
  CpuBuffer& operator=(const CpuBuffer&) = delete;

  void* data() override { return data_; }
  const void* data() const override { return data_; }
  size_t bytes() const override { return bytes_; }
  const Registry* registry() const { return registry_.get(); }

 private:
  std::shared_ptr<Registry> registry_;  // Shared so a buffer freed late never touches freed memory.
  void* data_;
  size_t bytes_;
};

class CpuLinearHandle final : public backend::LinearHandle {
 public:
  CpuLinearHandle(const Registry* owner, LinearWeight weight)
      : owner_(owner), weight_(std::move(weight)) {}
  int64_t in_features() const override { return weight_.in_features(); }
  int64_t out_features() const override { return weight_.out_features(); }
  const Registry* owner() const { return owner_; }
  const LinearWeight& weight() const { return weight_; }

 private:
  const Registry* owner_;
  LinearWeight weight_;  // Shares the loaded values: uploading copies nothing.
};

class CpuSpanHeadHandle final : public backend::SpanHeadHandle {
 public:
  CpuSpanHeadHandle(const Registry* owner, std::vector<exl3::SpanView> views)
      : owner_(owner), views_(std::move(views)) {}
  int64_t in_features() const override { return views_[0].weight.k(); }
  int64_t columns() const override { return exl3::PackedSize(views_); }
  const Registry* owner() const { return owner_; }
  const std::vector<exl3::SpanView>& views() const { return views_; }

 private:
  const Registry* owner_;
  std::vector<exl3::SpanView> views_;  // Share the head's memory map: uploading copies nothing.
};

class CpuEmbeddingHandle final : public backend::EmbeddingHandle {
 public:
  CpuEmbeddingHandle(const Registry* owner, EmbeddingTable table)
      : owner_(owner), table_(std::move(table)) {}
  int64_t rows() const override { return table_.rows(); }
  int64_t dim() const override { return table_.dim(); }
  const Registry* owner() const { return owner_; }
  const EmbeddingTable& table() const { return table_; }

 private:
  const Registry* owner_;
  EmbeddingTable table_;
};

class CpuKvCacheHandle final : public backend::KvCacheHandle {
 public:
  CpuKvCacheHandle(const Registry* owner, KvCache cache)
      : owner_(owner), cache_(std::move(cache)) {}
  int64_t capacity() const override { return cache_.capacity(); }
  int64_t kv_heads() const override { return cache_.kv_heads(); }
  int64_t head_dim() const override { return cache_.head_dim(); }
  KvDtype dtype() const override { return cache_.dtype(); }
  const Registry* owner() const { return owner_; }
  KvCache& cache() { return cache_; }
  const KvCache& cache() const { return cache_; }

 private:
  const Registry* owner_;
  KvCache cache_;
};

// Bytes of `rows` rows of `width` elements whose starts are `stride` elements apart; 0 for an
// empty range, SIZE_MAX for one no buffer can hold (a negative stride).
size_t Extent(int64_t rows, int64_t stride, int64_t width, size_t element = kFloat) {
  if (rows <= 0 || width <= 0) return 0;
  if (stride < 0) return std::numeric_limits<size_t>::max();
  return (static_cast<size_t>(rows - 1) * static_cast<size_t>(stride) +
          static_cast<size_t>(width)) *
         element;
}

size_t Packed(int64_t n, size_t element = kFloat) { return Extent(n > 0 ? 1 : 0, 0, n, element); }

class CpuBackend final : public backend::Backend {
 public:
  explicit CpuBackend(ThreadPool* pool) : ctx_{pool}, registry_(std::make_shared<Registry>()) {}

  std::string name() const override { return "cpu"; }

  absl::StatusOr<std::unique_ptr<backend::Buffer>> Allocate(size_t bytes) override {
    void* data = nullptr;
    if (bytes > 0) {
      data = ::operator new(bytes, kAlignment, std::nothrow);
      if (data == nullptr) {
        return absl::ResourceExhaustedError(
            absl::StrFormat("cpu backend: cannot allocate %d bytes", bytes));
      }
    }
    return std::make_unique<CpuBuffer>(registry_, data, bytes);
  }

  absl::Status Upload(backend::Buffer& dst, size_t offset, const void* src, size_t bytes) override {
    ABSL_RETURN_IF_ERROR(CheckBufferRange("Upload", dst, offset, bytes));
    if (bytes > 0 && src == nullptr) return absl::InvalidArgumentError("Upload: null source");
    if (bytes > 0) std::memcpy(static_cast<std::byte*>(dst.data()) + offset, src, bytes);
    return absl::OkStatus();
  }

  absl::Status Download(void* dst, const backend::Buffer& src, size_t offset,
                        size_t bytes) override {
    ABSL_RETURN_IF_ERROR(CheckBufferRange("Download", src, offset, bytes));
    if (bytes > 0 && dst == nullptr) return absl::InvalidArgumentError("Download: null target");
    if (bytes > 0) std::memcpy(dst, static_cast<const std::byte*>(src.data()) + offset, bytes);
    return absl::OkStatus();
  }

  absl::Status Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                      size_t width_bytes, int64_t rows) override {
    if (rows < 0 || dst_pitch < width_bytes || src_pitch < width_bytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Copy2D: %d rows of %d bytes with pitches dst %d / src %d (a pitch is "
                          "below the width)",
                          rows, width_bytes, dst_pitch, src_pitch));
    }
    const size_t dst_bytes = Extent(rows, dst_pitch, width_bytes, 1);
    const size_t src_bytes = Extent(rows, src_pitch, width_bytes, 1);
    ABSL_RETURN_IF_ERROR(CheckRange("Copy2D", "dst", dst, dst_bytes));
    ABSL_RETURN_IF_ERROR(CheckRange("Copy2D", "src", src, src_bytes));
    if (dst_bytes == 0) return absl::OkStatus();
    const uintptr_t d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
    if (d < s + src_bytes && s < d + dst_bytes) {
      return absl::InvalidArgumentError("Copy2D: dst and src overlap");
    }
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(static_cast<std::byte*>(dst) + r * dst_pitch,
                  static_cast<const std::byte*>(src) + r * src_pitch, width_bytes);
    }
    return absl::OkStatus();
  }

  absl::Status Zero(void* dst, size_t bytes) override {
    ABSL_RETURN_IF_ERROR(CheckRange("Zero", "dst", dst, bytes));
    if (bytes > 0) std::memset(dst, 0, bytes);
    return absl::OkStatus();
  }

  absl::Status Synchronize() override { return absl::OkStatus(); }

  absl::StatusOr<std::unique_ptr<backend::LinearHandle>> UploadLinear(
      const LinearWeight& weight) override {
    if (weight.empty()) return absl::InvalidArgumentError("UploadLinear: empty weight");
    return std::make_unique<CpuLinearHandle>(registry_.get(), weight);
  }

  absl::StatusOr<std::unique_ptr<backend::SpanHeadHandle>> UploadSpanHead(
      absl::Span<const exl3::SpanView> views) override {
    if (views.empty()) return absl::InvalidArgumentError("UploadSpanHead: no span views");
    const exl3::Weight& first = views[0].weight;
    for (size_t i = 0; i < views.size(); ++i) {
      const exl3::Weight& w = views[i].weight;
      if (w.name() != first.name() || w.k() != first.k() || w.stored_n() != first.stored_n() ||
          w.bits() != first.bits() || w.plan() != first.plan()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "UploadSpanHead: view %d (\"%s\") is not of the matrix of view 0 (\"%s\")", i, w.name(),
            first.name()));
      }
    }
    return std::make_unique<CpuSpanHeadHandle>(
        registry_.get(), std::vector<exl3::SpanView>(views.begin(), views.end()));
  }

  absl::StatusOr<std::unique_ptr<backend::EmbeddingHandle>> UploadEmbedding(
      const EmbeddingTable& table) override {
    if (table.rows() == 0) return absl::InvalidArgumentError("UploadEmbedding: empty table");
    return std::make_unique<CpuEmbeddingHandle>(registry_.get(), table);
  }

  absl::StatusOr<std::unique_ptr<backend::Buffer>> UploadFloats(
      absl::Span<const float> values) override {
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<backend::Buffer> buffer,
                          Allocate(values.size() * kFloat));
    ABSL_RETURN_IF_ERROR(Upload(*buffer, 0, values.data(), values.size() * kFloat));
    return buffer;
  }

  absl::StatusOr<std::unique_ptr<backend::KvCacheHandle>> NewKvCache(KvDtype dtype,
                                                                     int64_t capacity,
                                                                     int64_t kv_heads,
                                                                     int64_t head_dim) override {
    ABSL_ASSIGN_OR_RETURN(KvCache cache, KvCache::Create(dtype, capacity, kv_heads, head_dim));
    return std::make_unique<CpuKvCacheHandle>(registry_.get(), std::move(cache));
  }

  absl::Status Embedding(const backend::EmbeddingHandle& table, absl::Span<const int32_t> ids,
                         float* out) override {
    ABSL_ASSIGN_OR_RETURN(const CpuEmbeddingHandle* t, Own<CpuEmbeddingHandle>("Embedding", table));
    const int64_t rows = static_cast<int64_t>(ids.size());
    ABSL_RETURN_IF_ERROR(CheckRange("Embedding", "out", out, Packed(rows * t->dim())));
    return cpu::Embedding(ctx_, t->table(), ids.data(), rows, out);
  }

  absl::Status RmsNorm(const float* x, int64_t x_stride, int64_t rows, int64_t dim,
                       const float* weight, float eps, float* y, int64_t y_stride) override {
    ABSL_RETURN_IF_ERROR(CheckRange("RmsNorm", "x", x, Extent(rows, x_stride, dim)));
    ABSL_RETURN_IF_ERROR(CheckRange("RmsNorm", "weight", weight, rows > 0 ? Packed(dim) : 0));
    ABSL_RETURN_IF_ERROR(CheckRange("RmsNorm", "y", y, Extent(rows, y_stride, dim)));
    return cpu::RmsNorm(ctx_, x, x_stride, rows, dim, weight, eps, y, y_stride);
  }

  absl::Status Linear(const float* x, int64_t x_stride, int64_t rows,
                      const backend::LinearHandle& w, float* y, int64_t y_stride) override {
    ABSL_ASSIGN_OR_RETURN(const CpuLinearHandle* h, Own<CpuLinearHandle>("Linear", w));
    ABSL_RETURN_IF_ERROR(CheckRange("Linear", "x", x, Extent(rows, x_stride, w.in_features())));
    ABSL_RETURN_IF_ERROR(CheckRange("Linear", "y", y, Extent(rows, y_stride, w.out_features())));
    return cpu::Linear(ctx_, x, x_stride, rows, h->weight(), y, y_stride);
  }

  // EXL3 weights of one input (q, k and v; gate and up) share one parallel loop, so a narrow
  // weight's blocks fill the threads beside the others'; any other mix runs one by one.
  absl::Status Linears(const float* x, int64_t x_stride, int64_t rows,
                       absl::Span<const backend::LinearOutput> outs) override {
    std::vector<Exl3LinearOutput> exl3;
    for (const backend::LinearOutput& o : outs) {
      if (o.w == nullptr) return absl::InvalidArgumentError("Linears: a null weight");
      ABSL_ASSIGN_OR_RETURN(const CpuLinearHandle* h, Own<CpuLinearHandle>("Linears", *o.w));
      if (!h->weight().is_exl3() || h->weight().in_features() != outs[0].w->in_features()) {
        return backend::Backend::Linears(x, x_stride, rows, outs);
      }
      ABSL_RETURN_IF_ERROR(
          CheckRange("Linears", "x", x, Extent(rows, x_stride, o.w->in_features())));
      ABSL_RETURN_IF_ERROR(
          CheckRange("Linears", "y", o.y, Extent(rows, o.y_stride, o.w->out_features())));
      exl3.push_back({h->weight().exl3(), o.y, o.y_stride});
    }
    return cpu::Exl3Linears(ctx_, x, x_stride, rows, exl3.data(), static_cast<int>(exl3.size()));
  }

  absl::Status Rope(float* x, int64_t x_stride, int64_t rows, int64_t heads, int64_t head_dim,
                    int64_t rot_dim, const float* cos, const float* sin) override {
    ABSL_RETURN_IF_ERROR(CheckRange("Rope", "x", x, Extent(rows, x_stride, heads * head_dim)));
    ABSL_RETURN_IF_ERROR(CheckRange("Rope", "cos", cos, Packed(rows * (rot_dim / 2))));
    ABSL_RETURN_IF_ERROR(CheckRange("Rope", "sin", sin, Packed(rows * (rot_dim / 2))));
    return cpu::Rope(ctx_, x, x_stride, rows, heads, head_dim, rot_dim, cos, sin);
  }

  absl::Status SwiGlu(const float* gate, const float* up, int64_t in_stride, int64_t rows,
                      int64_t dim, float* out, int64_t out_stride) override {
    ABSL_RETURN_IF_ERROR(CheckRange("SwiGlu", "gate", gate, Extent(rows, in_stride, dim)));
    ABSL_RETURN_IF_ERROR(CheckRange("SwiGlu", "up", up, Extent(rows, in_stride, dim)));
    ABSL_RETURN_IF_ERROR(CheckRange("SwiGlu", "out", out, Extent(rows, out_stride, dim)));
    return cpu::SwiGlu(ctx_, gate, up, in_stride, rows, dim, out, out_stride);
  }

  absl::Status Add(const float* a, const float* b, int64_t n, float* out) override {
    ABSL_RETURN_IF_ERROR(CheckRange("Add", "a", a, Packed(n)));
    ABSL_RETURN_IF_ERROR(CheckRange("Add", "b", b, Packed(n)));
    ABSL_RETURN_IF_ERROR(CheckRange("Add", "out", out, Packed(n)));
    return cpu::Add(ctx_, a, b, n, out);
  }

  absl::Status MulSigmoid(float* x, int64_t x_stride, const float* gate, int64_t gate_stride,
                          int64_t rows, int64_t dim) override {
    ABSL_RETURN_IF_ERROR(CheckRange("MulSigmoid", "x", x, Extent(rows, x_stride, dim)));
    ABSL_RETURN_IF_ERROR(CheckRange("MulSigmoid", "gate", gate, Extent(rows, gate_stride, dim)));
    return cpu::MulSigmoid(ctx_, x, x_stride, gate, gate_stride, rows, dim);
  }

  absl::Status KvWrite(backend::KvCacheHandle& kv, absl::Span<const int64_t> positions,
                       const float* k, int64_t k_stride, const float* v,
                       int64_t v_stride) override {
    ABSL_ASSIGN_OR_RETURN(CpuKvCacheHandle * cache, OwnMutable<CpuKvCacheHandle>("KvWrite", kv));
    const int64_t rows = static_cast<int64_t>(positions.size());
    const int64_t width = kv.kv_heads() * kv.head_dim();
    ABSL_RETURN_IF_ERROR(CheckRange("KvWrite", "k", k, Extent(rows, k_stride, width)));
    ABSL_RETURN_IF_ERROR(CheckRange("KvWrite", "v", v, Extent(rows, v_stride, width)));
    return cpu::KvWrite(ctx_, cache->cache(), positions.data(), rows, k, k_stride, v, v_stride);
  }

  absl::Status KvCopy(const backend::KvCacheHandle& src, int64_t src_first,
                      backend::KvCacheHandle& dst, int64_t dst_first, int64_t rows) override {
    ABSL_ASSIGN_OR_RETURN(const CpuKvCacheHandle* from, Own<CpuKvCacheHandle>("KvCopy", src));
    ABSL_ASSIGN_OR_RETURN(CpuKvCacheHandle * to, OwnMutable<CpuKvCacheHandle>("KvCopy", dst));
    return cpu::KvCopy(ctx_, from->cache(), src_first, to->cache(), dst_first, rows);
  }

  absl::Status Attention(const AttentionShape& shape, const float* q, int64_t q_stride,
                         absl::Span<const int64_t> positions, const backend::KvCacheHandle& kv,
                         int64_t num_keys, float* out, int64_t out_stride) override {
    ABSL_ASSIGN_OR_RETURN(const CpuKvCacheHandle* cache, Own<CpuKvCacheHandle>("Attention", kv));
    const int64_t rows = static_cast<int64_t>(positions.size());
    const int64_t width = shape.num_heads * shape.head_dim;
    ABSL_RETURN_IF_ERROR(CheckRange("Attention", "q", q, Extent(rows, q_stride, width)));
    ABSL_RETURN_IF_ERROR(CheckRange("Attention", "out", out, Extent(rows, out_stride, width)));
    return cpu::Attention(ctx_, shape, q, q_stride, positions.data(), rows, cache->cache(),
                          num_keys, out, out_stride);
  }

  absl::Status CausalConv1d(const float* x, int64_t rows, int64_t channels, const float* weight,
                            int64_t kernel, const float* state_in, float* state_out,
                            float* y) override {
    ABSL_RETURN_IF_ERROR(CheckRange("CausalConv1d", "x", x, Packed(rows * channels)));
    ABSL_RETURN_IF_ERROR(CheckRange("CausalConv1d", "weight", weight, Packed(channels * kernel)));
    ABSL_RETURN_IF_ERROR(CheckRange("CausalConv1d", "y", y, Packed(rows * channels)));
    ABSL_RETURN_IF_ERROR(
        StartState("CausalConv1d", state_in, state_out, Packed((kernel - 1) * channels)));
    return cpu::CausalConv1d(ctx_, x, rows, channels, weight, kernel, state_out, y);
  }

  absl::Status GatedDeltaNetGates(const float* a, const float* b, int64_t ab_stride, int64_t rows,
                                  int64_t v_heads, const float* a_log, const float* dt_bias,
                                  float* g, float* beta) override {
    const size_t per_row = Packed(rows * v_heads);
    ABSL_RETURN_IF_ERROR(
        CheckRange("GatedDeltaNetGates", "a", a, Extent(rows, ab_stride, v_heads)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("GatedDeltaNetGates", "b", b, Extent(rows, ab_stride, v_heads)));
    ABSL_RETURN_IF_ERROR(CheckRange("GatedDeltaNetGates", "a_log", a_log, Packed(v_heads)));
    ABSL_RETURN_IF_ERROR(CheckRange("GatedDeltaNetGates", "dt_bias", dt_bias, Packed(v_heads)));
    ABSL_RETURN_IF_ERROR(CheckRange("GatedDeltaNetGates", "g", g, per_row));
    ABSL_RETURN_IF_ERROR(CheckRange("GatedDeltaNetGates", "beta", beta, per_row));
    return cpu::GatedDeltaNetGates(ctx_, a, b, ab_stride, rows, v_heads, a_log, dt_bias, g, beta);
  }

  absl::Status GatedDeltaNet(const float* qkv, const float* g, const float* beta, int64_t rows,
                             const GatedDeltaNetDims& dims, const float* state_in, float* state_out,
                             float* out) override {
    ABSL_RETURN_IF_ERROR(CheckRange("GatedDeltaNet", "qkv", qkv, Packed(rows * dims.qkv_width())));
    ABSL_RETURN_IF_ERROR(CheckRange("GatedDeltaNet", "g", g, Packed(rows * dims.v_heads)));
    ABSL_RETURN_IF_ERROR(CheckRange("GatedDeltaNet", "beta", beta, Packed(rows * dims.v_heads)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("GatedDeltaNet", "out", out, Packed(rows * dims.v_heads * dims.v_dim)));
    ABSL_RETURN_IF_ERROR(
        StartState("GatedDeltaNet", state_in, state_out, Packed(dims.state_size())));
    return cpu::GatedDeltaNet(ctx_, qkv, g, beta, rows, dims, state_out, out);
  }

  absl::Status GatherRows(const float* src, int64_t src_stride, absl::Span<const int64_t> rows,
                          int64_t width, float* dst, int64_t dst_stride) override {
    const int64_t count = static_cast<int64_t>(rows.size());
    int64_t last = -1;
    for (int64_t r : rows) last = std::max(last, r);
    ABSL_RETURN_IF_ERROR(CheckRange("GatherRows", "src", src, Extent(last + 1, src_stride, width)));
    ABSL_RETURN_IF_ERROR(CheckRange("GatherRows", "dst", dst, Extent(count, dst_stride, width)));
    return cpu::GatherRows(ctx_, src, src_stride, rows.data(), count, width, dst, dst_stride);
  }

  absl::Status TreeAttention(const AttentionShape& shape, const float* q, int64_t q_stride,
                             absl::Span<const int32_t> parents, int64_t first_slot,
                             const backend::KvCacheHandle& kv, float* out,
                             int64_t out_stride) override {
    ABSL_ASSIGN_OR_RETURN(const CpuKvCacheHandle* cache,
                          Own<CpuKvCacheHandle>("TreeAttention", kv));
    const int64_t rows = static_cast<int64_t>(parents.size());
    const int64_t width = shape.num_heads * shape.head_dim;
    ABSL_RETURN_IF_ERROR(CheckRange("TreeAttention", "q", q, Extent(rows, q_stride, width)));
    ABSL_RETURN_IF_ERROR(CheckRange("TreeAttention", "out", out, Extent(rows, out_stride, width)));
    return cpu::TreeAttention(ctx_, shape, q, q_stride, parents.data(), rows, first_slot,
                              cache->cache(), out, out_stride);
  }

  absl::Status CausalConv1dTree(const float* x, absl::Span<const int32_t> parents, int64_t channels,
                                const float* weight, int64_t kernel, const float* state,
                                float* y) override {
    const int64_t rows = static_cast<int64_t>(parents.size());
    ABSL_RETURN_IF_ERROR(CheckRange("CausalConv1dTree", "x", x, Packed(rows * channels)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("CausalConv1dTree", "weight", weight, Packed(channels * kernel)));
    ABSL_RETURN_IF_ERROR(CheckRange("CausalConv1dTree", "y", y, Packed(rows * channels)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("CausalConv1dTree", "state", state, Packed((kernel - 1) * channels)));
    return cpu::CausalConv1dTree(ctx_, x, parents.data(), rows, channels, weight, kernel, state, y);
  }

  absl::Status GatedDeltaNetTree(const float* qkv, const float* g, const float* beta,
                                 absl::Span<const int32_t> parents, const GatedDeltaNetDims& dims,
                                 const float* state, float* out) override {
    const int64_t rows = static_cast<int64_t>(parents.size());
    ABSL_RETURN_IF_ERROR(
        CheckRange("GatedDeltaNetTree", "qkv", qkv, Packed(rows * dims.qkv_width())));
    ABSL_RETURN_IF_ERROR(CheckRange("GatedDeltaNetTree", "g", g, Packed(rows * dims.v_heads)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("GatedDeltaNetTree", "beta", beta, Packed(rows * dims.v_heads)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("GatedDeltaNetTree", "out", out, Packed(rows * dims.v_heads * dims.v_dim)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("GatedDeltaNetTree", "state", state, Packed(dims.state_size())));
    return cpu::GatedDeltaNetTree(ctx_, qkv, g, beta, parents.data(), rows, dims, state, out);
  }

  absl::Status GatedRmsNorm(const float* x, const float* gate, int64_t groups, int64_t dim,
                            const float* weight, float eps, float* y) override {
    ABSL_RETURN_IF_ERROR(CheckRange("GatedRmsNorm", "x", x, Packed(groups * dim)));
    ABSL_RETURN_IF_ERROR(CheckRange("GatedRmsNorm", "gate", gate, Packed(groups * dim)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("GatedRmsNorm", "weight", weight, groups > 0 ? Packed(dim) : 0));
    ABSL_RETURN_IF_ERROR(CheckRange("GatedRmsNorm", "y", y, Packed(groups * dim)));
    return cpu::GatedRmsNorm(ctx_, x, gate, groups, dim, weight, eps, y);
  }

  absl::Status DynamicConv(float* out, const float* x, const float* base, const float* dynamic,
                           const DynamicConvParams& p) override {
    if (p.rows < 0 || p.channels <= 0 || p.taps <= 0 || p.group_size <= 0 ||
        p.channels % p.group_size != 0) {
      return cpu::DynamicConv(ctx_, {}, {}, {}, {}, p);  // The op names what is wrong.
    }
    const int64_t n = p.rows * p.channels;
    const int64_t dynamic_n =
        p.rows == 0 ? 0
                    : (p.rows - 1) * p.dynamic_row_stride + p.taps * (p.channels / p.group_size);
    ABSL_RETURN_IF_ERROR(CheckRange("DynamicConv", "out", out, Packed(n)));
    ABSL_RETURN_IF_ERROR(CheckRange("DynamicConv", "x", x, Packed(n)));
    ABSL_RETURN_IF_ERROR(CheckRange("DynamicConv", "base", base, Packed(p.taps * p.channels)));
    ABSL_RETURN_IF_ERROR(CheckRange("DynamicConv", "dynamic", dynamic, Packed(dynamic_n)));
    return cpu::DynamicConv(ctx_, Span(out, n), Span(x, n), Span(base, p.taps * p.channels),
                            Span(dynamic, dynamic_n), p);
  }

  absl::Status TopK(const float* logits, float* values, int32_t* indices,
                    const TopKParams& p) override {
    const int64_t n = p.rows * p.cols, k = p.rows * p.k;
    ABSL_RETURN_IF_ERROR(CheckRange("TopK", "logits", logits, Packed(n)));
    ABSL_RETURN_IF_ERROR(CheckRange("TopK", "values", values, Packed(k)));
    ABSL_RETURN_IF_ERROR(CheckRange("TopK", "indices", indices, Packed(k, sizeof(int32_t))));
    return cpu::TopK(ctx_, Span(logits, n), Span(values, k), Span(indices, k), p);
  }

  absl::Status SpanLinear(const float* x, int64_t x_stride, int64_t rows,
                          const backend::SpanHeadHandle& head, float* packed,
                          int64_t packed_stride) override {
    ABSL_ASSIGN_OR_RETURN(const CpuSpanHeadHandle* h, Own<CpuSpanHeadHandle>("SpanLinear", head));
    if (rows < 0 || packed_stride < head.columns()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("SpanLinear: rows %d, packed_stride %d for %d packed logits", rows,
                          packed_stride, head.columns()));
    }
    ABSL_RETURN_IF_ERROR(
        CheckRange("SpanLinear", "x", x, Extent(rows, x_stride, head.in_features())));
    ABSL_RETURN_IF_ERROR(
        CheckRange("SpanLinear", "packed", packed, Extent(rows, packed_stride, head.columns())));
    return cpu::Exl3SpanLinear(ctx_, x, x_stride, rows, h->views(), packed, packed_stride);
  }

  absl::Status SpanIds(absl::Span<const exl3::ColumnSpan> spans, const int32_t* columns,
                       int64_t count, int32_t* ids) override {
    if (count < 0) return absl::InvalidArgumentError(absl::StrFormat("SpanIds: count %d", count));
    const size_t bytes = Packed(count, sizeof(int32_t));
    ABSL_RETURN_IF_ERROR(CheckRange("SpanIds", "columns", columns, bytes));
    ABSL_RETURN_IF_ERROR(CheckRange("SpanIds", "ids", ids, bytes));
    return cpu::SpanIds(ctx_, std::span<const exl3::ColumnSpan>(spans.data(), spans.size()),
                        Span(columns, count), Span(ids, count));
  }

  // inputs.uniforms are host memory (the contract's exception), so they are not range-checked.
  absl::Status SelectorWalk(const SelectorWalkInputs& in, const SelectorWalkOutputs& out,
                            const SelectorWalkParams& p) override {
    const auto bytes = [](auto span) { return span.size() * sizeof(span[0]); };
    const auto book = [](const CodebookView& c) {
      return Packed(c.rows * c.rank, c.type == CodebookType::kBF16 ? 2 : kFloat);
    };
    ABSL_RETURN_IF_ERROR(CheckRange("SelectorWalk", "candidate_ids", in.candidate_ids.data(),
                                    bytes(in.candidate_ids)));
    ABSL_RETURN_IF_ERROR(CheckRange("SelectorWalk", "unary", in.unary.data(), bytes(in.unary)));
    ABSL_RETURN_IF_ERROR(CheckRange("SelectorWalk", "hidden_projection",
                                    in.hidden_projection.data(), bytes(in.hidden_projection)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("SelectorWalk", "predecessor", in.predecessor.data, book(in.predecessor)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("SelectorWalk", "successor", in.successor.data, book(in.successor)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("SelectorWalk", "proposals", out.proposals.data(), bytes(out.proposals)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("SelectorWalk", "scores", out.scores.data(), bytes(out.scores)));
    ABSL_RETURN_IF_ERROR(CheckRange("SelectorWalk", "probabilities", out.probabilities.data(),
                                    bytes(out.probabilities)));
    return cpu::SelectorWalk(ctx_, in, out, p);
  }

  absl::Status SelectorScoreTable(const SelectorWalkInputs& in, std::span<float> table,
                                  const SelectorWalkParams& p) override {
    const auto bytes = [](auto span) { return span.size() * sizeof(span[0]); };
    const auto book = [](const CodebookView& c) {
      return Packed(c.rows * c.rank, c.type == CodebookType::kBF16 ? 2 : kFloat);
    };
    ABSL_RETURN_IF_ERROR(CheckRange("SelectorScoreTable", "candidate_ids", in.candidate_ids.data(),
                                    bytes(in.candidate_ids)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("SelectorScoreTable", "unary", in.unary.data(), bytes(in.unary)));
    ABSL_RETURN_IF_ERROR(CheckRange("SelectorScoreTable", "hidden_projection",
                                    in.hidden_projection.data(), bytes(in.hidden_projection)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("SelectorScoreTable", "predecessor", in.predecessor.data, book(in.predecessor)));
    ABSL_RETURN_IF_ERROR(
        CheckRange("SelectorScoreTable", "successor", in.successor.data, book(in.successor)));
    ABSL_RETURN_IF_ERROR(CheckRange("SelectorScoreTable", "table", table.data(), bytes(table)));
    return cpu::SelectorScoreTable(ctx_, in, table, p);
  }

 private:
  template <typename T>
  static std::span<T> Span(T* p, int64_t n) {
    return n > 0 ? std::span<T>(p, static_cast<size_t>(n)) : std::span<T>();
  }

  // InvalidArgument unless [p, p + bytes) lies inside one live buffer of this backend.
  absl::Status CheckRange(const char* op, const char* arg, const void* p, size_t bytes) const {
    if (bytes == 0 || registry_->Contains(p, bytes)) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s (%d bytes at %p) is not inside one buffer of this %s backend", op,
                        arg, bytes, p, name()));
  }

  // Checks a recurrent op's states and puts the start state where the op runs in place: state_out.
  absl::Status StartState(const char* op, const float* state_in, float* state_out,
                          size_t bytes) const {
    ABSL_RETURN_IF_ERROR(CheckRange(op, "state_in", state_in, bytes));
    ABSL_RETURN_IF_ERROR(CheckRange(op, "state_out", state_out, bytes));
    if (bytes == 0 || state_in == state_out) return absl::OkStatus();
    if (cpu::StatesPartlyOverlap(state_in, state_out,
                                 static_cast<int64_t>(bytes / sizeof(float)))) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: state_out overlaps state_in without being equal to it", op));
    }
    std::memcpy(state_out, state_in, bytes);
    return absl::OkStatus();
  }

  absl::Status CheckBufferRange(const char* op, const backend::Buffer& buffer, size_t offset,
                                size_t bytes) const {
    const auto* own = dynamic_cast<const CpuBuffer*>(&buffer);
    if (own == nullptr || own->registry() != registry_.get()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: the buffer is not from this backend", op));
    }
    if (offset > buffer.bytes() || bytes > buffer.bytes() - offset) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: bytes [%d, %d) outside a buffer of %d bytes", op, offset,
                          offset + bytes, buffer.bytes()));
    }
    return absl::OkStatus();
  }

  template <typename T, typename Handle>
  absl::StatusOr<const T*> Own(const char* op, const Handle& handle) const {
    const auto* own = dynamic_cast<const T*>(&handle);
    if (own == nullptr || own->owner() != registry_.get()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: the handle is not from this backend", op));
    }
    return own;
  }

  template <typename T, typename Handle>
  absl::StatusOr<T*> OwnMutable(const char* op, Handle& handle) const {
    ABSL_ASSIGN_OR_RETURN(const T* own, Own<T>(op, handle));
    return const_cast<T*>(own);
  }

  const Context ctx_;
  const std::shared_ptr<Registry> registry_;
};

}  // namespace

std::unique_ptr<backend::Backend> NewCpuBackend(ThreadPool* pool) {
  return std::make_unique<CpuBackend>(pool);
}

const LinearWeight* CpuLinearWeight(const backend::LinearHandle& handle) {
  const auto* own = dynamic_cast<const CpuLinearHandle*>(&handle);
  return own == nullptr ? nullptr : &own->weight();
}

}  // namespace twinspan::cpu
