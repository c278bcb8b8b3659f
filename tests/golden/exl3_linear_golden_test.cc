// Reference: exllamav3 v1.4.1 (commit 4f8ad01), shared/golden/exl3_linear/: y_ref_fp32 is
// x @ w_dense_fp32 in float64. Our CPU forward must be within rel_fro 2e-3 (the fp16-activation
// tolerance) on all 63 cases, and row-invariant: the same row gives the same bits alone or with
// others, on any thread count.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/exl3/weight.h"
#include "common/safetensors/checkpoint.h"
#include "gtest/gtest.h"
#include "kernels/cpu/exl3_linear.h"
#include "tests/testing/golden.h"

namespace twinspan::cpu {
namespace {

constexpr const char* kCodebooks[] = {"3inst", "mcg", "mul1"};
constexpr int kBits[] = {1, 2, 3, 4, 5, 6, 8};
constexpr const char* kShapeFiles[] = {"exl3_linear_256x384.safetensors",
                                       "exl3_linear_512x256.safetensors",
                                       "exl3_linear_1024x512.safetensors"};

double RelFro(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (double{a[i]} - ref[i]) * (double{a[i]} - ref[i]);
    den += double{ref[i]} * ref[i];
  }
  return std::sqrt(num / den);
}

TEST(Exl3LinearGoldenTest, ForwardMatchesReferenceAndIsRowInvariant) {
  int cases = 0;
  double worst = 0;
  for (const char* file : kShapeFiles) {
    absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt =
        Checkpoint::Open(testing::GoldenPath(std::string("exl3_linear/") + file));
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    absl::StatusOr<TensorView> x_view = (*ckpt)->Get("x");
    ASSERT_TRUE(x_view.ok());
    absl::StatusOr<std::vector<float>> x = ToFloat(*x_view);
    ASSERT_TRUE(x.ok());
    const int64_t rows = x_view->shape[0];
    for (const char* cb : kCodebooks) {
      for (int bits : kBits) {
        const std::string prefix = std::string(cb) + ".K" + std::to_string(bits);
        SCOPED_TRACE(std::string(file) + " " + prefix);
        absl::StatusOr<exl3::Weight> w = exl3::Weight::Load(**ckpt, prefix);
        ASSERT_TRUE(w.ok()) << w.status();
        absl::StatusOr<TensorView> ref_view = (*ckpt)->Get(prefix + ".y_ref_fp32");
        ASSERT_TRUE(ref_view.ok());
        const std::vector<float> ref = *ToFloat(*ref_view);
        const int64_t n = w->n();

        std::vector<float> y(rows * n);
        ASSERT_TRUE(Exl3Linear(x->data(), w->k(), rows, *w, y.data(), n, 2).ok());
        const double err = RelFro(y, ref);
        EXPECT_LE(err, 2e-3);
        worst = std::max(worst, err);

        // Each row alone, single-threaded, written at a wider stride: identical bits.
        for (int64_t m = 0; m < rows; ++m) {
          std::vector<float> one(n + 7, -1.0f);
          ASSERT_TRUE(Exl3Linear(x->data() + m * w->k(), w->k(), 1, *w, one.data(), n + 7, 1).ok());
          EXPECT_EQ(std::memcmp(one.data(), y.data() + m * n, n * sizeof(float)), 0) << "row " << m;
        }
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 63);
  RecordProperty("worst_rel_fro", std::to_string(worst));
}

}  // namespace
}  // namespace twinspan::cpu
