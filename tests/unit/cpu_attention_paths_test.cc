// cpu::Attention on each instruction set against the scalar order of attention_steps.h, written
// out here one row and one kv head at a time (the op's first form), bit for bit: masks, windows,
// chunk edges, group sizes, head dims with and without a tail, bf16 and f32 caches, row counts and
// pool sizes. And ExpAvx2 against std::exp, bit for bit.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/exp_avx2.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::cpu {
namespace {

std::vector<float> Normal(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

float ScalarDot(const float* a, const float* b, int64_t n) {  // dot.h's order, lane by lane.
  float lane[8] = {};
  const int64_t n8 = n - n % 8;
  for (int64_t i = 0; i < n8; i += 8) {
    for (int l = 0; l < 8; ++l) lane[l] = lane[l] + a[i + l] * b[i + l];
  }
  const float s[4] = {lane[0] + lane[4], lane[1] + lane[5], lane[2] + lane[6], lane[3] + lane[7]};
  float sum = (s[0] + s[2]) + (s[1] + s[3]);
  for (int64_t i = n8; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// One row's `group` heads over keys [lo, hi) in chunks of kAttentionKeyChunk positions.
void ReferenceGroup(const AttentionShape& shape, const float* q, int64_t group, int64_t lo,
                    int64_t hi, const KvCache& kv, int64_t kv_head, float* out) {
  const int64_t d = shape.head_dim;
  std::vector<float> key(d), value(d);
  for (int64_t g = 0; g < group; ++g) {
    float run_max = -std::numeric_limits<float>::infinity(), run_sum = 0.0f;
    std::vector<float> acc(d, 0.0f);
    for (int64_t c0 = lo - lo % kAttentionKeyChunk; c0 < hi; c0 += kAttentionKeyChunk) {
      const int64_t a = std::max(lo, c0), b = std::min(hi, c0 + kAttentionKeyChunk);
      std::vector<float> s;
      float chunk_max = -std::numeric_limits<float>::infinity();
      for (int64_t k = a; k < b; ++k) {
        kv.ReadKey(k, kv_head, key.data());
        s.push_back(ScalarDot(q + g * d, key.data(), d) * shape.scale);
        chunk_max = std::max(chunk_max, s.back());
      }
      float chunk_sum = 0.0f;
      std::vector<float> chunk(d, 0.0f);
      for (int64_t k = a; k < b; ++k) {
        const float p = std::exp(s[k - a] - chunk_max);
        chunk_sum += p;
        kv.ReadValue(k, kv_head, value.data());
        for (int64_t i = 0; i < d; ++i) chunk[i] = chunk[i] * 1.0f + value[i] * p;
      }
      const float new_max = std::max(run_max, chunk_max);
      const float old_scale = std::exp(run_max - new_max);
      const float chunk_scale = std::exp(chunk_max - new_max);
      run_sum = run_sum * old_scale + chunk_sum * chunk_scale;
      for (int64_t i = 0; i < d; ++i) acc[i] = acc[i] * old_scale + chunk[i] * chunk_scale;
      run_max = new_max;
    }
    const float inv = 1.0f / run_sum;
    for (int64_t i = 0; i < d; ++i) out[g * d + i] = acc[i] * inv;
  }
}

struct Case {
  int64_t heads, kv_heads, head_dim;
  KvDtype dtype;
  AttentionMask mask;
  int64_t window, num_keys, rows;
};

std::string Name(const Case& c) {
  return std::to_string(c.heads) + "/" + std::to_string(c.kv_heads) + "x" +
         std::to_string(c.head_dim) + (c.dtype == KvDtype::kBF16 ? " bf16" : " f32") +
         (c.mask == AttentionMask::kCausal ? " causal" : " full") + " window " +
         std::to_string(c.window) + " keys " + std::to_string(c.num_keys) + " rows " +
         std::to_string(c.rows);
}

TEST(AttentionPathsTest, EveryInstructionSetGivesTheScalarOrdersBits) {
  const std::vector<Isa> isas = RunnableIsas();
  ThreadPool two(2), three(3);
  const Case cases[] = {
      {6, 2, 64, KvDtype::kBF16, AttentionMask::kCausal, 0, 528, 16},  // The demo's verify.
      {6, 2, 64, KvDtype::kBF16, AttentionMask::kCausal, 0, 300, 1},
      {6, 2, 64, KvDtype::kBF16, AttentionMask::kFull, 0, 272, 16},     // The demo drafter's block.
      {6, 2, 64, KvDtype::kF32, AttentionMask::kCausal, 0, 260, 260},   // A prefill, chunk edges.
      {4, 4, 20, KvDtype::kBF16, AttentionMask::kCausal, 0, 129, 5},    // A tail of 4 dims.
      {8, 2, 80, KvDtype::kF32, AttentionMask::kCausal, 100, 400, 17},  // Sliding window.
      {3, 1, 128, KvDtype::kBF16, AttentionMask::kFull, 50, 300, 9},    // Full mask with a window.
      {2, 1, 4, KvDtype::kBF16, AttentionMask::kCausal, 0, 40, 3},      // No vector of dims.
      {24, 4, 256, KvDtype::kBF16, AttentionMask::kCausal, 0, 700, 3},  // The 27B's heads.
  };
  uint32_t seed = 5;
  for (const Case& c : cases) {
    SCOPED_TRACE(Name(c));
    const int64_t row = c.kv_heads * c.head_dim, width = c.heads * c.head_dim;
    auto kv = KvCache::Create(c.dtype, c.num_keys + 3, c.kv_heads, c.head_dim);
    ASSERT_TRUE(kv.ok());
    const std::vector<float> k = Normal(c.num_keys * row, ++seed, 1.0f);
    const std::vector<float> v = Normal(c.num_keys * row, ++seed, 1.0f);
    for (int64_t p = 0; p < c.num_keys; ++p) {
      ASSERT_TRUE(kv->Write(p, &k[p * row], &v[p * row]).ok());
    }
    std::vector<int64_t> positions(c.rows);
    for (int64_t r = 0; r < c.rows; ++r) {
      positions[r] =
          c.mask == AttentionMask::kCausal ? c.num_keys - c.rows + r : (r * 37) % c.num_keys;
    }
    const int64_t q_stride = width + 16, out_stride = width + 8;
    const std::vector<float> q = Normal(c.rows * q_stride, ++seed, 3.0f);  // Peaked softmaxes.
    const AttentionShape shape{c.heads,    c.kv_heads,
                               c.head_dim, 1.0f / std::sqrt(static_cast<float>(c.head_dim)),
                               c.mask,     c.window};
    const int64_t group = c.heads / c.kv_heads;
    std::vector<float> want(c.rows * out_stride, -1.0f);
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t h = 0; h < c.kv_heads; ++h) {
        const int64_t p = positions[r];
        int64_t lo = c.window > 0 ? std::max<int64_t>(0, p - c.window + 1) : 0;
        int64_t hi = c.mask == AttentionMask::kCausal
                         ? p + 1
                         : (c.window > 0 ? std::min(c.num_keys, p + c.window) : c.num_keys);
        ReferenceGroup(shape, &q[r * q_stride + h * group * c.head_dim], group, lo, hi, *kv, h,
                       &want[r * out_stride + h * group * c.head_dim]);
      }
    }
    for (Isa isa : isas) {
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two, &three}) {
        SCOPED_TRACE(std::string(IsaName(isa)) + " threads " +
                     std::to_string(pool == nullptr ? 1 : pool->num_threads()));
        std::vector<float> got(c.rows * out_stride, -1.0f);
        ASSERT_TRUE(Attention(Context{pool, isa}, shape, q.data(), q_stride, positions.data(),
                              c.rows, *kv, c.num_keys, got.data(), out_stride)
                        .ok());
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
      }
    }
  }
}

#if defined(__x86_64__)
// Every lane of ExpAvx2 over `bits` (as floats) against std::exp; returns the first mismatch's
// input bits, or nothing.
testing::AssertionResult ExpMatches(const std::vector<uint32_t>& bits) {
  std::vector<float> x(bits.size()), y(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) x[i] = std::bit_cast<float>(bits[i]);
  ExpAvx2(x.data(), static_cast<int64_t>(x.size()), y.data());
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = std::exp(x[i]);
    if (std::bit_cast<uint32_t>(want) != std::bit_cast<uint32_t>(y[i]) &&
        !(std::isnan(want) && std::isnan(y[i]))) {
      return testing::AssertionFailure()
             << "x bits 0x" << std::hex << bits[i] << ": exp " << want << ", ExpAvx2 " << y[i];
    }
  }
  return testing::AssertionSuccess();
}

TEST(ExpAvx2Test, MatchesStdExpOnSpreadAndEdgeInputs) {
  if (!HasAvx2(BestIsa())) GTEST_SKIP() << "no AVX2 + FMA here";
  std::vector<uint32_t> bits;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 1021) bits.push_back(static_cast<uint32_t>(b));
  for (float f : {0.0f,
                  -0.0f,
                  1.0f,
                  -1.0f,
                  88.0f,
                  -88.0f,
                  87.99999f,
                  -87.99999f,
                  88.72f,
                  88.73f,
                  -103.2f,
                  -103.3f,
                  -103.9f,
                  -104.0f,
                  1e-30f,
                  -1e-30f,
                  std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::lowest()}) {
    bits.push_back(std::bit_cast<uint32_t>(f));
  }
  bits.push_back(0xff800001u);  // A NaN with the sign set.
  EXPECT_TRUE(ExpMatches(bits));
}

// Every float: ~20 s. Run by hand with --gtest_also_run_disabled_tests after touching exp_avx2.
TEST(ExpAvx2Test, DISABLED_MatchesStdExpOnEveryFloat) {
  if (!HasAvx2(BestIsa())) GTEST_SKIP() << "no AVX2 + FMA here";
  std::vector<uint32_t> bits(uint64_t{1} << 24);
  for (uint64_t base = 0; base < (uint64_t{1} << 32); base += bits.size()) {
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint32_t>(base + i);
    ASSERT_TRUE(ExpMatches(bits));
  }
}
#endif

}  // namespace
}  // namespace twinspan::cpu
