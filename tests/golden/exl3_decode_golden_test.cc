// Reference: exllamav3 v1.4.1 (commit 4f8ad01) quantize_exl3 + exllamav3_ext (ext.decode,
// ext.reconstruct, preapply_had_l/r), recorded in shared/golden/exl3_linear/. Codebook tables,
// the tile permutation and w_hat must match bit for bit; w_dense_fp32 to rel_fro 1e-5.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/exl3/codebook.h"
#include "common/exl3/dequant.h"
#include "common/exl3/tile_decode.h"
#include "common/exl3/weight.h"
#include "common/safetensors/checkpoint.h"
#include "common/safetensors/half.h"
#include "gtest/gtest.h"
#include "tests/testing/golden.h"

namespace twinspan::exl3 {
namespace {

constexpr Codebook kCodebooks[] = {Codebook::k3Inst, Codebook::kMcg, Codebook::kMul1};
constexpr int kBits[] = {1, 2, 3, 4, 5, 6, 8};
constexpr const char* kShapeFiles[] = {"exl3_linear_256x384.safetensors",
                                       "exl3_linear_512x256.safetensors",
                                       "exl3_linear_1024x512.safetensors"};

std::unique_ptr<Checkpoint> OpenGolden(const std::string& relative) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt =
      Checkpoint::Open(testing::GoldenPath(relative));
  EXPECT_TRUE(ckpt.ok()) << ckpt.status();
  return ckpt.ok() ? *std::move(ckpt) : nullptr;
}

double RelFro(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (double{a[i]} - ref[i]) * (double{a[i]} - ref[i]);
    den += double{ref[i]} * ref[i];
  }
  return std::sqrt(num / den);
}

TEST(Exl3CodebookGoldenTest, EveryStateOfEveryCodebookMatchesExtDecode) {
  std::unique_ptr<Checkpoint> ckpt = OpenGolden("exl3_linear/exl3_codebook_lut.safetensors");
  ASSERT_NE(ckpt, nullptr);
  for (Codebook cb : kCodebooks) {
    const std::string name = "lut_" + std::string(CodebookName(cb));
    absl::StatusOr<TensorView> lut = ckpt->Get(name);
    ASSERT_TRUE(lut.ok()) << lut.status();
    ASSERT_EQ(lut->dtype, DType::kF16);
    ASSERT_EQ(lut->numel(), 65536);
    int mismatches = 0;
    uint64_t fnv = 0xcbf29ce484222325ull;
    for (uint32_t s = 0; s < 65536; ++s) {
      uint16_t expected;
      std::memcpy(&expected, lut->data + 2 * s, 2);
      const uint16_t got = CodebookHalf(cb, static_cast<uint16_t>(s));
      if (got != expected && ++mismatches < 5) {
        ADD_FAILURE() << name << " state " << s << ": got " << got << " want " << expected;
      }
      for (int byte = 0; byte < 2; ++byte) {
        fnv = (fnv ^ ((got >> (8 * byte)) & 0xff)) * 0x100000001b3ull;
      }
    }
    EXPECT_EQ(mismatches, 0) << name;
    const uint64_t want_fnv = cb == Codebook::k3Inst ? 0xfad431e7e9266898ull
                              : cb == Codebook::kMcg ? 0x7bb36b05a3b885a7ull
                                                     : 0x55e1c748ed9f0cd7ull;
    EXPECT_EQ(fnv, want_fnv) << name;
  }
}

TEST(Exl3CodebookGoldenTest, TensorCorePermutationMatches) {
  std::unique_ptr<Checkpoint> ckpt = OpenGolden("exl3_linear/exl3_codebook_lut.safetensors");
  ASSERT_NE(ckpt, nullptr);
  absl::StatusOr<TensorView> perm = ckpt->Get("tensor_core_perm");
  ASSERT_TRUE(perm.ok()) << perm.status();
  absl::StatusOr<std::vector<int64_t>> values = ToInt64(*perm);
  ASSERT_TRUE(values.ok());
  ASSERT_EQ(values->size(), 256u);
  for (int p = 0; p < 256; ++p) EXPECT_EQ((*values)[p], kTensorCorePerm[p]) << "position " << p;
}

// Every one of the 63 cases: shape, K and codebook as stored; w_hat bit-exact where stored;
// the dense weight within 1e-5 where stored.
TEST(Exl3LinearGoldenTest, DecodeMatchesExllamav3) {
  int cases = 0, w_hat_checked = 0, dense_checked = 0;
  for (const char* file : kShapeFiles) {
    std::unique_ptr<Checkpoint> ckpt = OpenGolden(std::string("exl3_linear/") + file);
    ASSERT_NE(ckpt, nullptr);
    absl::StatusOr<TensorView> w_orig = ckpt->Get("W");
    ASSERT_TRUE(w_orig.ok());
    const int64_t k = w_orig->shape[0], n = w_orig->shape[1];
    for (Codebook cb : kCodebooks) {
      for (int bits : kBits) {
        const std::string prefix = std::string(CodebookName(cb)) + ".K" + std::to_string(bits);
        SCOPED_TRACE(std::string(file) + " " + prefix);
        absl::StatusOr<Weight> weight = Weight::Load(*ckpt, prefix);
        ASSERT_TRUE(weight.ok()) << weight.status();
        ++cases;
        EXPECT_EQ(weight->k(), k);
        EXPECT_EQ(weight->n(), n);
        EXPECT_EQ(weight->bits(), bits);
        EXPECT_EQ(weight->codebook(), cb);
        EXPECT_FALSE(weight->has_bias());
        std::vector<float> w_hat = DecodeRotated(*weight);
        if (const TensorView* ref = ckpt->Find(prefix + ".w_hat")) {
          ++w_hat_checked;
          ASSERT_EQ(ref->numel(), k * n);
          int64_t mismatches = 0;
          for (int64_t i = 0; i < k * n; ++i) {
            uint16_t expected;
            std::memcpy(&expected, ref->data + 2 * i, 2);
            if (FloatToHalf(w_hat[i]) != expected) ++mismatches;
          }
          EXPECT_EQ(mismatches, 0);
        }
        if (const TensorView* ref = ckpt->Find(prefix + ".w_dense_fp32")) {
          ++dense_checked;
          absl::StatusOr<std::vector<float>> dense_ref = ToFloat(*ref);
          ASSERT_TRUE(dense_ref.ok());
          EXPECT_LE(RelFro(DequantizeDense(*weight), *dense_ref), 1e-5);
        }
      }
    }
  }
  EXPECT_EQ(cases, 63);
  EXPECT_EQ(w_hat_checked, 21 + 21 + 3);
  EXPECT_EQ(dense_checked, 9 + 3);
}

}  // namespace
}  // namespace twinspan::exl3
