// GPU tests of kernels/cuda/gated_delta_net{,_keep,_gates}: the recurrent gated delta rule and its
// gates against the CPU ops on random inputs (the 27B's 16/48 heads of 128 x 128, the golden tiny
// model's 2/6 heads of 64, odd shapes through the column kernel), windows against single-row
// calls and both commit schemes against serial decoding bit for bit, and argument errors.
// Tolerances: the recurrence differs from the CPU op only in the order of its sums over k_dim
// (a 16-lane butterfly) and in expf; that costs about 1e-7..1e-6 relative, not growing with
// rows (the delta rule contracts), so rel_fro <= 1e-5 and every element within
// 5e-5 x (rms + |ref|). The gates are elementwise: 4e-6 x (rms + |ref|).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "kernels/cpu/gated_delta_net.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cuda/gated_delta_net.cuh"
#include "kernels/cuda/gated_delta_net_gates.cuh"
#include "kernels/cuda/gated_delta_net_keep.cuh"
#include "tests/cuda/gdn_inputs.h"
#include "tests/cuda/gdn_testing.h"

namespace twinspan::cuda {
namespace {

using cpu::GatedDeltaNetDims;
using testing::DeviceArray;
using testing::ExpectBitEqual;
using testing::ExpectClose;
using testing::GdnInputs;
using testing::MakeGdnInputs;

constexpr testing::Tolerance kRecurrence{1e-5, 5e-5};
constexpr testing::Tolerance kGates{4e-6, 4e-6};
constexpr GatedDeltaNetDims kQwen27B{16, 48, 128, 128};

std::string Name(const GatedDeltaNetDims& d, int64_t rows) {
  return absl::StrFormat("heads %d/%d dims %dx%d rows %d", d.k_heads, d.v_heads, d.k_dim, d.v_dim,
                         rows);
}

// The inputs on the device.
struct DeviceInputs {
  explicit DeviceInputs(const GdnInputs& in) : qkv(in.qkv), g(in.g), beta(in.beta) {}
  DeviceArray<float> qkv, g, beta;
};

TEST(GatedDeltaNetGatesCudaTest, MatchesCpu) {
  testing::TestStream stream;
  for (const auto& [rows, v_heads] :
       {std::pair<int64_t, int64_t>{1, 48}, {16, 48}, {300, 48}, {3, 5}, {0, 4}}) {
    SCOPED_TRACE(absl::StrFormat("rows %d v_heads %d", rows, v_heads));
    std::mt19937 rng(7 + static_cast<uint32_t>(rows));
    std::vector<float> a = testing::RandomNormal(rows * v_heads, 3.0f, rng);
    if (!a.empty()) a[0] = 25.0f;  // Past softplus's threshold of 20.
    const std::vector<float> b = testing::RandomNormal(rows * v_heads, 3.0f, rng);
    const std::vector<float> a_log = testing::RandomUniform(v_heads, -4.0f, 2.0f, rng);
    const std::vector<float> dt_bias = testing::RandomNormal(v_heads, 1.0f, rng);
    std::vector<float> g_cpu(rows * v_heads), beta_cpu(rows * v_heads);
    ASSERT_TRUE(cpu::GatedDeltaNetGates({}, a.data(), b.data(), v_heads, rows, v_heads,
                                        a_log.data(), dt_bias.data(), g_cpu.data(), beta_cpu.data())
                    .ok());
    DeviceArray<float> ad(a), bd(b), a_logd(a_log), dt_biasd(dt_bias), g(g_cpu.size()),
        beta(beta_cpu.size());
    ASSERT_TRUE(GatedDeltaNetGates(stream.ctx(), ad.get(), bd.get(), v_heads, rows, v_heads,
                                   a_logd.get(), dt_biasd.get(), g.get(), beta.get())
                    .ok());
    ASSERT_TRUE(stream.Finish());
    ExpectClose(g_cpu, g.Download(), kGates, "gates g");
    ExpectClose(beta_cpu, beta.Download(), kGates, "gates beta");
  }
}

// The GDN block's [rows, 2 * v_heads] projection read with its row stride, as the CPU op reads it.
TEST(GatedDeltaNetGatesCudaTest, StridedRowsMatchCpu) {
  testing::TestStream stream;
  const int64_t rows = 16, v_heads = 48, stride = 2 * v_heads;
  std::mt19937 rng(29);
  const std::vector<float> ab = testing::RandomNormal(rows * stride, 3.0f, rng);
  const std::vector<float> a_log = testing::RandomUniform(v_heads, -4.0f, 2.0f, rng);
  const std::vector<float> dt_bias = testing::RandomNormal(v_heads, 1.0f, rng);
  std::vector<float> g_cpu(rows * v_heads), beta_cpu(rows * v_heads);
  ASSERT_TRUE(cpu::GatedDeltaNetGates({}, ab.data(), ab.data() + v_heads, stride, rows, v_heads,
                                      a_log.data(), dt_bias.data(), g_cpu.data(), beta_cpu.data())
                  .ok());
  DeviceArray<float> abd(ab), a_logd(a_log), dt_biasd(dt_bias), g(g_cpu.size()),
      beta(beta_cpu.size());
  ASSERT_TRUE(GatedDeltaNetGates(stream.ctx(), abd.get(), abd.get() + v_heads, stride, rows,
                                 v_heads, a_logd.get(), dt_biasd.get(), g.get(), beta.get())
                  .ok());
  ASSERT_TRUE(stream.Finish());
  ExpectClose(g_cpu, g.Download(), kGates, "strided gates g");
  ExpectClose(beta_cpu, beta.Download(), kGates, "strided gates beta");
}

TEST(GatedDeltaNetGatesCudaTest, RejectsBadArguments) {
  DeviceArray<float> buf(64);
  testing::TestStream stream;
  const Context& ctx = stream.ctx();
  float* p = buf.get();
  constexpr auto kBad = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(GatedDeltaNetGates(ctx, p, p, 4, -1, 4, p, p, p, p).code(), kBad);
  EXPECT_EQ(GatedDeltaNetGates(ctx, p, p, 4, 2, 0, p, p, p, p).code(), kBad);
  EXPECT_EQ(GatedDeltaNetGates(ctx, p, p, 3, 2, 4, p, p, p, p).code(), kBad);  // ab_stride < 4.
  EXPECT_EQ(GatedDeltaNetGates(ctx, nullptr, p, 4, 2, 4, p, p, p, p).code(), kBad);
  EXPECT_EQ(GatedDeltaNetGates(ctx, p, p, 4, 2, 4, p, nullptr, p, p).code(), kBad);
  EXPECT_EQ(GatedDeltaNetGates(ctx, p, p, 4, 2, 4, p, p, p, nullptr).code(), kBad);
  ASSERT_TRUE(stream.Finish());
}

TEST(GatedDeltaNetCudaTest, MatchesCpuAtQwenTinyAndOddShapes) {
  struct Case {
    GatedDeltaNetDims dims;
    int64_t rows;
  };
  const Case cases[] = {
      {kQwen27B, 1},       {kQwen27B, 8},         {kQwen27B, 16},       {kQwen27B, 64},
      {{2, 6, 64, 64}, 1}, {{2, 6, 64, 64}, 33},  {{2, 6, 64, 64}, 80}, {{1, 3, 5, 7}, 1},
      {{1, 3, 5, 7}, 9},   {{2, 4, 128, 36}, 5},  {{1, 1, 64, 4}, 3},   {{3, 3, 20, 12}, 4},
      {{1, 2, 384, 8}, 2}, {{2, 2, 128, 100}, 0},
  };
  cpu::ThreadPool pool(8);
  testing::TestStream stream;
  for (const Case& c : cases) {
    const std::string what = Name(c.dims, c.rows);
    SCOPED_TRACE(what);
    const GdnInputs in = MakeGdnInputs(c.dims, c.rows, 100 + static_cast<uint32_t>(c.rows));
    std::vector<float> state_cpu = in.state, out_cpu(c.rows * c.dims.v_heads * c.dims.v_dim);
    ASSERT_TRUE(cpu::GatedDeltaNet({.pool = &pool}, in.qkv.data(), in.g.data(), in.beta.data(),
                                   c.rows, c.dims, state_cpu.data(), out_cpu.data())
                    .ok());
    DeviceInputs d(in);
    DeviceArray<float> state(in.state), out(out_cpu.size());
    ASSERT_TRUE(GatedDeltaNet(stream.ctx(), d.qkv.get(), d.g.get(), d.beta.get(), c.rows, c.dims,
                              state.get(), state.get(), out.get())
                    .ok());
    ASSERT_TRUE(stream.Finish());
    ExpectClose(out_cpu, out.Download(), kRecurrence, "GatedDeltaNet out, " + what);
    ExpectClose(state_cpu, state.Download(), kRecurrence, "GatedDeltaNet state, " + what);
  }
}

// Runs `rows` rows as single-row calls from `state0`; returns the state after each row (index
// t = after t rows) and fills `out`.
std::vector<std::vector<float>> SerialStates(const testing::TestStream& stream,
                                             const GatedDeltaNetDims& dims, const GdnInputs& in,
                                             const DeviceInputs& d, int64_t rows,
                                             std::vector<float>& out) {
  std::vector<std::vector<float>> states{in.state};
  DeviceArray<float> state(in.state), out_d(rows * dims.v_heads * dims.v_dim);
  for (int64_t t = 0; t < rows; ++t) {
    EXPECT_TRUE(GatedDeltaNet(stream.ctx(), d.qkv.get() + t * dims.qkv_width(),
                              d.g.get() + t * dims.v_heads, d.beta.get() + t * dims.v_heads, 1,
                              dims, state.get(), state.get(),
                              out_d.get() + t * dims.v_heads * dims.v_dim)
                    .ok());
    states.push_back(state.Download());
  }
  EXPECT_TRUE(stream.Finish());
  out = out_d.Download();
  return states;
}

TEST(GatedDeltaNetCudaTest, WindowEqualsSingleRowCallsBitForBit) {
  const GatedDeltaNetDims shapes[] = {kQwen27B, {2, 6, 64, 64}, {1, 3, 5, 7}, {2, 4, 128, 36}};
  testing::TestStream stream;
  for (const GatedDeltaNetDims& dims : shapes) {
    constexpr int64_t kMaxRows = 64;
    const GdnInputs in = MakeGdnInputs(dims, kMaxRows, 200);
    const DeviceInputs d(in);
    std::vector<float> serial_out;
    const std::vector<std::vector<float>> serial =
        SerialStates(stream, dims, in, d, kMaxRows, serial_out);
    const int64_t out_width = dims.v_heads * dims.v_dim;
    for (int64_t rows = 1; rows <= kMaxRows; rows = rows < 16 ? rows + 1 : rows * 2) {
      SCOPED_TRACE(Name(dims, rows));
      DeviceArray<float> state(in.state), out(rows * out_width);
      ASSERT_TRUE(GatedDeltaNet(stream.ctx(), d.qkv.get(), d.g.get(), d.beta.get(), rows, dims,
                                state.get(), state.get(), out.get())
                      .ok());
      ASSERT_TRUE(stream.Finish());
      ExpectBitEqual(testing::Rows(serial_out, out_width, 0, rows), out.Download(), "window out");
      ExpectBitEqual(serial[rows], state.Download(), "window state");
    }
  }
}

// Both commit schemes of gated_delta_net_keep.cuh leave the state serial decoding of the kept
// rows leaves, bit for bit, for every number of kept rows of an 8-row window.
TEST(GatedDeltaNetCudaTest, CommitByReplayEqualsSerialDecodingBitForBit) {
  const GatedDeltaNetDims shapes[] = {kQwen27B, {2, 6, 64, 64}, {1, 3, 5, 7}};
  constexpr int64_t kWindow = 8;
  testing::TestStream stream;
  for (const GatedDeltaNetDims& dims : shapes) {
    // Rows 0..7 are one verify window, rows 8..15 the next.
    const GdnInputs in = MakeGdnInputs(dims, 2 * kWindow, 300);
    const DeviceInputs d(in);
    const int64_t out_width = dims.v_heads * dims.v_dim;
    std::vector<float> serial_out;
    const std::vector<std::vector<float>> serial =
        SerialStates(stream, dims, in, d, kWindow, serial_out);
    for (int64_t n = 0; n <= kWindow; ++n) {
      SCOPED_TRACE(Name(dims, n));
      // Eager: a forward that writes no state, then the replay of the n kept rows in place.
      DeviceArray<float> state(in.state), out(kWindow * out_width);
      GatedDeltaNetWindow forward;
      forward.qkv = d.qkv.get();
      forward.g = d.g.get();
      forward.beta = d.beta.get();
      forward.rows = kWindow;
      forward.state_in = state.get();
      forward.out = out.get();
      ASSERT_TRUE(GatedDeltaNetKeep(stream.ctx(), forward, dims).ok());
      ASSERT_TRUE(stream.Finish());
      ExpectBitEqual(serial_out, out.Download(), "state-less forward out");
      ExpectBitEqual(in.state, state.Download(), "state after a state-less forward");
      GatedDeltaNetWindow replay = forward;
      replay.rows = n;
      replay.keep_rows = n;
      replay.state_out = state.get();
      replay.out = nullptr;
      ASSERT_TRUE(GatedDeltaNetKeep(stream.ctx(), replay, dims).ok());
      ASSERT_TRUE(stream.Finish());
      ExpectBitEqual(serial[n], state.Download(), "replayed state");

      // Lazy: the next forward runs [n kept rows | next window] and keeps the state after n.
      std::vector<float> qkv_next, g_next, beta_next;
      const auto append = [&](const std::vector<float>& src, int64_t width,
                              std::vector<float>& dst) {
        dst = testing::Rows(src, width, 0, n);
        const std::vector<float> next = testing::Rows(src, width, kWindow, kWindow);
        dst.insert(dst.end(), next.begin(), next.end());
      };
      append(in.qkv, dims.qkv_width(), qkv_next);
      append(in.g, dims.v_heads, g_next);
      append(in.beta, dims.v_heads, beta_next);
      DeviceArray<float> qkv_l(qkv_next), g_l(g_next), beta_l(beta_next), lazy_state(in.state),
          lazy_out((n + kWindow) * out_width);
      GatedDeltaNetWindow lazy;
      lazy.qkv = qkv_l.get();
      lazy.g = g_l.get();
      lazy.beta = beta_l.get();
      lazy.rows = n + kWindow;
      lazy.state_in = lazy_state.get();
      lazy.keep_rows = n;
      lazy.state_out = lazy_state.get();
      lazy.out = lazy_out.get();
      ASSERT_TRUE(GatedDeltaNetKeep(stream.ctx(), lazy, dims).ok());
      ASSERT_TRUE(stream.Finish());
      ExpectBitEqual(serial[n], lazy_state.Download(), "lazy commit's kept state");
      // The next window's outputs equal decoding it row by row from the kept state.
      GdnInputs after_keep = in;
      after_keep.state = serial[n];
      after_keep.qkv = testing::Rows(in.qkv, dims.qkv_width(), kWindow, kWindow);
      after_keep.g = testing::Rows(in.g, dims.v_heads, kWindow, kWindow);
      after_keep.beta = testing::Rows(in.beta, dims.v_heads, kWindow, kWindow);
      const DeviceInputs d_next(after_keep);
      std::vector<float> next_out;
      SerialStates(stream, dims, after_keep, d_next, kWindow, next_out);
      ExpectBitEqual(next_out, testing::Rows(lazy_out.Download(), out_width, n, kWindow),
                     "lazy forward's new rows");

      // Out of place: state_in stays, state_out gets the state after n rows.
      DeviceArray<float> start(in.state), kept(in.state.size()), out2(kWindow * out_width);
      GatedDeltaNetWindow split = forward;
      split.state_in = start.get();
      split.keep_rows = n;
      split.state_out = kept.get();
      split.out = out2.get();
      ASSERT_TRUE(GatedDeltaNetKeep(stream.ctx(), split, dims).ok());
      ASSERT_TRUE(stream.Finish());
      ExpectBitEqual(serial[n], kept.Download(), "out-of-place state after keep_rows");
      ExpectBitEqual(in.state, start.Download(), "state_in after an out-of-place window");
      ExpectBitEqual(serial_out, out2.Download(), "out-of-place out");
    }
  }
}

TEST(GatedDeltaNetCudaTest, RejectsBadArguments) {
  const GatedDeltaNetDims dims{2, 4, 16, 16};
  const GdnInputs in = MakeGdnInputs(dims, 2, 9);
  const DeviceInputs d(in);
  DeviceArray<float> state(in.state), out(2 * dims.v_heads * dims.v_dim);
  testing::TestStream stream;
  const Context& ctx = stream.ctx();
  constexpr auto kBad = absl::StatusCode::kInvalidArgument;
  const auto run = [&](const GatedDeltaNetDims& dd, int64_t rows, const float* qkv, float* st,
                       float* o) {
    return GatedDeltaNet(ctx, qkv, d.g.get(), d.beta.get(), rows, dd, st, st, o).code();
  };
  EXPECT_EQ(run(dims, -1, d.qkv.get(), state.get(), out.get()), kBad);
  EXPECT_EQ(run({2, 3, 16, 16}, 2, d.qkv.get(), state.get(), out.get()), kBad);  // 3 % 2 != 0
  EXPECT_EQ(run({0, 4, 16, 16}, 2, d.qkv.get(), state.get(), out.get()), kBad);
  EXPECT_EQ(run({2, 4, 0, 16}, 2, d.qkv.get(), state.get(), out.get()), kBad);
  EXPECT_EQ(run({2, 4, 16, -1}, 2, d.qkv.get(), state.get(), out.get()), kBad);
  EXPECT_EQ(run({1, 1, 400, 4}, 2, d.qkv.get(), state.get(), out.get()), kBad);  // k_dim > 384
  EXPECT_EQ(run(dims, 2, nullptr, state.get(), out.get()), kBad);
  EXPECT_EQ(run(dims, 2, d.qkv.get(), nullptr, out.get()), kBad);
  EXPECT_EQ(run(dims, 2, d.qkv.get(), state.get(), nullptr), kBad);
  // The register kernel's shapes need 16-byte aligned pointers.
  EXPECT_EQ(run({1, 1, 64, 4}, 1, d.qkv.get() + 1, state.get(), out.get()), kBad);
  EXPECT_EQ(run({1, 1, 64, 4}, 1, d.qkv.get(), state.get() + 2, out.get()), kBad);
  GatedDeltaNetWindow w;
  w.qkv = d.qkv.get();
  w.g = d.g.get();
  w.beta = d.beta.get();
  w.rows = 2;
  w.state_in = state.get();
  w.state_out = state.get();
  w.out = out.get();
  w.keep_rows = 3;
  EXPECT_EQ(GatedDeltaNetKeep(ctx, w, dims).code(), kBad);
  w.keep_rows = -1;
  EXPECT_EQ(GatedDeltaNetKeep(ctx, w, dims).code(), kBad);
  w.keep_rows = 1;
  w.state_out = state.get() + 4;  // Overlaps state_in without equalling it.
  EXPECT_EQ(GatedDeltaNetKeep(ctx, w, dims).code(), kBad);
  w.state_out = state.get();
  w.state_in = nullptr;
  EXPECT_EQ(GatedDeltaNetKeep(ctx, w, dims).code(), kBad);
  ASSERT_TRUE(stream.Finish());
  ExpectBitEqual(in.state, state.Download(), "state after refused calls");
}

}  // namespace
}  // namespace twinspan::cuda
