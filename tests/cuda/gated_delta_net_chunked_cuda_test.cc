// GPU tests of kernels/cuda/gated_delta_net_chunked: the chunked (WY) gated delta rule against
// the recurrent cpu::GatedDeltaNet on random inputs (the 27B's shapes up to 1,100 rows, i.e. two
// segments and a short last chunk; the golden tiny model's shapes at its 7/33/80-token prompts;
// odd shapes), weak and strong decay; determinism and chunk-aligned splits bit for bit; errors.
// Tolerance: rel_fro <= 1e-5 on out and state and every element within 5e-5 x (rms + |ref|); an
// fp32 model of these kernels' order measured about 1e-6 (27B shapes, 1,000 rows) against the CPU
// op, the chunk sums and the triangular solve reassociating the recurrence.
#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "kernels/cpu/gated_delta_net.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cuda/gated_delta_net_chunked.cuh"
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

constexpr testing::Tolerance kChunked{1e-5, 5e-5};
constexpr GatedDeltaNetDims kQwen27B{16, 48, 128, 128};

// The inputs on the device, a workspace and the stream.
struct ChunkedRun {
  ChunkedRun(const GatedDeltaNetDims& dims, const GdnInputs& in, int64_t rows)
      : qkv(in.qkv),
        g(in.g),
        beta(in.beta),
        state(in.state),
        out(rows * dims.v_heads * dims.v_dim),
        workspace(std::max<size_t>(GatedDeltaNetChunkedWorkspaceBytes(dims, rows), 1)) {}
  // Rows [row0, row0 + rows) of the inputs through GatedDeltaNetChunked.
  absl::Status Chunked(const GatedDeltaNetDims& dims, int64_t row0, int64_t rows) {
    Context ctx = stream.ctx();
    ctx.workspace = workspace.get();
    ctx.workspace_bytes = workspace.size();
    return GatedDeltaNetChunked(ctx, qkv.get() + row0 * dims.qkv_width(),
                                g.get() + row0 * dims.v_heads, beta.get() + row0 * dims.v_heads,
                                rows, dims, state.get(),
                                out.get() + row0 * dims.v_heads * dims.v_dim);
  }
  testing::TestStream stream;
  DeviceArray<float> qkv, g, beta, state, out;
  DeviceArray<char> workspace;
};

TEST(GatedDeltaNetChunkedCudaTest, MatchesRecurrentCpu) {
  struct Case {
    GatedDeltaNetDims dims;
    int64_t rows;
    float a_log_lo,
        a_log_hi;  // exp(a_log): the decay rate; -10..-6 keeps states for 1,000s of rows.
  };
  const Case cases[] = {
      {kQwen27B, 1, -4, 1},         {kQwen27B, 63, -4, 1},      {kQwen27B, 64, -4, 1},
      {kQwen27B, 65, -4, 1},        {kQwen27B, 300, -10, -6},   {kQwen27B, 1100, -4, 1},
      {kQwen27B, 1100, -10, -6},    {{2, 6, 64, 64}, 7, -4, 1}, {{2, 6, 64, 64}, 33, -4, 1},
      {{2, 6, 64, 64}, 80, -4, 1},  {{1, 3, 5, 7}, 70, -4, 1},  {{2, 2, 128, 36}, 130, -8, -2},
      {{1, 1, 16, 33}, 129, -4, 1},
  };
  cpu::ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  for (const Case& c : cases) {
    const std::string what =
        absl::StrFormat("heads %d/%d dims %dx%d rows %d a_log %g..%g", c.dims.k_heads,
                        c.dims.v_heads, c.dims.k_dim, c.dims.v_dim, c.rows, c.a_log_lo, c.a_log_hi);
    SCOPED_TRACE(what);
    const GdnInputs in =
        MakeGdnInputs(c.dims, c.rows, 400 + static_cast<uint32_t>(c.rows), c.a_log_lo, c.a_log_hi);
    std::vector<float> state_cpu = in.state, out_cpu(c.rows * c.dims.v_heads * c.dims.v_dim);
    ASSERT_TRUE(cpu::GatedDeltaNet({.pool = &pool}, in.qkv.data(), in.g.data(), in.beta.data(),
                                   c.rows, c.dims, state_cpu.data(), out_cpu.data())
                    .ok());
    ChunkedRun run(c.dims, in, c.rows);
    ASSERT_TRUE(run.Chunked(c.dims, 0, c.rows).ok());
    ASSERT_TRUE(run.stream.Finish());
    ExpectClose(out_cpu, run.out.Download(), kChunked, "chunked out, " + what);
    ExpectClose(state_cpu, run.state.Download(), kChunked, "chunked state, " + what);
  }
}

// A prompt's bits depend on the prompt only: a repeat, and a split at a multiple of the chunk
// (here not at the 1,024-row segment), give the same bits.
TEST(GatedDeltaNetChunkedCudaTest, RepeatsAndChunkAlignedSplitsAreBitIdentical) {
  constexpr int64_t kRows = 1100;
  const GdnInputs in = MakeGdnInputs(kQwen27B, kRows, 500);
  ChunkedRun whole(kQwen27B, in, kRows), again(kQwen27B, in, kRows), split(kQwen27B, in, kRows);
  ASSERT_TRUE(whole.Chunked(kQwen27B, 0, kRows).ok());
  ASSERT_TRUE(again.Chunked(kQwen27B, 0, kRows).ok());
  ASSERT_TRUE(split.Chunked(kQwen27B, 0, 10 * kGatedDeltaNetChunk).ok());
  ASSERT_TRUE(
      split.Chunked(kQwen27B, 10 * kGatedDeltaNetChunk, kRows - 10 * kGatedDeltaNetChunk).ok());
  for (ChunkedRun* r : {&whole, &again, &split}) ASSERT_TRUE(r->stream.Finish());
  const std::vector<float> out = whole.out.Download(), state = whole.state.Download();
  ExpectBitEqual(out, again.out.Download(), "repeat out");
  ExpectBitEqual(state, again.state.Download(), "repeat state");
  ExpectBitEqual(out, split.out.Download(), "split out");
  ExpectBitEqual(state, split.state.Download(), "split state");
}

TEST(GatedDeltaNetChunkedCudaTest, RejectsBadArguments) {
  const GatedDeltaNetDims dims{2, 4, 16, 16};
  const GdnInputs in = MakeGdnInputs(dims, 4, 9);
  ChunkedRun run(dims, in, 4);
  Context ctx = run.stream.ctx();
  ctx.workspace = run.workspace.get();
  ctx.workspace_bytes = run.workspace.size();
  const auto call = [&](const Context& c, int64_t rows, const GatedDeltaNetDims& d,
                        const float* qkv, float* state) {
    return GatedDeltaNetChunked(c, qkv, run.g.get(), run.beta.get(), rows, d, state, run.out.get())
        .code();
  };
  constexpr auto kBad = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(call(ctx, -1, dims, run.qkv.get(), run.state.get()), kBad);
  EXPECT_EQ(call(ctx, 4, {2, 3, 16, 16}, run.qkv.get(), run.state.get()), kBad);
  EXPECT_EQ(call(ctx, 4, {1, 1, 256, 16}, run.qkv.get(), run.state.get()), kBad);  // k_dim > 128
  EXPECT_EQ(call(ctx, 4, dims, nullptr, run.state.get()), kBad);
  EXPECT_EQ(call(ctx, 4, dims, run.qkv.get(), nullptr), kBad);
  Context small = ctx;
  small.workspace_bytes = GatedDeltaNetChunkedWorkspaceBytes(dims, 4) - 1;
  EXPECT_EQ(call(small, 4, dims, run.qkv.get(), run.state.get()),
            absl::StatusCode::kResourceExhausted);
  small.workspace = nullptr;
  small.workspace_bytes = 1 << 30;
  EXPECT_EQ(call(small, 4, dims, run.qkv.get(), run.state.get()),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(run.stream.Finish());
  ExpectBitEqual(in.state, run.state.Download(), "state after refused calls");
}

}  // namespace
}  // namespace twinspan::cuda
