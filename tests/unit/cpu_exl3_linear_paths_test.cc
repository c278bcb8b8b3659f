// cpu::Exl3Linear's two instruction sets (kernels/cpu/exl3_linear_steps.h) against a scalar
// reference written straight from the order documented in kernels/cpu/exl3_linear.h, bit for
// bit: every codebook, K = 1..8, plans with one and two K splits and the wide (1, 8) one, rows
// 1, 3, 16, 17 and 64, column views, bias, pool sizes 1 to 3, and activations that overflow fp16.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/exl3/dequant.h"
#include "common/exl3/hadamard.h"
#include "common/exl3/weight.h"
#include "common/safetensors/half.h"
#include "gtest/gtest.h"
#include "kernels/cpu/exl3_linear.h"
#include "kernels/cpu/exl3_linear_steps.h"
#include "kernels/cpu/parallel.h"
#include "tests/unit/formats_exl3_fixture.h"

namespace twinspan::cpu {
namespace {

using exl3::Codebook;

// y = x W by the header's three steps, one scalar at a time.
std::vector<float> Reference(const std::vector<float>& x, int64_t rows, const exl3::Weight& w) {
  const int64_t k = w.k(), n = w.n();
  const std::vector<float> w_hat = exl3::DecodeRotated(w);  // [k, n]
  const int64_t splits = w.plan().k_splits, warps = w.plan().warps;
  const int64_t tiles = k / 16 / (splits * warps);
  std::vector<float> y(static_cast<size_t>(rows * n));
  std::vector<float> xh(k), yh(n);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t i = 0; i < k; ++i) xh[i] = x[m * k + i] * w.suh()[i];
    for (int64_t i = 0; i < k; i += 128) exl3::Hadamard128(xh.data() + i);
    for (float& v : xh) v = HalfToFloat(FloatToHalf(v));
    for (int64_t c = 0; c < n; ++c) {
      float total = 0;
      for (int64_t s = 0; s < splits; ++s) {
        float split = 0;
        for (int64_t wk = 0; wk < warps; ++wk) {
          const int64_t g = s * warps + wk;
          float partial = 0;
          for (int64_t i = g * tiles * 16; i < (g + 1) * tiles * 16; ++i) {
            partial += xh[i] * w_hat[i * n + c];
          }
          split = wk == 0 ? partial : split + partial;
        }
        total = s == 0 ? split : total + split;
      }
      yh[c] = total;
    }
    for (int64_t b = 0; b < n; b += 128) {
      exl3::Hadamard128(yh.data() + b);
      for (int64_t c = b; c < b + 128; ++c) {
        float out = yh[c] * w.svh()[c];
        if (w.has_bias()) out += w.bias()[c];
        y[m * n + c] = out;
      }
    }
  }
  return y;
}

// Runs `w` on every instruction set and pool size (null, 1, 2, 3 threads) at a padded stride and
// expects the reference's bits.
void ExpectReferenceBits(const exl3::Weight& w, const std::vector<float>& x, int64_t rows) {
  const std::vector<float> want = Reference(x, rows, w);
  const int64_t stride = w.n() + 3;
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int threads = 1; threads <= 3; ++threads) {
    pools.push_back(std::make_unique<ThreadPool>(threads));
  }
  for (Isa isa : RunnableIsas()) {
    std::vector<Context> contexts = {Context{nullptr, isa}};
    for (const auto& pool : pools) contexts.push_back(Context{pool.get(), isa});
    for (const Context& ctx : contexts) {
      SCOPED_TRACE(std::string(IsaName(isa)) + " threads " +
                   std::to_string(ctx.pool == nullptr ? 0 : ctx.pool->num_threads()));
      std::vector<float> y(static_cast<size_t>(rows * stride), -7.0f);
      const Exl3LinearOutput out{&w, y.data(), stride};
      ASSERT_TRUE(Exl3Linears(ctx, x.data(), w.k(), rows, &out, 1).ok());
      for (int64_t m = 0; m < rows; ++m) {
        ASSERT_EQ(std::memcmp(y.data() + m * stride, want.data() + m * w.n(), w.n() * 4), 0)
            << "row " << m << " of " << rows;
        ASSERT_EQ(y[m * stride + w.n()], -7.0f);  // The stride's padding is left alone.
      }
    }
  }
}

class Exl3LinearPathsTest : public ::testing::Test {
 protected:
  exl3::Weight Load(const testing::SyntheticLinear& spec) {
    const std::string file = spec.prefix + "_" + std::to_string(checkpoints_.size());
    checkpoints_.push_back(testing::OpenTensors(file + ".safetensors", SyntheticTensors(spec)));
    EXPECT_NE(checkpoints_.back(), nullptr);
    absl::StatusOr<exl3::Weight> w = exl3::Weight::Load(*checkpoints_.back(), spec.prefix);
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *w : exl3::Weight();
  }

  std::vector<std::unique_ptr<Checkpoint>> checkpoints_;
};

TEST_F(Exl3LinearPathsTest, EveryCodebookAndKMatchesTheReferenceBitForBit) {
  const Codebook codebooks[] = {Codebook::k3Inst, Codebook::kMcg, Codebook::kMul1};
  uint32_t seed = 100;
  for (Codebook codebook : codebooks) {
    for (int bits = 1; bits <= 8; ++bits) {
      SCOPED_TRACE(std::string(exl3::CodebookName(codebook)) + " K " + std::to_string(bits));
      // 256 x 384 plans (1, 4), 4 tiles a group; bias on odd K.
      const exl3::Weight w = Load({.prefix = "lin",
                                   .k = 256,
                                   .n = 384,
                                   .bits = bits,
                                   .codebook = codebook,
                                   .bias = bits % 2 == 1,
                                   .seed = ++seed});
      ASSERT_EQ(w.plan(), (exl3::Plan{1, 4}));
      for (int64_t rows : {1, 3, 7, 16, 17, 64}) {
        SCOPED_TRACE("rows " + std::to_string(rows));
        ExpectReferenceBits(w, testing::RandomRows(rows, w.k(), ++seed), rows);
      }
      // A view of the middle block reduces as its parent.
      absl::StatusOr<exl3::Weight> view = w.columns(128, 128);
      ASSERT_TRUE(view.ok());
      ExpectReferenceBits(*view, testing::RandomRows(17, w.k(), ++seed), 17);
    }
  }
}

TEST_F(Exl3LinearPathsTest, TwoSplitsAndTheWidePlanMatchTheReference) {
  // 1024 x 256: (2, 4), 8 tiles a group; its groups are split over threads.
  const exl3::Weight down =
      Load({.prefix = "down", .k = 1024, .n = 256, .bits = 4, .codebook = Codebook::kMul1});
  ASSERT_EQ(down.plan(), (exl3::Plan{2, 4}));
  for (int64_t rows : {1, 16}) ExpectReferenceBits(down, testing::RandomRows(rows, 1024, 7), rows);
  // 1024 x 64 blocks: (1, 8), the head's plan, and a 3-block view of its tail.
  const exl3::Weight head = Load(
      {.prefix = "head", .k = 1024, .n = int64_t{64} * 128, .bits = 6, .codebook = Codebook::kMcg});
  ASSERT_EQ(head.plan(), (exl3::Plan{1, 8}));
  absl::StatusOr<exl3::Weight> tail = head.columns(int64_t{61} * 128, int64_t{3} * 128);
  ASSERT_TRUE(tail.ok());
  ExpectReferenceBits(*tail, testing::RandomRows(3, 1024, 8), 3);
  ExpectReferenceBits(head, testing::RandomRows(2, 1024, 9), 2);
}

TEST_F(Exl3LinearPathsTest, ActivationsThatOverflowFp16KeepTheReferenceBits) {
  const exl3::Weight w =
      Load({.prefix = "big", .k = 256, .n = 256, .bits = 3, .codebook = Codebook::k3Inst});
  std::vector<float> x = testing::RandomRows(5, 256, 11);
  for (int64_t i = 0; i < 256; ++i) x[i] *= 4e7f;  // Row 0: inf after the rotation, then NaN.
  for (int64_t i = 256; i < 512; ++i) x[i] = i % 2 == 0 ? 6.5e6f : -6.5e6f;
  x[2 * 256 + 5] = std::numeric_limits<float>::infinity();
  x[3 * 256 + 7] = 1e-30f;  // fp16 subnormals and zeros after the rotation.
  ExpectReferenceBits(w, x, 5);
}

TEST_F(Exl3LinearPathsTest, StripDecodesAgreeOnEveryState) {
  // 64 x 64 tiles of random K = 8 windows cover each of the 65536 states (1M draws) per codebook.
  if (!HasAvx2(BestIsa())) GTEST_SKIP() << "no AVX2 path on this CPU";
  for (Codebook codebook : {Codebook::k3Inst, Codebook::kMcg, Codebook::kMul1}) {
    for (int bits : {1, 5, 8}) {
      const exl3::Weight w =
          Load({.prefix = "dec", .k = 1024, .n = 1024, .bits = bits, .codebook = codebook});
      std::vector<float> a(exl3_steps::kStripFloats), b(exl3_steps::kStripFloats);
      for (int64_t tk = 0; tk < w.k() / 16; ++tk) {
        for (int64_t block = 0; block < w.n() / 128; ++block) {
          exl3_steps::DecodeStrip(Isa::kPortable, w, tk, block, a.data());
          exl3_steps::DecodeStrip(Isa::kAvx2, w, tk, block, b.data());
          ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0)
              << exl3::CodebookName(codebook) << " K " << bits << " strip " << tk << ", " << block;
        }
      }
    }
  }
}

TEST_F(Exl3LinearPathsTest, RotationsAgreeOnAnyFloatBits) {
  // Random bit patterns: NaNs with payloads, infinities, subnormals, values past fp16's range.
  // Same bits, except that a NaN may keep another input NaN's payload (exl3_linear_steps.h).
  if (!HasAvx2(BestIsa())) GTEST_SKIP() << "no AVX2 path on this CPU";
  std::mt19937 rng(3);
  constexpr int64_t kK = 512;
  std::vector<float> x(kK), suh(kK, 1.0f), a(kK), b(kK);
  for (int trial = 0; trial < 2000; ++trial) {
    for (float& v : x) {
      const uint32_t bits = rng();
      // Mostly moderate exponents, so that most blocks stay finite after the rotation.
      v = trial % 4 == 0 ? std::bit_cast<float>(bits)
                         : std::ldexp(static_cast<float>(static_cast<int32_t>(bits)) * 0x1p-31f,
                                      static_cast<int>(rng() % 48) - 30);
    }
    exl3_steps::RotateRow(Isa::kPortable, x.data(), suh.data(), kK, a.data());
    exl3_steps::RotateRow(Isa::kAvx2, x.data(), suh.data(), kK, b.data());
    for (int64_t i = 0; i < kK; ++i) {
      ASSERT_TRUE(std::bit_cast<uint32_t>(a[i]) == std::bit_cast<uint32_t>(b[i]) ||
                  (std::isnan(a[i]) && std::isnan(b[i])))
          << "trial " << trial << " i " << i << " " << std::bit_cast<uint32_t>(a[i]) << " "
          << std::bit_cast<uint32_t>(b[i]);
    }
  }
}

TEST_F(Exl3LinearPathsTest, OneCallForSeveralWeightsGivesEachItsOwnBits) {
  // q, k and v of one input (own suh each) and two views of one head (one shared rotation).
  const exl3::Weight q = Load({.prefix = "q", .k = 256, .n = 384, .bits = 4, .seed = 1});
  const exl3::Weight k = Load({.prefix = "k", .k = 256, .n = 128, .bits = 4, .seed = 2});
  const exl3::Weight v = Load({.prefix = "v", .k = 256, .n = 128, .bits = 5, .seed = 3});
  const exl3::Weight head = Load({.prefix = "h", .k = 256, .n = 1024, .bits = 6, .seed = 4});
  const exl3::Weight span0 = *head.columns(0, 256), span1 = *head.columns(768, 256);
  const exl3::Weight* weights[] = {&q, &k, &v, &span0, &span1};
  constexpr int64_t kRows = 16;
  const std::vector<float> x = testing::RandomRows(kRows, 256, 12);
  ThreadPool pool(2);
  for (Isa isa : RunnableIsas()) {
    SCOPED_TRACE(IsaName(isa));
    std::vector<std::vector<float>> ys;
    std::vector<Exl3LinearOutput> outs;
    for (const exl3::Weight* w : weights) ys.emplace_back(kRows * w->n());
    for (size_t i = 0; i < ys.size(); ++i)
      outs.push_back({weights[i], ys[i].data(), weights[i]->n()});
    ASSERT_TRUE(Exl3Linears(Context{&pool, isa}, x.data(), 256, kRows, outs.data(),
                            static_cast<int>(outs.size()))
                    .ok());
    for (size_t i = 0; i < ys.size(); ++i) {
      const std::vector<float> want = Reference(x, kRows, *weights[i]);
      EXPECT_EQ(std::memcmp(ys[i].data(), want.data(), want.size() * 4), 0) << weights[i]->name();
    }
  }
}

TEST_F(Exl3LinearPathsTest, SeveralWeightsRefuseDifferentKOrANullWeight) {
  const exl3::Weight a = Load({.prefix = "a", .k = 256, .n = 128});
  const exl3::Weight b = Load({.prefix = "b", .k = 384, .n = 128});
  const std::vector<float> x = testing::RandomRows(1, 384, 1);
  std::vector<float> ya(128), yb(128);
  const Exl3LinearOutput outs[] = {{&a, ya.data(), 128}, {&b, yb.data(), 128}};
  const absl::Status status = Exl3Linears(Context{}, x.data(), 384, 1, outs, 2);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("\"b\""), std::string::npos) << status;
  const Exl3LinearOutput null_weight[] = {{nullptr, ya.data(), 128}};
  EXPECT_EQ(Exl3Linears(Context{}, x.data(), 384, 1, null_weight, 1).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::cpu
