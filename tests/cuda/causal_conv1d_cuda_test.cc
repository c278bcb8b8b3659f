// GPU tests of kernels/cuda/causal_conv1d{,_keep}: cpu::CausalConv1d on random inputs (the 27B's
// 10,240 channels with kernel 4, and small odd shapes through the generic kernel), windows against
// single-row calls and replays against serial decoding bit for bit, and argument errors.
// Tolerance on y: the sums are the CPU op's bits; SiLU's expf differs by a few ulps, so
// rel_fro <= 4e-6 and every element within 2e-6 x (rms + |ref|). The state is bit-equal.
#include <cstdint>
#include <random>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "kernels/cpu/causal_conv1d.h"
#include "kernels/cuda/causal_conv1d.cuh"
#include "kernels/cuda/causal_conv1d_keep.cuh"
#include "tests/cuda/gdn_testing.h"

namespace twinspan::cuda {
namespace {

using testing::DeviceArray;
using testing::ExpectBitEqual;
using testing::ExpectClose;
using testing::Rows;

constexpr testing::Tolerance kTolerance{4e-6, 2e-6};

struct Shape {
  int64_t channels, kernel;
};

struct Inputs {
  std::vector<float> x, weight, state;
};

Inputs MakeInputs(const Shape& s, int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  return {testing::RandomNormal(rows * s.channels, 1.0f, rng),
          testing::RandomNormal(s.channels * s.kernel, 0.5f, rng),
          testing::RandomNormal((s.kernel - 1) * s.channels, 1.0f, rng)};
}

// The CPU op: y and the state after `rows` rows.
void RunCpu(const Shape& s, const Inputs& in, int64_t rows, std::vector<float>& y,
            std::vector<float>& state) {
  y.assign(rows * s.channels, 0.0f);
  state = in.state;
  ASSERT_TRUE(cpu::CausalConv1d({}, in.x.data(), rows, s.channels, in.weight.data(), s.kernel,
                                state.data(), y.data())
                  .ok());
}

TEST(CausalConv1dCudaTest, MatchesCpuAtQwenAndOddShapes) {
  struct Case {
    Shape shape;
    int64_t rows;
  };
  const Case cases[] = {{{10240, 4}, 1}, {{10240, 4}, 7}, {{10240, 4}, 16}, {{10240, 4}, 300},
                        {{5, 3}, 1},     {{5, 3}, 2},     {{5, 3}, 13},     {{33, 1}, 9},
                        {{130, 6}, 40},  {{100, 20}, 50}, {{7, 2}, 0},      {{97, 4}, 35}};
  testing::TestStream stream;
  for (const Case& c : cases) {
    const std::string what =
        absl::StrFormat("channels %d kernel %d rows %d", c.shape.channels, c.shape.kernel, c.rows);
    SCOPED_TRACE(what);
    const Inputs in = MakeInputs(c.shape, c.rows, 11 + static_cast<uint32_t>(c.rows));
    std::vector<float> y_cpu, state_cpu;
    RunCpu(c.shape, in, c.rows, y_cpu, state_cpu);

    DeviceArray<float> x(in.x), w(in.weight), state(in.state), y(y_cpu.size());
    ASSERT_TRUE(CausalConv1d(stream.ctx(), x.get(), c.rows, c.shape.channels, w.get(),
                             c.shape.kernel, state.get(), state.get(), y.get())
                    .ok());
    ASSERT_TRUE(stream.Finish());
    ExpectClose(y_cpu, y.Download(), kTolerance, "CausalConv1d y, " + what);
    ExpectBitEqual(state_cpu, state.Download(), "CausalConv1d state, " + what);
  }
}

TEST(CausalConv1dCudaTest, WindowEqualsSingleRowCallsBitForBit) {
  const Shape shapes[] = {{10240, 4}, {5, 3}, {100, 20}, {33, 1}};
  testing::TestStream stream;
  for (const Shape& s : shapes) {
    for (int64_t rows : {2, 16, 64}) {
      SCOPED_TRACE(absl::StrFormat("channels %d kernel %d rows %d", s.channels, s.kernel, rows));
      const Inputs in = MakeInputs(s, rows, 23);
      DeviceArray<float> x(in.x), w(in.weight), state_window(in.state), state_rows(in.state);
      DeviceArray<float> y_window(rows * s.channels), y_rows(rows * s.channels);
      ASSERT_TRUE(CausalConv1d(stream.ctx(), x.get(), rows, s.channels, w.get(), s.kernel,
                               state_window.get(), state_window.get(), y_window.get())
                      .ok());
      for (int64_t t = 0; t < rows; ++t) {
        ASSERT_TRUE(CausalConv1d(stream.ctx(), x.get() + t * s.channels, 1, s.channels, w.get(),
                                 s.kernel, state_rows.get(), state_rows.get(),
                                 y_rows.get() + t * s.channels)
                        .ok());
      }
      ASSERT_TRUE(stream.Finish());
      ExpectBitEqual(y_rows.Download(), y_window.Download(), "window y");
      ExpectBitEqual(state_rows.Download(), state_window.Download(), "window state");
    }
  }
}

// The target's commit: a forward that leaves the state alone, then a replay of the kept rows,
// leaves the state n single-row calls leave; an out-of-place window leaves state_in untouched.
TEST(CausalConv1dCudaTest, KeepAndReplayEqualSerialDecodingBitForBit) {
  const Shape shapes[] = {{10240, 4}, {5, 3}, {100, 20}};
  constexpr int64_t kWindow = 8;
  testing::TestStream stream;
  for (const Shape& s : shapes) {
    const Inputs in = MakeInputs(s, kWindow, 31);
    DeviceArray<float> x(in.x), w(in.weight);
    // Serial decoding: the state after each of the window's rows.
    std::vector<std::vector<float>> serial_state{in.state};
    std::vector<float> serial_y;
    {
      DeviceArray<float> state(in.state), y(kWindow * s.channels);
      for (int64_t t = 0; t < kWindow; ++t) {
        ASSERT_TRUE(CausalConv1d(stream.ctx(), x.get() + t * s.channels, 1, s.channels, w.get(),
                                 s.kernel, state.get(), state.get(), y.get() + t * s.channels)
                        .ok());
        serial_state.push_back(state.Download());
      }
      serial_y = y.Download();
    }
    for (int64_t n = 0; n <= kWindow; ++n) {
      SCOPED_TRACE(absl::StrFormat("channels %d kernel %d keep %d", s.channels, s.kernel, n));
      DeviceArray<float> state(in.state), y(kWindow * s.channels);
      CausalConv1dWindow forward;  // Reads the state, writes none.
      forward.x = x.get();
      forward.rows = kWindow;
      forward.state_in = state.get();
      forward.y = y.get();
      ASSERT_TRUE(CausalConv1dKeep(stream.ctx(), forward, s.channels, w.get(), s.kernel).ok());
      ASSERT_TRUE(stream.Finish());
      ExpectBitEqual(serial_y, y.Download(), "forward y");
      ExpectBitEqual(in.state, state.Download(), "state after a state-less forward");
      CausalConv1dWindow replay;
      replay.x = x.get();
      replay.rows = n;
      replay.state_in = state.get();
      replay.keep_rows = n;
      replay.state_out = state.get();
      ASSERT_TRUE(CausalConv1dKeep(stream.ctx(), replay, s.channels, w.get(), s.kernel).ok());
      ASSERT_TRUE(stream.Finish());
      ExpectBitEqual(serial_state[n], state.Download(), "replayed state");

      DeviceArray<float> start(in.state), kept(in.state.size()), y_all(kWindow * s.channels);
      CausalConv1dWindow out_of_place = forward;
      out_of_place.state_in = start.get();
      out_of_place.keep_rows = n;
      out_of_place.state_out = kept.get();
      out_of_place.y = y_all.get();
      ASSERT_TRUE(CausalConv1dKeep(stream.ctx(), out_of_place, s.channels, w.get(), s.kernel).ok());
      ASSERT_TRUE(stream.Finish());
      ExpectBitEqual(serial_state[n], kept.Download(), "out-of-place state after keep_rows");
      ExpectBitEqual(in.state, start.Download(), "state_in after an out-of-place window");
      ExpectBitEqual(serial_y, y_all.Download(), "out-of-place y");
    }
  }
}

TEST(CausalConv1dCudaTest, RejectsBadArguments) {
  const Shape s{16, 4};
  const Inputs in = MakeInputs(s, 4, 5);
  DeviceArray<float> x(in.x), w(in.weight), state(in.state), y(in.x.size());
  testing::TestStream stream;
  const Context& ctx = stream.ctx();
  const auto code = [](const absl::Status& st) { return st.code(); };
  constexpr auto kBad = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code(CausalConv1d(ctx, x.get(), -1, 16, w.get(), 4, state.get(), state.get(), y.get())),
            kBad);
  EXPECT_EQ(code(CausalConv1d(ctx, x.get(), 4, 0, w.get(), 4, state.get(), state.get(), y.get())),
            kBad);
  EXPECT_EQ(code(CausalConv1d(ctx, x.get(), 4, 16, w.get(), 0, state.get(), state.get(), y.get())),
            kBad);
  EXPECT_EQ(code(CausalConv1d(ctx, nullptr, 4, 16, w.get(), 4, state.get(), state.get(), y.get())),
            kBad);
  EXPECT_EQ(code(CausalConv1d(ctx, x.get(), 4, 16, nullptr, 4, state.get(), state.get(), y.get())),
            kBad);
  EXPECT_EQ(code(CausalConv1d(ctx, x.get(), 4, 16, w.get(), 4, nullptr, state.get(), y.get())),
            kBad);
  EXPECT_EQ(code(CausalConv1d(ctx, x.get(), 4, 16, w.get(), 4, state.get(), nullptr, y.get())),
            kBad);
  EXPECT_EQ(code(CausalConv1d(ctx, x.get(), 4, 16, w.get(), 4, state.get(), state.get(), nullptr)),
            kBad);
  CausalConv1dWindow window;
  window.x = x.get();
  window.rows = 4;
  window.state_in = state.get();
  window.state_out = state.get();
  window.y = y.get();
  window.keep_rows = 5;
  EXPECT_EQ(code(CausalConv1dKeep(ctx, window, 16, w.get(), 4)), kBad);
  window.keep_rows = -1;
  EXPECT_EQ(code(CausalConv1dKeep(ctx, window, 16, w.get(), 4)), kBad);
  window.keep_rows = 2;
  window.state_out = state.get() + 1;  // Overlaps state_in without equalling it.
  EXPECT_EQ(code(CausalConv1dKeep(ctx, window, 16, w.get(), 4)), kBad);
  ASSERT_TRUE(stream.Finish());
  ExpectBitEqual(in.state, state.Download(), "state after refused calls");
}

}  // namespace
}  // namespace twinspan::cuda
