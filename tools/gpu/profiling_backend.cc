#include "tools/gpu/profiling_backend.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cuda/cuda_backend.h"
#include "tools/gpu/round_timer.h"
#include "tools/gpu/synthetic.cuh"

namespace twinspan::gpu {
namespace {

absl::Status Cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrFormat("ProfilingBackend %s: %s", what, cudaGetErrorString(e)));
}

double NowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ProfilingBackend>> ProfilingBackend::Create(
    backend::Backend& inner) {
  ABSL_ASSIGN_OR_RETURN(const cudaStream_t stream, cuda::CudaBackendStream(inner));
  int device = 0, khz = 0;
  ABSL_RETURN_IF_ERROR(Cuda(cudaGetDevice(&device), "cudaGetDevice"));
  ABSL_RETURN_IF_ERROR(
      Cuda(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device), "cudaDeviceGetAttribute"));
  return std::unique_ptr<ProfilingBackend>(new ProfilingBackend(inner, stream, khz / 1000.0));
}

ProfilingBackend::~ProfilingBackend() {
  cudaStreamSynchronize(stream_);
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

void ProfilingBackend::Begin(double spin_us) {
  recording_ = true;
  spin_us_ = spin_us;
  used_pairs_ = 0;
  records_.clear();
}

absl::Status ProfilingBackend::End() {
  recording_ = false;
  ABSL_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"));
  std::map<std::string, Totals> run;
  for (const Record& r : records_) {
    Totals& t = run[r.op];
    t.calls += 1;
    t.host_us += r.host_us;
    if (r.event < 0) continue;
    float ms = 0;
    ABSL_RETURN_IF_ERROR(Cuda(
        cudaEventElapsedTime(&ms, events_[size_t{2} * r.event], events_[size_t{2} * r.event + 1]),
        "cudaEventElapsedTime"));
    t.gpu_us += ms * 1000.0;
  }
  runs_.push_back(std::move(run));
  return absl::OkStatus();
}

StepProfile ProfilingBackend::Take() {
  StepProfile p;
  p.runs = static_cast<int>(runs_.size());
  std::set<std::string> names;
  for (const auto& run : runs_) {
    for (const auto& [op, t] : run) names.insert(op);
  }
  std::vector<double> gpu_sums(runs_.size(), 0), host_sums(runs_.size(), 0);
  for (const std::string& op : names) {
    std::vector<double> calls, gpu, host;
    for (size_t i = 0; i < runs_.size(); ++i) {
      const auto it = runs_[i].find(op);
      const Totals t = it == runs_[i].end() ? Totals{} : it->second;
      calls.push_back(t.calls);
      gpu.push_back(t.gpu_us);
      host.push_back(t.host_us);
      gpu_sums[i] += t.gpu_us;
      host_sums[i] += t.host_us;
    }
    p.ops.push_back({op, Percentile(calls, 0.5), Percentile(gpu, 0.5), Percentile(host, 0.5)});
  }
  std::sort(p.ops.begin(), p.ops.end(), [](const OpProfile& a, const OpProfile& b) {
    return a.gpu_us != b.gpu_us ? a.gpu_us > b.gpu_us : a.host_us > b.host_us;
  });
  p.gpu_us = Percentile(gpu_sums, 0.5);
  p.host_us = Percentile(host_sums, 0.5);
  runs_.clear();
  return p;
}

template <typename Call>
absl::Status ProfilingBackend::Timed(const std::string& op, bool on_gpu, Call&& call) {
  if (!recording_) return call();
  Record r{op, -1, 0};
  if (on_gpu) {
    if (spin_us_ > 0) {
      ABSL_RETURN_IF_ERROR(
          Cuda(Spin(static_cast<int64_t>(spin_us_ * cycles_per_us_), stream_), "Spin"));
    }
    if (2 * used_pairs_ + 1 >= static_cast<int>(events_.size())) {
      for (int i = 0; i < 2; ++i) {
        cudaEvent_t e = nullptr;
        ABSL_RETURN_IF_ERROR(Cuda(cudaEventCreate(&e), "cudaEventCreate"));
        events_.push_back(e);
      }
    }
    r.event = used_pairs_++;
    ABSL_RETURN_IF_ERROR(
        Cuda(cudaEventRecord(events_[size_t{2} * r.event], stream_), "cudaEventRecord"));
  }
  const double t0 = NowUs();
  absl::Status status = call();
  r.host_us = NowUs() - t0;
  if (on_gpu) {
    ABSL_RETURN_IF_ERROR(
        Cuda(cudaEventRecord(events_[size_t{2} * r.event + 1], stream_), "cudaEventRecord"));
  }
  records_.push_back(std::move(r));
  return status;
}

// ---- memory and uploads: forwarded; those on the stream timed
// ------------------------------------
absl::StatusOr<std::unique_ptr<backend::Buffer>> ProfilingBackend::Allocate(size_t bytes) {
  absl::StatusOr<std::unique_ptr<backend::Buffer>> out;
  ABSL_RETURN_IF_ERROR(Timed("Allocate (host)", false, [&] {
    out = inner_.Allocate(bytes);
    return out.status();
  }));
  return out;
}
absl::Status ProfilingBackend::Upload(backend::Buffer& dst, size_t offset, const void* src,
                                      size_t bytes) {
  return Timed("Upload", true, [&] { return inner_.Upload(dst, offset, src, bytes); });
}
absl::Status ProfilingBackend::Download(void* dst, const backend::Buffer& src, size_t offset,
                                        size_t bytes) {
  return Timed("Download (waits)", true, [&] { return inner_.Download(dst, src, offset, bytes); });
}
absl::Status ProfilingBackend::Copy2D(void* dst, size_t dst_pitch, const void* src,
                                      size_t src_pitch, size_t width_bytes, int64_t rows) {
  return Timed(
      rows == 1 || (dst_pitch == width_bytes && src_pitch == width_bytes) ? "Copy" : "Copy2D", true,
      [&] { return inner_.Copy2D(dst, dst_pitch, src, src_pitch, width_bytes, rows); });
}
absl::Status ProfilingBackend::Zero(void* dst, size_t bytes) {
  return Timed("Zero", true, [&] { return inner_.Zero(dst, bytes); });
}
absl::Status ProfilingBackend::Synchronize() {
  return Timed("Synchronize (host)", false, [&] { return inner_.Synchronize(); });
}
absl::StatusOr<std::unique_ptr<backend::LinearHandle>> ProfilingBackend::UploadLinear(
    const cpu::LinearWeight& weight) {
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<backend::LinearHandle> h, inner_.UploadLinear(weight));
  linear_names_[h.get()] = absl::StrFormat("Linear %s %dx%d",
                                           weight.is_exl3() ? "exl3"
                                           : weight.is_q4() ? "q4"
                                                            : "dense",
                                           weight.out_features(), weight.in_features());
  return h;
}
absl::StatusOr<std::unique_ptr<backend::EmbeddingHandle>> ProfilingBackend::UploadEmbedding(
    const cpu::EmbeddingTable& table) {
  return inner_.UploadEmbedding(table);
}
absl::StatusOr<std::unique_ptr<backend::Buffer>> ProfilingBackend::UploadFloats(
    absl::Span<const float> values) {
  return inner_.UploadFloats(values);
}
absl::StatusOr<std::unique_ptr<backend::SpanHeadHandle>> ProfilingBackend::UploadSpanHead(
    absl::Span<const exl3::SpanView> views) {
  return inner_.UploadSpanHead(views);
}
absl::StatusOr<std::unique_ptr<backend::KvCacheHandle>> ProfilingBackend::NewKvCache(
    cpu::KvDtype dtype, int64_t capacity, int64_t kv_heads, int64_t head_dim) {
  return inner_.NewKvCache(dtype, capacity, kv_heads, head_dim);
}

// ---- ops: timed
// ----------------------------------------------------------------------------------
absl::Status ProfilingBackend::Embedding(const backend::EmbeddingHandle& table,
                                         absl::Span<const int32_t> ids, float* out) {
  return Timed("Embedding", true, [&] { return inner_.Embedding(table, ids, out); });
}
absl::Status ProfilingBackend::RmsNorm(const float* x, int64_t x_stride, int64_t rows, int64_t dim,
                                       const float* weight, float eps, float* y, int64_t y_stride) {
  return Timed("RmsNorm", true,
               [&] { return inner_.RmsNorm(x, x_stride, rows, dim, weight, eps, y, y_stride); });
}
absl::Status ProfilingBackend::AddRmsNorm(float* h, const float* delta, int64_t rows, int64_t dim,
                                          const float* weight, float eps, float* y,
                                          int64_t y_stride) {
  return Timed("AddRmsNorm", true,
               [&] { return inner_.AddRmsNorm(h, delta, rows, dim, weight, eps, y, y_stride); });
}
absl::Status ProfilingBackend::Linear(const float* x, int64_t x_stride, int64_t rows,
                                      const backend::LinearHandle& w, float* y, int64_t y_stride) {
  const auto it = linear_names_.find(&w);
  return Timed(it == linear_names_.end() ? std::string("Linear") : it->second, true,
               [&] { return inner_.Linear(x, x_stride, rows, w, y, y_stride); });
}
// Keyed by its weights' names joined with " + ": the inner backend may run them in one launch.
absl::Status ProfilingBackend::Linears(const float* x, int64_t x_stride, int64_t rows,
                                       absl::Span<const backend::LinearOutput> outs) {
  std::string name;
  for (const backend::LinearOutput& o : outs) {
    const auto it = linear_names_.find(o.w);
    absl::StrAppend(&name, name.empty() ? "" : " + ",
                    it == linear_names_.end() ? std::string("Linear") : it->second);
  }
  return Timed(name, true, [&] { return inner_.Linears(x, x_stride, rows, outs); });
}
absl::Status ProfilingBackend::Rope(float* x, int64_t x_stride, int64_t rows, int64_t heads,
                                    int64_t head_dim, int64_t rot_dim, const float* cos,
                                    const float* sin) {
  return Timed("Rope", true,
               [&] { return inner_.Rope(x, x_stride, rows, heads, head_dim, rot_dim, cos, sin); });
}
absl::Status ProfilingBackend::SwiGlu(const float* gate, const float* up, int64_t in_stride,
                                      int64_t rows, int64_t dim, float* out, int64_t out_stride) {
  return Timed("SwiGlu", true,
               [&] { return inner_.SwiGlu(gate, up, in_stride, rows, dim, out, out_stride); });
}
absl::Status ProfilingBackend::Add(const float* a, const float* b, int64_t n, float* out) {
  return Timed("Add", true, [&] { return inner_.Add(a, b, n, out); });
}
absl::Status ProfilingBackend::MulSigmoid(float* x, int64_t x_stride, const float* gate,
                                          int64_t gate_stride, int64_t rows, int64_t dim) {
  return Timed("MulSigmoid", true,
               [&] { return inner_.MulSigmoid(x, x_stride, gate, gate_stride, rows, dim); });
}
absl::Status ProfilingBackend::KvWrite(backend::KvCacheHandle& kv,
                                       absl::Span<const int64_t> positions, const float* k,
                                       int64_t k_stride, const float* v, int64_t v_stride) {
  return Timed("KvWrite", true,
               [&] { return inner_.KvWrite(kv, positions, k, k_stride, v, v_stride); });
}
absl::Status ProfilingBackend::Attention(const cpu::AttentionShape& shape, const float* q,
                                         int64_t q_stride, absl::Span<const int64_t> positions,
                                         const backend::KvCacheHandle& kv, int64_t num_keys,
                                         float* out, int64_t out_stride) {
  return Timed("Attention", true, [&] {
    return inner_.Attention(shape, q, q_stride, positions, kv, num_keys, out, out_stride);
  });
}
absl::Status ProfilingBackend::KvCopy(const backend::KvCacheHandle& src, int64_t src_first,
                                      backend::KvCacheHandle& dst, int64_t dst_first,
                                      int64_t rows) {
  return Timed("KvCopy", true, [&] { return inner_.KvCopy(src, src_first, dst, dst_first, rows); });
}
absl::Status ProfilingBackend::CausalConv1d(const float* x, int64_t rows, int64_t channels,
                                            const float* weight, int64_t kernel,
                                            const float* state_in, float* state_out, float* y) {
  return Timed("CausalConv1d", true, [&] {
    return inner_.CausalConv1d(x, rows, channels, weight, kernel, state_in, state_out, y);
  });
}
absl::Status ProfilingBackend::GatedDeltaNetGates(const float* a, const float* b, int64_t ab_stride,
                                                  int64_t rows, int64_t v_heads, const float* a_log,
                                                  const float* dt_bias, float* g, float* beta) {
  return Timed("GatedDeltaNetGates", true, [&] {
    return inner_.GatedDeltaNetGates(a, b, ab_stride, rows, v_heads, a_log, dt_bias, g, beta);
  });
}
absl::Status ProfilingBackend::GatedDeltaNet(const float* qkv, const float* g, const float* beta,
                                             int64_t rows, const cpu::GatedDeltaNetDims& dims,
                                             const float* state_in, float* state_out, float* out) {
  return Timed("GatedDeltaNet", true, [&] {
    return inner_.GatedDeltaNet(qkv, g, beta, rows, dims, state_in, state_out, out);
  });
}
absl::Status ProfilingBackend::GatherRows(const float* src, int64_t src_stride,
                                          absl::Span<const int64_t> rows, int64_t width, float* dst,
                                          int64_t dst_stride) {
  return Timed("GatherRows", true,
               [&] { return inner_.GatherRows(src, src_stride, rows, width, dst, dst_stride); });
}
absl::Status ProfilingBackend::TreeAttention(const cpu::AttentionShape& shape, const float* q,
                                             int64_t q_stride, absl::Span<const int32_t> parents,
                                             int64_t first_slot, const backend::KvCacheHandle& kv,
                                             float* out, int64_t out_stride) {
  return Timed("TreeAttention", true, [&] {
    return inner_.TreeAttention(shape, q, q_stride, parents, first_slot, kv, out, out_stride);
  });
}
absl::Status ProfilingBackend::CausalConv1dTree(const float* x, absl::Span<const int32_t> parents,
                                                int64_t channels, const float* weight,
                                                int64_t kernel, const float* state, float* y) {
  return Timed("CausalConv1dTree", true, [&] {
    return inner_.CausalConv1dTree(x, parents, channels, weight, kernel, state, y);
  });
}
absl::Status ProfilingBackend::GatedDeltaNetTree(const float* qkv, const float* g,
                                                 const float* beta,
                                                 absl::Span<const int32_t> parents,
                                                 const cpu::GatedDeltaNetDims& dims,
                                                 const float* state, float* out) {
  return Timed("GatedDeltaNetTree", true,
               [&] { return inner_.GatedDeltaNetTree(qkv, g, beta, parents, dims, state, out); });
}
absl::Status ProfilingBackend::SelectorScoreTable(const cpu::SelectorWalkInputs& inputs,
                                                  std::span<float> table,
                                                  const cpu::SelectorWalkParams& params) {
  return Timed("SelectorScoreTable", true,
               [&] { return inner_.SelectorScoreTable(inputs, table, params); });
}
absl::Status ProfilingBackend::GatedRmsNorm(const float* x, const float* gate, int64_t groups,
                                            int64_t dim, const float* weight, float eps, float* y) {
  return Timed("GatedRmsNorm", true,
               [&] { return inner_.GatedRmsNorm(x, gate, groups, dim, weight, eps, y); });
}
absl::Status ProfilingBackend::DynamicConv(float* out, const float* x, const float* base,
                                           const float* dynamic,
                                           const cpu::DynamicConvParams& params) {
  return Timed("DynamicConv", true,
               [&] { return inner_.DynamicConv(out, x, base, dynamic, params); });
}
absl::Status ProfilingBackend::TopK(const float* logits, float* values, int32_t* indices,
                                    const cpu::TopKParams& params) {
  return Timed(absl::StrFormat("TopK %dx%d k%d", params.rows, params.cols, params.k), true,
               [&] { return inner_.TopK(logits, values, indices, params); });
}
absl::Status ProfilingBackend::SpanLinear(const float* x, int64_t x_stride, int64_t rows,
                                          const backend::SpanHeadHandle& head, float* packed,
                                          int64_t packed_stride) {
  return Timed("SpanLinear (exl3 head)", true,
               [&] { return inner_.SpanLinear(x, x_stride, rows, head, packed, packed_stride); });
}
absl::Status ProfilingBackend::SpanIds(absl::Span<const exl3::ColumnSpan> spans,
                                       const int32_t* columns, int64_t count, int32_t* ids) {
  return Timed("SpanIds", true, [&] { return inner_.SpanIds(spans, columns, count, ids); });
}
absl::Status ProfilingBackend::SelectorWalk(const cpu::SelectorWalkInputs& inputs,
                                            const cpu::SelectorWalkOutputs& outputs,
                                            const cpu::SelectorWalkParams& params) {
  return Timed("SelectorWalk", true, [&] { return inner_.SelectorWalk(inputs, outputs, params); });
}

}  // namespace twinspan::gpu
