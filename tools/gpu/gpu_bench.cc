// twinspan_gpu_bench: the CUDA backend against the H200's limit, in one run. Measures copy
// bandwidth, the EXL3 linear at the Qwen3.8-27B shapes (K = 2..6, rows 1/8/16/64), the 401 linears
// of one forward as one CUDA graph, the head full / two-span / 384-tail (each span set one
// Exl3SpanLinear launch), the decode's own ceiling (decode_bound.cuh) and the drafter's Q4 linears,
// on synthetic random trellis made on the GPU (any bits are a valid trellis in any layout). Each
// number is a median of CUDA-event times of calls queued back to back behind a spin kernel, with
// weight copies rotating over >= 256 MB so every call reads HBM (anchor-perf.md's method);
// exllamav3's numbers from anchor-perf.md are printed beside ours.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "common/exl3/plan.h"
#include "common/status.h"
#include "kernels/cuda/exl3_layout.h"
#include "kernels/cuda/exl3_linear.cuh"
#include "kernels/cuda/exl3_span_linear.cuh"
#include "kernels/cuda/q4_linear.cuh"
#include "nlohmann/json.hpp"
#include "tools/gpu/anchor_exllamav3.h"
#include "tools/gpu/decode_bound.cuh"
#include "tools/gpu/synthetic.cuh"

namespace twinspan::gpu {
namespace {

#define BENCH_CUDA(expr)                                                     \
  do {                                                                       \
    const cudaError_t bench_err_ = (expr);                                   \
    if (bench_err_ != cudaSuccess)                                           \
      return absl::InternalError(                                            \
          absl::StrFormat("%s: %s", #expr, cudaGetErrorString(bench_err_))); \
  } while (false)

struct Stats {
  double median_us = 0, p10_us = 0, p90_us = 0;
};

Stats Summarize(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[static_cast<size_t>(std::llround(q * (us.size() - 1)))]; };
  return {at(0.5), at(0.1), at(0.9)};
}

struct Linear27B {
  const char* name;
  int64_t k, n;
  int per_forward;
};

// The 27B's EXL3 linears (EXL3 orientation k = in, n = out) and how many one forward runs.
constexpr Linear27B kLinears[] = {
    {"attn q_proj", 5120, 12288, 16},
    {"attn k_proj / v_proj", 5120, 1024, 32},
    {"attn o_proj / GDN out_proj", 6144, 5120, 64},
    {"MLP gate_proj / up_proj", 5120, 17408, 128},
    {"MLP down_proj", 17408, 5120, 64},
    {"GDN in_proj_qkv", 5120, 10240, 48},
    {"GDN in_proj_z", 5120, 6144, 48},
    {"lm_head", 5120, 248320, 1},
};

int64_t TrellisBytes(int64_t k, int64_t n, int bits) { return k * n * bits / 8; }

struct DrafterQ4 {
  const char* name;
  int64_t n, k;  // Out, in.
  int per_block;
  bool joins_previous;  // Shares the previous entry's input, so its launch (Q4Linears).
};

// The linears of one DFlash2 drafter layer of the 27B (5 layers) and how many a block runs.
constexpr DrafterQ4 kDrafterQ4[] = {
    {"q_proj", 4096, 5120, 1, false},     {"k_proj / v_proj", 1024, 5120, 2, true},
    {"o_proj", 5120, 4096, 1, false},     {"gate_proj / up_proj", 17408, 5120, 2, false},
    {"down_proj", 5120, 17408, 1, false},
};
constexpr int kDrafterLayers = 5;

// Codes (half a byte a weight) plus one fp16 (scale, offset) pair per 128 weights.
int64_t Q4Bytes(int64_t n, int64_t k) { return n * k / 2 + n * k / 128 * 4; }

using KN = std::pair<int64_t, int64_t>;

// The EXL3 weights of one 27B forward, grouped by input (q, k, v; in_proj_qkv and z; gate and
// up), in forward order; the head last.
std::vector<std::vector<KN>> ForwardGroups() {
  std::vector<std::vector<KN>> groups;
  for (int layer = 0; layer < 64; ++layer) {
    if (layer % 4 == 3) {  // Gated attention every fourth layer.
      groups.push_back({{5120, 12288}, {5120, 1024}, {5120, 1024}});
      groups.push_back({{6144, 5120}});
    } else {
      groups.push_back({{5120, 10240}, {5120, 6144}});
      groups.push_back({{6144, 5120}});
    }
    groups.push_back({{5120, 17408}, {5120, 17408}});
    groups.push_back({{17408, 5120}});
  }
  groups.push_back({{5120, 248320}});
  return groups;
}

class Bench {
 public:
  absl::Status Init(int reps) {
    reps_ = reps;
    BENCH_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    int khz = 0;
    BENCH_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    spin_cycles_ = static_cast<int64_t>(khz) * 4;  // ~4 ms at the reported clock.
    cudaDeviceProp prop{};
    BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
    device_ = prop.name;
    sms_ = prop.multiProcessorCount;
    // Inputs: 64 rows of the widest k; outputs: 64 rows of the head; one workspace for all.
    BENCH_CUDA(cudaMalloc(&x_, sizeof(float) * 64 * 17408));
    BENCH_CUDA(cudaMalloc(&y_, sizeof(float) * 64 * 248320));
    BENCH_CUDA(cudaMalloc(&packed_, sizeof(float) * 64 * 248320));
    BENCH_CUDA(FillRandomNormal(x_, int64_t{64} * 17408, 1, stream_));
    workspace_bytes_ = size_t{640} << 20;  // Units partials of the head at 64 rows: 509 MB.
    BENCH_CUDA(cudaMalloc(&workspace_, workspace_bytes_));
    BENCH_CUDA(cudaMemsetAsync(workspace_, 0, workspace_bytes_, stream_));
    BENCH_CUDA(cudaMalloc(&scales_, sizeof(uint16_t) * 2 * 248320));
    BENCH_CUDA(FillRandomScales(scales_, int64_t{2} * 248320, 2, stream_));
    return absl::OkStatus();
  }

  // Times `call(i)` reps times after `warmup` calls, back to back behind a spin kernel.
  absl::StatusOr<Stats> Time(const std::function<absl::Status(int)>& call, int warmup, int reps) {
    for (int i = 0; i < warmup; ++i) ABSL_RETURN_IF_ERROR(call(i));
    std::vector<cudaEvent_t> ev(size_t{2} * reps);
    for (auto& e : ev) BENCH_CUDA(cudaEventCreate(&e));
    BENCH_CUDA(Spin(spin_cycles_, stream_));
    for (int i = 0; i < reps; ++i) {
      BENCH_CUDA(cudaEventRecord(ev[size_t{2} * i], stream_));
      ABSL_RETURN_IF_ERROR(call(warmup + i));
      BENCH_CUDA(cudaEventRecord(ev[size_t{2} * i + 1], stream_));
    }
    BENCH_CUDA(cudaStreamSynchronize(stream_));
    std::vector<double> us(reps);
    for (int i = 0; i < reps; ++i) {
      float ms = 0;
      BENCH_CUDA(cudaEventElapsedTime(&ms, ev[size_t{2} * i], ev[size_t{2} * i + 1]));
      us[i] = ms * 1000.0;
    }
    for (auto& e : ev) BENCH_CUDA(cudaEventDestroy(e));
    return Summarize(us);
  }

  // Times one CUDA graph of what `issue` queues on the stream (2 warm-up launches, 20 timed).
  absl::StatusOr<Stats> TimeGraph(const std::function<absl::Status()>& issue) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    BENCH_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
    const absl::Status issued = issue();
    BENCH_CUDA(cudaStreamEndCapture(stream_, &graph));
    if (!issued.ok()) {
      BENCH_CUDA(cudaGraphDestroy(graph));
      return issued;
    }
    BENCH_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    absl::StatusOr<Stats> s = Time(
        [&](int) -> absl::Status {
          BENCH_CUDA(cudaGraphLaunch(exec, stream_));
          return absl::OkStatus();
        },
        2, 20);
    BENCH_CUDA(cudaGraphExecDestroy(exec));
    BENCH_CUDA(cudaGraphDestroy(graph));
    return s;
  }

  absl::Status Copy() {
    const size_t bytes = size_t{4} << 30;
    void *a = nullptr, *b = nullptr;
    BENCH_CUDA(cudaMalloc(&a, bytes));
    BENCH_CUDA(cudaMalloc(&b, bytes));
    BENCH_CUDA(FillRandomNormal(static_cast<float*>(a), bytes / 4, 3, stream_));
    ABSL_ASSIGN_OR_RETURN(
        Stats s, Time(
                     [&](int) -> absl::Status {
                       BENCH_CUDA(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream_));
                       return absl::OkStatus();
                     },
                     3, 25));
    copy_gbs_ = 2.0 * bytes / (s.median_us * 1e3);
    std::printf(
        "copy 4 GiB d2d: %.1f us median (p10 %.1f, p90 %.1f) = %.0f GB/s read+write "
        "(anchor %.0f)\n\n",
        s.median_us, s.p10_us, s.p90_us, copy_gbs_, kAnchorCopyGBs);
    json_["copy"] = {{"bytes", bytes}, {"median_us", s.median_us}, {"gbs", copy_gbs_}};
    BENCH_CUDA(cudaFree(a));
    BENCH_CUDA(cudaFree(b));
    return absl::OkStatus();
  }

  // Tuning knobs of cuda::Context (they change timings, never bits).
  void set_tuning(int schedule, int blocks_per_sm, int l2_ahead, int warps, int tiles) {
    schedule_ = schedule;
    blocks_per_sm_ = blocks_per_sm;
    l2_ahead_ = l2_ahead;
    warps_ = warps;
    tiles_ = tiles;
  }

  cuda::Exl3DeviceWeight MakeWeight(const uint32_t* trellis, int64_t k, int64_t n, int bits) {
    cuda::Exl3DeviceWeight w;
    w.trellis = trellis;
    w.suh = reinterpret_cast<const __half*>(scales_);
    w.svh = reinterpret_cast<const __half*>(scales_ + 248320);
    w.k = k;
    w.n = n;
    w.bits = bits;
    w.codebook = cuda::Exl3Codebook::kMul1;
    const exl3::Plan p = exl3::plan(k, n);
    w.k_splits = p.k_splits;
    w.warps = p.warps;
    return w;
  }

  cuda::Context context() const {
    cuda::Context ctx{stream_, workspace_, workspace_bytes_};
    ctx.exl3_schedule = schedule_;
    ctx.exl3_blocks_per_sm = blocks_per_sm_;
    ctx.exl3_l2_ahead = l2_ahead_;
    ctx.exl3_warps = warps_;
    ctx.exl3_item_tiles = tiles_;
    return ctx;
  }

  absl::Status Run(const cuda::Exl3DeviceWeight& w, int rows, float* y) {
    return cuda::Exl3Linear(context(), x_, w.k, rows, w, y, w.n);
  }

  // Copies of one weight rotating over >= 256 MB (at least 2), carved from one random pool.
  absl::StatusOr<std::vector<cuda::Exl3DeviceWeight>> Copies(int64_t k, int64_t n, int bits) {
    const int64_t bytes = TrellisBytes(k, n, bits);
    const int64_t copies = std::max<int64_t>(2, (int64_t{256} << 20) / bytes + 1);
    if (pool_bytes_ < copies * bytes) {
      if (pool_) BENCH_CUDA(cudaFree(pool_));
      pool_bytes_ = copies * bytes;
      BENCH_CUDA(cudaMalloc(&pool_, pool_bytes_));
      BENCH_CUDA(FillRandomWords(static_cast<uint16_t*>(pool_), pool_bytes_ / 2, 4, stream_));
    }
    std::vector<cuda::Exl3DeviceWeight> out;
    for (int64_t c = 0; c < copies; ++c)
      out.push_back(MakeWeight(static_cast<const uint32_t*>(pool_) + c * bytes / 4, k, n, bits));
    return out;
  }

  absl::Status Linears(const std::vector<int>& bits_list) {
    std::printf(
        "EXL3 linear, mul1, plan() from common/exl3. Cell: our us / exllamav3 us, GB/s, %% of "
        "copy bandwidth\n");
    std::printf("%-28s %-13s %2s %7s %-7s |", "linear", "k x n", "K", "MiB", "plan");
    for (int m : kAnchorRows) std::printf(" %-31s|", absl::StrFormat("m = %d", m).c_str());
    std::printf("\n");
    for (const Linear27B& l : kLinears)
      for (int bits : bits_list) {
        ABSL_ASSIGN_OR_RETURN(auto copies, Copies(l.k, l.n, bits));
        const int64_t bytes = TrellisBytes(l.k, l.n, bits);
        const exl3::Plan p = exl3::plan(l.k, l.n);
        std::printf("%-28s %-13s %2d %7.1f (%2d,%d)  |", l.name,
                    absl::StrFormat("%dx%d", l.k, l.n).c_str(), bits, bytes / 1048576.0, p.k_splits,
                    p.warps);
        const AnchorTime* anchor = nullptr;
        for (const AnchorTime& a : kAnchorTimes)
          if (a.k == l.k && a.n == l.n && a.bits == bits) anchor = &a;
        for (int mi = 0; mi < 4; ++mi) {
          const int m = kAnchorRows[mi];
          ABSL_ASSIGN_OR_RETURN(
              Stats s,
              Time([&](int i) { return Run(copies[i % copies.size()], m, y_); }, 3, reps_));
          const double gbs = bytes / (s.median_us * 1e3);
          const double ref = anchor ? anchor->us[mi] : 0;
          std::printf(" %7.1f/%6.1f %5.0f %3.0f%%  |", s.median_us, ref, gbs,
                      100 * gbs / copy_gbs_);
          std::fflush(stdout);
          json_["linears"].push_back({{"name", l.name},
                                      {"k", l.k},
                                      {"n", l.n},
                                      {"bits", bits},
                                      {"rows", m},
                                      {"median_us", s.median_us},
                                      {"p10_us", s.p10_us},
                                      {"p90_us", s.p90_us},
                                      {"gbs", gbs},
                                      {"exllamav3_us", ref},
                                      {"k_splits", p.k_splits},
                                      {"warps", p.warps}});
        }
        std::printf("\n");
      }
    std::printf("\n");
    return absl::OkStatus();
  }

  // All 401 linears of one forward, distinct weights, captured as one CUDA graph per row count:
  // one launch per weight, then the weights of one input (q, k, v; in_proj_qkv and z; gate and
  // up) in one launch each (Exl3Linears), side by side.
  absl::Status Forward(int body_bits, int head_bits) {
    const std::vector<std::vector<KN>> groups = ForwardGroups();
    int64_t total = 0;
    std::vector<int64_t> offsets;
    for (size_t g = 0; g < groups.size(); ++g)
      for (const KN& kn : groups[g]) {
        offsets.push_back(total);
        total += TrellisBytes(kn.first, kn.second, g + 1 == groups.size() ? head_bits : body_bits);
      }
    ABSL_RETURN_IF_ERROR(MakeForwardWeights(total));
    void* weights = forward_weights_;
    std::vector<std::vector<cuda::Exl3DeviceWeight>> ws;
    size_t count = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      ws.emplace_back();
      for (const KN& kn : groups[g]) {
        ws.back().push_back(MakeWeight(
            reinterpret_cast<const uint32_t*>(static_cast<char*>(weights) + offsets[count++]),
            kn.first, kn.second, g + 1 == groups.size() ? head_bits : body_bits));
      }
    }
    std::printf(
        "Forward: %zu EXL3 linears (%zu launches with the weights of one input together), K = %d "
        "body + %d-bit head, %.2f GB of trellis, one CUDA graph; floor at copy bandwidth %.3f ms\n",
        count, groups.size(), body_bits, head_bits, total / 1e9, total / (copy_gbs_ * 1e6));
    // Weights of one input in one launch, or (separate) one launch each.
    auto run_group = [&](const std::vector<cuda::Exl3DeviceWeight>& g, int m, bool separate) {
      cuda::Context ctx = context();
      ctx.exl3_separate = separate ? 1 : 0;
      std::vector<cuda::Exl3LinearOutput> outs(g.size());
      for (size_t i = 0; i < g.size(); ++i) outs[i] = {&g[i], y_, g[i].n};  // Timing only.
      return cuda::Exl3Linears(ctx, x_, g[0].k, m, outs.data(), static_cast<int>(outs.size()));
    };
    double one_row[2] = {0, 0};
    for (int m : {1, 8, 16, 64}) {
      double median[2] = {0, 0};
      for (const bool together : {false, true}) {
        absl::Status warm;  // Also sets the kernels' attributes before the capture.
        for (const auto& g : ws)
          if (warm.ok()) warm = run_group(g, m, !together);
        if (!warm.ok()) {  // A forced tuning that cannot run some linear at this row count.
          std::printf("  rows %2d: n/a (%s)\n", m, std::string(warm.message()).c_str());
          continue;
        }
        ABSL_ASSIGN_OR_RETURN(const Stats s, TimeGraph([&]() -> absl::Status {
                                for (const auto& g : ws)
                                  ABSL_RETURN_IF_ERROR(run_group(g, m, !together));
                                return absl::OkStatus();
                              }));
        if (m == 1) one_row[together] = s.median_us;
        median[together] = s.median_us;
        const double gbs = total / (s.median_us * 1e3);
        const double anchor = m == 1    ? kAnchorStackMs1Row
                              : m == 8  ? kAnchorStackMs8Rows
                              : m == 16 ? kAnchorStackMs16Rows
                                        : kAnchorSumMs64Rows;
        std::printf(
            "  rows %2d, %s: %.3f ms median (p10 %.3f, p90 %.3f), %.0f GB/s = %.1f%% of copy, "
            "%.2fx the 1-row time; exllamav3 stack %.2f ms\n",
            m, together ? "together" : "separate", s.median_us / 1e3, s.p10_us / 1e3,
            s.p90_us / 1e3, gbs, 100 * gbs / copy_gbs_, s.median_us / one_row[together], anchor);
        json_["forward"].push_back({{"rows", m},
                                    {"together", together},
                                    {"launches", together ? groups.size() : count},
                                    {"body_bits", body_bits},
                                    {"head_bits", head_bits},
                                    {"bytes", total},
                                    {"median_us", s.median_us},
                                    {"gbs", gbs},
                                    {"exllamav3_ms", anchor},
                                    {"tuning", Tuning()}});
      }
      if (median[0] > 0 && median[1] > 0)
        std::printf("  rows %2d: together / separate = %.3f\n", m, median[1] / median[0]);
    }
    std::printf("\n");
    BENCH_CUDA(cudaStreamSynchronize(stream_));
    return absl::OkStatus();
  }

  // Random trellis for one forward's weights, made once and reused by every tuning and section.
  absl::Status MakeForwardWeights(int64_t bytes) {
    if (forward_weights_) return absl::OkStatus();
    BENCH_CUDA(cudaMalloc(&forward_weights_, bytes));
    BENCH_CUDA(FillRandomWords(static_cast<uint16_t*>(forward_weights_), bytes / 2, 5, stream_));
    return absl::OkStatus();
  }

  // The decode's ceiling (decode_bound.cuh): the forward's body (K = body_bits) and head bytes
  // streamed by one persistent launch each, with the loads alone, then decode + one mma a tile
  // (up to 8 rows), then decode + two (9..16 rows), for each block shape; against copy bandwidth.
  absl::Status Decode(int body_bits, int head_bits) {
    const std::vector<std::vector<KN>> groups = ForwardGroups();
    int64_t body = 0;
    for (size_t g = 0; g + 1 < groups.size(); ++g)
      for (const KN& kn : groups[g]) body += TrellisBytes(kn.first, kn.second, body_bits);
    const KN head_kn = groups.back().front();
    const int64_t head = TrellisBytes(head_kn.first, head_kn.second, head_bits);
    ABSL_RETURN_IF_ERROR(MakeForwardWeights(body + head));
    if (!sink_) BENCH_CUDA(cudaMalloc(&sink_, sizeof(float) * sms_ * 32));
    const auto* words = static_cast<const uint32_t*>(forward_weights_);
    std::printf(
        "Decode ceiling: the forward's body (%.2f GB, K = %d) and head (%.2f GB, K = %d), one "
        "persistent launch each, %d blocks; floor at copy bandwidth %.3f ms\n",
        body / 1e9, body_bits, head / 1e9, head_bits, sms_, (body + head) / (copy_gbs_ * 1e6));
    struct Work {
      DecodeWork work;
      const char* name;
    };
    const Work works[] = {{DecodeWork::kLoad, "loads only"},
                          {DecodeWork::kDecodeMma1, "decode + 1 mma (8 rows)"},
                          {DecodeWork::kDecodeMma2, "decode + 2 mma (16 rows)"}};
    double best[3] = {0, 0, 0};
    for (int wi = 0; wi < 3; ++wi)
      for (const DecodeShape& shape : kDecodeShapes) {
        auto run = [&](const uint32_t* w, int64_t bytes, int bits) {
          return Time(
              [&](int) -> absl::Status {
                BENCH_CUDA(DecodeStream(w, bytes / (int64_t{128} * bits), bits, works[wi].work,
                                        shape, sms_, sink_, stream_));
                return absl::OkStatus();
              },
              2, reps_);
        };
        ABSL_ASSIGN_OR_RETURN(const Stats b, run(words, body, body_bits));
        ABSL_ASSIGN_OR_RETURN(const Stats h, run(words + body / 4, head, head_bits));
        const double us = b.median_us + h.median_us, gbs = (body + head) / (us * 1e3);
        if (best[wi] == 0 || us < best[wi]) best[wi] = us;
        if (wi == 1 && (decode_body_us_ == 0 || b.median_us < decode_body_us_))
          decode_body_us_ = b.median_us;
        std::printf(
            "  %-26s %2d warps x %d ahead: body %.3f ms + head %.3f ms = %.3f ms, %.0f GB/s = "
            "%.1f%% of copy\n",
            works[wi].name, shape.warps, shape.depth, b.median_us / 1e3, h.median_us / 1e3,
            us / 1e3, gbs, 100 * gbs / copy_gbs_);
        json_["decode"].push_back({{"work", works[wi].name},
                                   {"warps", shape.warps},
                                   {"depth", shape.depth},
                                   {"body_us", b.median_us},
                                   {"head_us", h.median_us},
                                   {"gbs", gbs}});
      }
    std::printf(
        "  best: loads %.3f ms (%.1f%% of copy), 1 mma %.3f ms (%.1f%%), 2 mma %.3f ms (%.1f%%, "
        "%.3fx the 1-mma time)\n\n",
        best[0] / 1e3, 100 * (body + head) / (best[0] * 1e3) / copy_gbs_, best[1] / 1e3,
        100 * (body + head) / (best[1] * 1e3) / copy_gbs_, best[2] / 1e3,
        100 * (body + head) / (best[2] * 1e3) / copy_gbs_, best[2] / best[1]);
    return absl::OkStatus();
  }

  // The prompt path: the forward's 400 body linears (the head runs on a prompt's last row only)
  // at many rows, as the prompt path runs them and as 64-row launches, against the limit of the
  // issue: the body's FLOPs over `matmul_tflops` (a bf16 matmul rate measured in the same call)
  // plus one decode of the body (the decode section's 1-mma ceiling, when it ran first).
  absl::Status Prompt(int body_bits, double matmul_tflops) {
    std::vector<std::vector<KN>> groups = ForwardGroups();
    groups.pop_back();  // The head.
    int64_t total = 0, flop_per_row = 0, count = 0;
    std::vector<std::vector<cuda::Exl3DeviceWeight>> ws;
    for (const auto& g : groups)
      for (const KN& kn : g) total += TrellisBytes(kn.first, kn.second, body_bits);
    ABSL_RETURN_IF_ERROR(MakeForwardWeights(total));
    int64_t at = 0;
    for (const auto& g : groups) {
      ws.emplace_back();
      for (const KN& kn : g) {
        ws.back().push_back(
            MakeWeight(reinterpret_cast<const uint32_t*>(static_cast<char*>(forward_weights_) + at),
                       kn.first, kn.second, body_bits));
        at += TrellisBytes(kn.first, kn.second, body_bits);
        flop_per_row += 2 * kn.first * kn.second;
        ++count;
      }
    }
    constexpr int64_t kMaxRows = 4096;
    float *x = nullptr, *y = nullptr;
    void* workspace = nullptr;
    size_t ws_bytes = 0;
    for (const auto& g : ws) {
      std::vector<cuda::Exl3LinearOutput> outs(g.size());
      for (size_t i = 0; i < g.size(); ++i) outs[i] = {&g[i], y_, g[i].n};
      ws_bytes = std::max(ws_bytes, cuda::Exl3LinearsWorkspaceBytes(
                                        outs.data(), static_cast<int>(outs.size()), kMaxRows));
    }
    BENCH_CUDA(cudaMalloc(&x, sizeof(float) * kMaxRows * 17408));
    BENCH_CUDA(cudaMalloc(&y, sizeof(float) * kMaxRows * 17408));
    BENCH_CUDA(cudaMalloc(&workspace, ws_bytes));
    BENCH_CUDA(cudaMemsetAsync(workspace, 0, ws_bytes, stream_));
    BENCH_CUDA(FillRandomNormal(x, kMaxRows * 17408, 7, stream_));
    std::printf(
        "Prompt: the forward's %lld body linears (%zu calls), K = %d, %.2f GB of trellis, %.1f "
        "GFLOP a row; limit = FLOPs / %.0f TFLOP/s + one decode of the body (%.3f ms)\n",
        static_cast<long long>(count), ws.size(), body_bits, total / 1e9, flop_per_row / 1e9,
        matmul_tflops, decode_body_us_ / 1e3);
    // tile 0: 64-row launches; 64 or 256: the prompt path with blocks of that many rows.
    auto forward = [&](int64_t m, int tile) -> absl::Status {
      cuda::Context ctx = context();
      ctx.workspace = workspace;
      ctx.workspace_bytes = ws_bytes;
      ctx.exl3_prompt_rows = tile > 0 ? 1 : -1;  // Every row count on the path asked for.
      ctx.exl3_prompt_tile = tile;
      for (const auto& g : ws) {
        std::vector<cuda::Exl3LinearOutput> outs(g.size());
        for (size_t i = 0; i < g.size(); ++i) outs[i] = {&g[i], y, g[i].n};  // Timing only.
        ABSL_RETURN_IF_ERROR(
            cuda::Exl3Linears(ctx, x, g[0].k, m, outs.data(), static_cast<int>(outs.size())));
      }
      return absl::OkStatus();
    };
    struct Case {
      int64_t rows;
      int tile;
    };
    const Case cases[] = {{64, 0},    {128, 0},   {256, 0},    {512, 0},    {65, 64},   {128, 64},
                          {256, 64},  {512, 64},  {1024, 64},  {2048, 64},  {4096, 64}, {128, 256},
                          {256, 256}, {512, 256}, {1024, 256}, {2048, 256}, {4096, 256}};
    for (const Case& c : cases) {
      ABSL_ASSIGN_OR_RETURN(const Stats s,
                            Time([&](int) { return forward(c.rows, c.tile); }, 1, 3));
      const double flops = static_cast<double>(flop_per_row) * c.rows;
      const double limit_us = flops / (matmul_tflops * 1e6) + decode_body_us_;
      const char* path =
          c.tile == 0 ? "64-row launches" : (c.tile == 64 ? "prompt, 64-row" : "prompt, 256-row");
      std::printf(
          "  rows %4lld, %-16s: %9.3f ms median (p10 %.3f, p90 %.3f), %8.0f rows/s, %6.1f "
          "TFLOP/s; limit %.3f ms, %.2fx it\n",
          static_cast<long long>(c.rows), path, s.median_us / 1e3, s.p10_us / 1e3, s.p90_us / 1e3,
          c.rows / (s.median_us * 1e-6), flops / (s.median_us * 1e6), limit_us / 1e3,
          s.median_us / limit_us);
      std::fflush(stdout);
      json_["prompt"].push_back({{"rows", c.rows},
                                 {"prompt_path", c.tile > 0},
                                 {"tile_rows", c.tile},
                                 {"median_us", s.median_us},
                                 {"p10_us", s.p10_us},
                                 {"p90_us", s.p90_us},
                                 {"tflops", flops / (s.median_us * 1e6)},
                                 {"limit_us", limit_us},
                                 {"matmul_tflops", matmul_tflops}});
    }
    std::printf("\n");
    BENCH_CUDA(cudaStreamSynchronize(stream_));
    BENCH_CUDA(cudaFree(x));
    BENCH_CUDA(cudaFree(y));
    BENCH_CUDA(cudaFree(workspace));
    return absl::OkStatus();
  }

  // What a launch costs with almost no weights: 401 launches of a 256 x 128 linear (16 KB) in one
  // graph, so the forward's fixed cost per linear (ramp, rotation, fold, epilogue, launch) shows.
  absl::Status Floor() {
    ABSL_ASSIGN_OR_RETURN(auto copies, Copies(256, 128, 4));
    std::printf("Launch floor: 401 launches of a 256 x 128 K = 4 linear, one CUDA graph\n");
    for (int m : {1, 16, 64}) {
      for (int i = 0; i < 401; ++i) ABSL_RETURN_IF_ERROR(Run(copies[i % copies.size()], m, y_));
      ABSL_ASSIGN_OR_RETURN(const Stats s, TimeGraph([&]() -> absl::Status {
                              for (int i = 0; i < 401; ++i)
                                ABSL_RETURN_IF_ERROR(Run(copies[i % copies.size()], m, y_));
                              return absl::OkStatus();
                            }));
      std::printf("  rows %2d: %.3f ms median, %.2f us a launch\n", m, s.median_us / 1e3,
                  s.median_us / 401);
      json_["floor"].push_back({{"rows", m}, {"median_us", s.median_us}, {"tuning", Tuning()}});
    }
    std::printf("\n");
    return absl::OkStatus();
  }

  // The head at K = 6: full, two-span (A = [0, 98304) + the last 64 blocks, of which the last 288
  // columns are kept), A + the 384-column tail; views keep the full head's plan and each span set
  // is one Exl3SpanLinear launch writing the packed logits. Bytes: the trellis of the blocks that
  // hold kept columns, the only ones the launch reads.
  absl::Status Head(int bits) {
    constexpr int64_t k = 5120, n = 248320, tail_begin = 248032, a_end = 98304;
    ABSL_ASSIGN_OR_RETURN(auto copies, Copies(k, n, bits));
    auto span = [&](const cuda::Exl3DeviceWeight& full, int64_t first_block, int64_t blocks) {
      cuda::Exl3DeviceSpan s;
      s.view = full;
      s.view.trellis += first_block * cuda::Exl3BlockWords(k, bits);
      s.view.svh += first_block * 128;
      s.view.n = blocks * 128;
      s.drop_front = first_block == 0 ? 0 : tail_begin - first_block * 128;
      s.size = first_block == 0 ? a_end : n - tail_begin;
      return s;
    };
    struct Mode {
      const char* name;
      std::vector<std::pair<int64_t, int64_t>> views;  // (first block, blocks)
      const double* anchor;
    };
    const Mode modes[] = {
        {"full", {{0, 1940}}, kAnchorHeadFull},
        {"two-span (A + 64-block tail)", {{0, 768}, {1876, 64}}, kAnchorHeadTwoSpan},
        {"A + 384-column tail", {{0, 768}, {1937, 3}}, kAnchorHeadTail384},
    };
    std::printf("Head K = %d (5120 x 248320), each span set one launch into packed logits\n", bits);
    double full_us[2] = {0, 0};
    for (int ri = 0; ri < 2; ++ri) {
      const int m = ri == 0 ? 1 : 16;
      for (const Mode& mode : modes) {
        int64_t bytes = 0;
        for (auto [f, b] : mode.views) {
          if (mode.views.size() == 1) {
            bytes += TrellisBytes(k, b * 128, bits);
            continue;
          }
          const cuda::Exl3KeptBlocks kept = cuda::KeptBlocks(span(copies[0], f, b));
          bytes += TrellisBytes(k, (kept.end - kept.first) * 128, bits);
        }
        auto timed = Time(
            [&](int i) -> absl::Status {
              const auto& full = copies[i % copies.size()];
              if (mode.views.size() == 1) return Run(full, m, y_);
              std::vector<cuda::Exl3DeviceSpan> spans;
              for (auto [f, b] : mode.views) spans.push_back(span(full, f, b));
              return cuda::Exl3SpanLinear(context(), x_, k, m, spans.data(),
                                          static_cast<int>(spans.size()), packed_,
                                          a_end + n - tail_begin);
            },
            3, reps_);
        if (!timed.ok()) {  // A forced tuning that cannot run this mode.
          BENCH_CUDA(cudaStreamSynchronize(stream_));
          std::printf("  rows %2d %-30s n/a (%s)\n", m, mode.name,
                      std::string(timed.status().message()).c_str());
          continue;
        }
        const Stats s = *timed;
        if (mode.views.size() == 1) full_us[ri] = s.median_us;
        const double gbs = bytes / (s.median_us * 1e3);
        std::printf(
            "  rows %2d %-30s %8.1f us (exllamav3 %6.1f), %6.1f MB, %5.0f GB/s = %3.0f%% "
            "of copy, %.2f of full\n",
            m, mode.name, s.median_us, mode.anchor[ri], bytes / 1e6, gbs, 100 * gbs / copy_gbs_,
            s.median_us / full_us[ri]);
        json_["head"].push_back({{"rows", m},
                                 {"mode", mode.name},
                                 {"median_us", s.median_us},
                                 {"bytes", bytes},
                                 {"exllamav3_us", mode.anchor[ri]},
                                 {"of_full", s.median_us / full_us[ri]},
                                 {"tuning", Tuning()}});
      }
    }
    std::printf("\n");
    return absl::OkStatus();
  }

  // The drafter's Q4 linears: each shape at 1 / 8 / 16 rows (copies rotating over >= 256 MB), then
  // the 35 of one drafted block (5 layers, distinct weights) in one CUDA graph, against copy
  // bandwidth.
  absl::Status Q4Linears() {
    constexpr int64_t kPoolBytes = int64_t{1} << 30;
    if (!q4_codes_) {
      BENCH_CUDA(cudaMalloc(&q4_codes_, kPoolBytes));
      BENCH_CUDA(cudaMalloc(&q4_scales_, kPoolBytes / 16));
      BENCH_CUDA(FillRandomWords(static_cast<uint16_t*>(q4_codes_), kPoolBytes / 2, 6, stream_));
      BENCH_CUDA(FillRandomScales(static_cast<uint16_t*>(q4_scales_), kPoolBytes / 32, 7, stream_));
    }
    // The weight whose codes start `offset` bytes into the pool (its scales at offset / 16).
    auto weight = [&](int64_t n, int64_t k, int64_t offset) {
      cuda::Q4DeviceWeight w;
      w.codes = static_cast<const uint8_t*>(q4_codes_) + offset;
      w.scale_offset =
          reinterpret_cast<const __half2*>(static_cast<char*>(q4_scales_) + offset / 16);
      w.n = n;
      w.k = k;
      return w;
    };
    auto run = [&](const cuda::Q4DeviceWeight& w, int m, int columns = 0) {
      cuda::Context ctx{stream_, nullptr, 0};
      ctx.q4_columns = columns;
      return cuda::Q4Linear(ctx, x_, w.k, m, w, y_, w.n);
    };
    std::printf("Q4 linears of the 27B's DFlash2 drafter. Cell: us, GB/s, %% of copy bandwidth\n");
    for (const DrafterQ4& l : kDrafterQ4) {
      const int64_t codes = l.n * l.k / 2;
      const int64_t copies = std::max<int64_t>(2, (int64_t{256} << 20) / codes + 1);
      std::string tuned;  // Columns a warp forced to 1, 2, 4 (cuda::Context::q4_columns).
      std::printf("  %-20s %5lldx%-5lld %6.1f MB |", l.name, static_cast<long long>(l.n),
                  static_cast<long long>(l.k), Q4Bytes(l.n, l.k) / 1e6);
      for (int m : {1, 8, 16}) {
        tuned += absl::StrFormat(" m = %2d:", m);
        for (int columns : {0, 1, 2, 4}) {
          ABSL_ASSIGN_OR_RETURN(
              const Stats s,
              Time([&](int i) { return run(weight(l.n, l.k, (i % copies) * codes), m, columns); },
                   3, reps_));
          const double gbs = Q4Bytes(l.n, l.k) / (s.median_us * 1e3);
          if (columns == 0)
            std::printf(" m = %2d: %6.1f us %5.0f GB/s %3.0f%% |", m, s.median_us, gbs,
                        100 * gbs / copy_gbs_);
          else
            tuned += absl::StrFormat(" %6.1f", s.median_us);
          json_["q4"].push_back({{"name", l.name},
                                 {"n", l.n},
                                 {"k", l.k},
                                 {"rows", m},
                                 {"columns", columns},
                                 {"median_us", s.median_us},
                                 {"gbs", gbs}});
        }
        tuned += " |";
      }
      std::printf("\n  %-40s |%s\n", "  columns a warp 1 / 2 / 4, us", tuned.c_str());
    }
    // One block's weights, distinct, grouped as the drafter calls them: q, k, v; o; gate, up; down.
    std::vector<std::vector<cuda::Q4DeviceWeight>> groups;
    int64_t offset = 0, bytes = 0;
    size_t count = 0;
    for (int layer = 0; layer < kDrafterLayers; ++layer)
      for (const DrafterQ4& l : kDrafterQ4) {
        if (!l.joins_previous) groups.emplace_back();
        for (int i = 0; i < l.per_block; ++i) {
          groups.back().push_back(weight(l.n, l.k, offset));
          offset += l.n * l.k / 2;
          bytes += Q4Bytes(l.n, l.k);
          ++count;
        }
      }
    auto run_group = [&](const std::vector<cuda::Q4DeviceWeight>& g, int m, bool together) {
      if (!together) {
        for (const auto& w : g) ABSL_RETURN_IF_ERROR(run(w, m));
        return absl::OkStatus();
      }
      if (g.size() > cuda::kMaxQ4Linears) return absl::InternalError("a group past Q4Linears");
      cuda::Q4LinearOutput outs[cuda::kMaxQ4Linears];
      for (size_t i = 0; i < g.size(); ++i) outs[i] = {&g[i], y_, g[i].n};  // Timing only.
      return cuda::Q4Linears(cuda::Context{stream_, nullptr, 0}, x_, g[0].k, m, outs,
                             static_cast<int>(g.size()));
    };
    for (int m : {1, 8}) {
      double median[2] = {0, 0};
      for (const bool together : {false, true}) {
        ABSL_ASSIGN_OR_RETURN(const Stats s, TimeGraph([&]() -> absl::Status {
                                for (const auto& g : groups)
                                  ABSL_RETURN_IF_ERROR(run_group(g, m, together));
                                return absl::OkStatus();
                              }));
        median[together] = s.median_us;
        const double gbs = bytes / (s.median_us * 1e3);
        std::printf(
            "  one block's %zu Q4 linears in %zu launches, rows %d, one CUDA graph: %.3f ms median "
            "(p10 %.3f, p90 %.3f), %.1f MB, %.0f GB/s = %.1f%% of copy; floor %.3f ms\n",
            count, together ? groups.size() : count, m, s.median_us / 1e3, s.p10_us / 1e3,
            s.p90_us / 1e3, bytes / 1e6, gbs, 100 * gbs / copy_gbs_, bytes / (copy_gbs_ * 1e6));
        json_["q4_block"].push_back(
            {{"rows", m}, {"together", together}, {"median_us", s.median_us}, {"bytes", bytes}});
      }
      std::printf("  rows %d: together / separate = %.3f\n", m, median[1] / median[0]);
    }
    std::printf("\n");
    return absl::OkStatus();
  }

  std::string Tuning() const {
    return absl::StrFormat("%d:%d:%d:%d:%d", schedule_, blocks_per_sm_, l2_ahead_, warps_, tiles_);
  }
  nlohmann::json& json() { return json_; }
  const std::string& device() const { return device_; }
  int sms() const { return sms_; }

 private:
  cudaStream_t stream_ = nullptr;
  int reps_ = 30;
  int schedule_ = 0, blocks_per_sm_ = 0, l2_ahead_ = 0, warps_ = 0, tiles_ = 0;
  int64_t spin_cycles_ = 0;
  std::string device_;
  int sms_ = 0;
  float* x_ = nullptr;
  float* y_ = nullptr;
  float* packed_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  uint16_t* scales_ = nullptr;
  void* pool_ = nullptr;
  int64_t pool_bytes_ = 0;
  void* forward_weights_ = nullptr;
  float* sink_ = nullptr;
  void* q4_codes_ = nullptr;
  void* q4_scales_ = nullptr;
  double copy_gbs_ = kAnchorCopyGBs;
  double decode_body_us_ = 0;  // The decode section's best 1-mma time of the body, if it ran.
  nlohmann::json json_;
};

// `tunings`: "schedule:blocks_per_sm" pairs (cuda::Context's knobs); the head and forward sections
// run once per pair, the per-linear table with the first.
absl::Status Main(const std::string& json_path, const std::string& sections,
                  const std::vector<int>& bits, int reps, const std::vector<std::string>& tunings,
                  double matmul_tflops) {
  Bench bench;
  ABSL_RETURN_IF_ERROR(bench.Init(reps));
  std::printf("device: %s, %d SMs\n", bench.device().c_str(), bench.sms());
  bench.json()["device"] = bench.device();
  ABSL_RETURN_IF_ERROR(bench.Copy());
  auto has = [&](const char* s) { return sections.find(s) != std::string::npos; };
  for (size_t t = 0; t < tunings.size(); ++t) {
    int schedule = 0, bps = 0, l2 = 0, warps = 0, tiles = 0;
    if (std::sscanf(tunings[t].c_str(), "%d:%d:%d:%d:%d", &schedule, &bps, &l2, &warps, &tiles) < 3)
      return absl::InvalidArgumentError(
          "--tunings: \"" + tunings[t] +
          "\" is not schedule:blocks_per_sm:l2_ahead[:warps[:tiles]]");
    bench.set_tuning(schedule, bps, l2, warps, tiles);
    std::printf(
        "tuning: schedule %d (0 auto, 1 units, 2 rounds), blocks per SM %d (0 auto), L2 ahead %d "
        "(0 auto, -1 off), warps %d (0 all), item tiles %d (0 auto)\n\n",
        schedule, bps, l2, warps, tiles);
    if (has("head")) ABSL_RETURN_IF_ERROR(bench.Head(6));
    if (has("forward")) ABSL_RETURN_IF_ERROR(bench.Forward(4, 6));
    if (has("floor")) ABSL_RETURN_IF_ERROR(bench.Floor());
    if (t == 0 && has("decode")) ABSL_RETURN_IF_ERROR(bench.Decode(4, 6));
    if (t == 0 && has("linears")) ABSL_RETURN_IF_ERROR(bench.Linears(bits));
    if (t == 0 && has("q4")) ABSL_RETURN_IF_ERROR(bench.Q4Linears());
    if (t == 0 && has("prompt")) ABSL_RETURN_IF_ERROR(bench.Prompt(4, matmul_tflops));
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << bench.json().dump(1) << "\n";
    if (!f) return absl::InternalError("cannot write " + json_path);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace twinspan::gpu

int main(int argc, char** argv) {
  CLI::App app{"Twinspan CUDA backend benchmark against the H200's copy bandwidth"};
  std::string json, sections = "head,forward,floor,decode,linears,q4";
  std::vector<int> bits = {2, 3, 4, 5, 6};
  int reps = 30;
  double matmul_tflops = 790;  // KINDS.md: 769-798 TFLOP/s for 8192^3 bf16 on these H200s.
  std::vector<std::string> tunings = {"0:0:0"};
  app.add_option("--json", json, "write every number here");
  app.add_option(
         "--tunings", tunings,
         "comma list of schedule:blocks_per_sm:l2_ahead[:warps[:tiles]] to time (default 0:0:0)")
      ->delimiter(',');
  app.add_option("--sections", sections,
                 "comma list of head, forward, floor, decode, linears, q4, prompt");
  app.add_option("--matmul-tflops", matmul_tflops,
                 "bf16 matmul rate for the prompt section's limit (measure it in the same call)")
      ->check(CLI::Range(1.0, 10000.0));
  app.add_option("--bits", bits, "comma list of K values of the per-linear table")
      ->check(CLI::Range(1, 8))
      ->delimiter(',');
  app.add_option("--reps", reps, "timed calls per cell (median)")->check(CLI::Range(5, 1000));
  CLI11_PARSE(app, argc, argv);
  const absl::Status s = twinspan::gpu::Main(json, sections, bits, reps, tunings, matmul_tflops);
  if (!s.ok()) {
    std::fprintf(stderr, "twinspan_gpu_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
