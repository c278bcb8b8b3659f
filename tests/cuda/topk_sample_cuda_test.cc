// GPU tests of cuda::TopK against cpu::TopK and of cuda::Sample against
// sampler::KeyedSampler::Sample, on random logits (never zeros; with ties, +-0 and -inf where the
// case asks for them). Tolerance: none. TopK gives the CPU's values and indices exactly; Sample
// gives the CPU's token for every row (sample.cuh states the ~1e-10 case where it may not; this
// test expects none), in the certified mode and in the sequential mode that exercises the
// fallback. Needs a GPU: scripts/gpu-check.sh runs it.
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <span>
#include <vector>

#include "common/sampler/keyed_sampler.h"
#include "gtest/gtest.h"
#include "kernels/cpu/topk.h"
#include "kernels/cuda/sample.cuh"
#include "kernels/cuda/topk.cuh"
#include "tests/cuda/cuda_test_util.h"

namespace twinspan::cuda {
namespace {

using testing::BitMismatches;
using testing::DeviceArray;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Normal logits; `levels` > 0 rounds them onto that many values (ties), and a few are set to +0,
// -0 and -inf.
std::vector<float> Logits(int64_t n, uint32_t seed, float sigma, int levels) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> out(n);
  for (float& v : out) {
    v = dist(rng);
    if (v == 0.0f) v = 1e-3f;
    if (levels > 0) v = std::round(v * levels / (4 * sigma)) * (4 * sigma) / levels;
  }
  if (levels > 0) {
    for (int64_t i = 0; i < n; i += 97) out[i] = (i / 97) % 2 ? 0.0f : -0.0f;
    for (int64_t i = 5; i < n; i += 501) out[i] = -kInf;
  }
  return out;
}

struct TopKCase {
  int64_t rows, cols, k;
  int levels;
};

void PrintTo(const TopKCase& c, std::ostream* os) {
  *os << c.rows << " x " << c.cols << ", k " << c.k << ", levels " << c.levels;
}

class TopKCudaTest : public ::testing::TestWithParam<TopKCase> {};

TEST_P(TopKCudaTest, EqualsCpuExactly) {
  const TopKCase c = GetParam();
  const int64_t stride = c.cols + 7;
  std::vector<float> logits(c.rows * stride, NAN);  // The stride gap holds NaN: never read.
  std::vector<float> packed(c.rows * c.cols);
  for (int64_t r = 0; r < c.rows; ++r) {
    const std::vector<float> row = Logits(c.cols, 111 + r, 3.0f, c.levels);
    std::copy(row.begin(), row.end(), logits.begin() + r * stride);
    std::copy(row.begin(), row.end(), packed.begin() + r * c.cols);
  }
  std::vector<float> want_values(c.rows * c.k);
  std::vector<int32_t> want_indices(c.rows * c.k);
  cpu::TopKParams params{c.rows, c.cols, c.k};
  ASSERT_TRUE(cpu::TopK({}, packed, want_values, want_indices, params).ok());
  DeviceArray<float> dl(logits), values(c.rows * c.k);
  DeviceArray<int32_t> indices(c.rows * c.k);
  values.Poison();
  indices.Poison();
  ASSERT_TRUE(TopK({}, dl.get(), stride, c.rows, c.cols, c.k, values.get(), indices.get()).ok());
  EXPECT_CUDA_CLEAN();
  EXPECT_EQ(indices.Download(), want_indices);
  EXPECT_EQ(BitMismatches(values.Download(), want_values), 0u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, TopKCudaTest,
                         ::testing::Values(TopKCase{7, 4096, 8, 0}, TopKCase{7, 98304, 8, 0},
                                           TopKCase{3, 151936, 50, 0}, TopKCase{5, 4096, 8, 12},
                                           TopKCase{2, 50000, 4096, 40}, TopKCase{4, 9, 9, 3},
                                           TopKCase{1, 248320, 1, 0}, TopKCase{16, 248320, 1, 0},
                                           TopKCase{5, 4099, 1, 12}, TopKCase{3, 3, 1, 3}));

TEST(TopKCudaTest, NanRowIsMarkedAndOthersAreUntouched) {
  std::vector<float> logits = Logits(2000, 121, 1.0f, 0);  // 2 rows of 1000.
  logits[1000 + 17] = NAN;
  DeviceArray<float> dl(logits), values(8);
  DeviceArray<int32_t> indices(8);
  ASSERT_TRUE(TopK({}, dl.get(), 1000, 2, 1000, 4, values.get(), indices.get()).ok());
  EXPECT_CUDA_CLEAN();
  const std::vector<int32_t> got = indices.Download();
  std::vector<float> want_values(4);
  std::vector<int32_t> want_indices(4);
  ASSERT_TRUE(cpu::TopK({}, std::span<const float>(logits.data(), 1000), want_values, want_indices,
                        {1, 1000, 4})
                  .ok());
  EXPECT_EQ(std::vector<int32_t>(got.begin(), got.begin() + 4), want_indices);
  for (int j = 4; j < 8; ++j) EXPECT_EQ(got[j], -1);
}

TEST(TopKCudaTest, NanRowIsMarkedForTopOne) {
  std::vector<float> logits = Logits(3003, 122, 1.0f, 0);  // 3 rows of 1001.
  logits[1001 + 1000] = NAN;                               // Row 1's last column.
  DeviceArray<float> dl(logits), values(3);
  DeviceArray<int32_t> indices(3);
  values.Poison();
  ASSERT_TRUE(TopK({}, dl.get(), 1001, 3, 1001, 1, values.get(), indices.get()).ok());
  EXPECT_CUDA_CLEAN();
  const std::vector<int32_t> got = indices.Download();
  const std::vector<float> got_values = values.Download();
  for (int64_t r : {0, 2}) {
    std::vector<float> want_value(1);
    std::vector<int32_t> want_index(1);
    ASSERT_TRUE(cpu::TopK({}, std::span<const float>(logits.data() + r * 1001, 1001), want_value,
                          want_index, {1, 1001, 1})
                    .ok());
    EXPECT_EQ(got[r], want_index[0]) << r;
    EXPECT_EQ(BitMismatches({got_values[r]}, want_value), 0u) << r;
  }
  EXPECT_EQ(got[1], -1);
  EXPECT_TRUE(std::isnan(got_values[1]) && !testing::IsPoison(got_values[1]));
}

TEST(TopKCudaTest, RefusesBadArguments) {
  DeviceArray<float> l(100), v(100);
  DeviceArray<int32_t> i(100);
  EXPECT_TRUE(absl::IsInvalidArgument(TopK({}, l.get(), 10, 1, 10, 0, v.get(), i.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(TopK({}, l.get(), 10, 1, 10, 11, v.get(), i.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(TopK({}, l.get(), 9, 1, 10, 2, v.get(), i.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(TopK({}, l.get(), 10, -1, 10, 2, v.get(), i.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(TopK({}, nullptr, 10, 1, 10, 2, v.get(), i.get())));
  DeviceArray<float> big(5000);
  absl::Status s = TopK({}, big.get(), 5000, 1, 5000, 4097, v.get(), i.get());
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
}

// ---- Sample -------------------------------------------------------------------------------------

sampler::SamplingParams Params(float temperature, int32_t top_k, float top_p, float min_p) {
  sampler::SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  return p;
}

// Every combination the sampler's steps branch on.
std::vector<sampler::SamplingParams> ParamGrid() {
  return {
      Params(0.0f, 0, 1.0f, 0.0f),   Params(1.0f, 1, 1.0f, 0.0f),    Params(1.0f, 0, 1.0f, 0.0f),
      Params(0.7f, 0, 1.0f, 0.0f),   Params(1.5f, 0, 1.0f, 0.05f),   Params(1.0f, 5, 1.0f, 0.0f),
      Params(0.8f, 50, 1.0f, 0.0f),  Params(1.0f, 5000, 1.0f, 0.0f), Params(1.0f, 0, 0.9f, 0.0f),
      Params(0.6f, 0, 0.5f, 0.0f),   Params(1.0f, 40, 0.8f, 0.1f),   Params(1.2f, 0, 0.95f, 0.02f),
      Params(1.0f, 0, 0.999f, 0.0f), Params(1e-4f, 0, 1.0f, 0.0f)};
}

struct SampleCase {
  int64_t vocab;
  float sigma;
  int levels;
  int positions;  // Draws per params.
};

void PrintTo(const SampleCase& c, std::ostream* os) {
  *os << "vocab " << c.vocab << ", sigma " << c.sigma << ", levels " << c.levels;
}

class SampleCudaTest : public ::testing::TestWithParam<SampleCase> {};

TEST_P(SampleCudaTest, DrawsTheCpuSamplersTokens) {
  const SampleCase c = GetParam();
  const std::vector<sampler::SamplingParams> grid = ParamGrid();
  std::vector<SampleRow> rows;
  std::vector<float> logits;
  for (size_t g = 0; g < grid.size(); ++g) {
    for (int i = 0; i < c.positions; ++i) {
      const uint32_t seed = static_cast<uint32_t>(1000 * g + i);
      const std::vector<float> row = Logits(c.vocab, seed, c.sigma, c.levels);
      logits.insert(logits.end(), row.begin(), row.end());
      rows.push_back({grid[g], 0x5eed0000u + g, 17 + 3 * i});
    }
  }
  const int64_t n = static_cast<int64_t>(rows.size());
  sampler::KeyedSampler cpu_sampler;
  std::vector<int32_t> want(n);
  for (int64_t r = 0; r < n; ++r) {
    auto token = cpu_sampler.Sample(absl::MakeConstSpan(logits.data() + r * c.vocab, c.vocab),
                                    rows[r].params, rows[r].seed, rows[r].position);
    ASSERT_TRUE(token.ok()) << token.status();
    want[r] = *token;
  }
  DeviceArray<float> dl(logits);
  DeviceArray<uint8_t> workspace(SampleWorkspaceBytes(n, c.vocab));
  Context ctx;
  ctx.workspace = workspace.get();
  ctx.workspace_bytes = workspace.size();
  for (const SampleSums sums : {SampleSums::kCertified, SampleSums::kSequential}) {
    SCOPED_TRACE(static_cast<int>(sums));
    DeviceArray<int32_t> tokens(n);
    tokens.Poison();
    ASSERT_TRUE(Sample(ctx, dl.get(), c.vocab, c.vocab, rows.data(), n, tokens.get(), sums).ok());
    EXPECT_CUDA_CLEAN();
    const std::vector<int32_t> got = tokens.Download();
    for (int64_t r = 0; r < n; ++r) {
      EXPECT_EQ(got[r], want[r]) << "row " << r << " params #" << r / c.positions;
    }
    // Row invariance: each row sampled alone draws the same token.
    for (int64_t r = 0; r < n; r += 7) {
      DeviceArray<int32_t> one(1);
      ASSERT_TRUE(
          Sample(ctx, dl.get() + r * c.vocab, c.vocab, c.vocab, &rows[r], 1, one.get(), sums).ok());
      EXPECT_EQ(one.Download()[0], got[r]) << "row " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Logits, SampleCudaTest,
                         ::testing::Values(SampleCase{4096, 3.0f, 0, 4},      // Peaked.
                                           SampleCase{4096, 0.3f, 0, 4},      // Flat: long top_p.
                                           SampleCase{5000, 2.0f, 16, 3},     // Ties, +-0, -inf.
                                           SampleCase{151936, 2.0f, 0, 1}));  // A real vocab.

TEST(SampleCudaTest, AllMinusInfinityRowsPickTheFirstId) {
  std::vector<float> logits(300, -kInf);
  const std::vector<SampleRow> rows = {{Params(1.0f, 0, 0.9f, 0.0f), 1, 2}};
  DeviceArray<float> dl(logits);
  DeviceArray<uint8_t> workspace(SampleWorkspaceBytes(1, 300));
  Context ctx;
  ctx.workspace = workspace.get();
  ctx.workspace_bytes = workspace.size();
  DeviceArray<int32_t> token(1);
  ASSERT_TRUE(Sample(ctx, dl.get(), 300, 300, rows.data(), 1, token.get()).ok());
  auto want = sampler::KeyedSampler().Sample(logits, rows[0].params, 1, 2);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(token.Download()[0], *want);
}

TEST(SampleCudaTest, NanRowGetsMinusOneAndBadParamsAreRefused) {
  std::vector<float> logits = Logits(128, 131, 1.0f, 0);  // 2 rows of 64.
  logits[64 + 3] = NAN;
  const std::vector<SampleRow> rows = {{Params(1.0f, 0, 1.0f, 0.0f), 1, 5},
                                       {Params(1.0f, 0, 1.0f, 0.0f), 1, 6}};
  DeviceArray<float> dl(logits);
  DeviceArray<int32_t> tokens(2);
  ASSERT_TRUE(Sample({}, dl.get(), 64, 64, rows.data(), 2, tokens.get()).ok());
  EXPECT_CUDA_CLEAN();
  const std::vector<int32_t> got = tokens.Download();
  EXPECT_GE(got[0], 0);
  EXPECT_EQ(got[1], -1);

  std::vector<SampleRow> bad = rows;
  bad[1].params.top_p = 0.0f;
  absl::Status s = Sample({}, dl.get(), 64, 64, bad.data(), 2, tokens.get());
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("row 1"), std::string::npos) << s;
  bad = rows;
  bad[0].params.top_k = 3;  // Needs the workspace, which is missing.
  EXPECT_TRUE(absl::IsResourceExhausted(Sample({}, dl.get(), 64, 64, bad.data(), 2, tokens.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(Sample({}, dl.get(), 63, 64, rows.data(), 2, tokens.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(Sample({}, nullptr, 64, 64, rows.data(), 2, tokens.get())));
}

}  // namespace
}  // namespace twinspan::cuda
