// Helpers shared by the drafter golden tests: reading reference tensors and comparing them.
#ifndef TWINSPAN_TESTS_GOLDEN_DRAFTER_GOLDEN_TENSORS_H_
#define TWINSPAN_TESTS_GOLDEN_DRAFTER_GOLDEN_TENSORS_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/safetensors/checkpoint.h"
#include "gtest/gtest.h"

namespace twinspan::testing {

inline std::vector<float> Floats(const Checkpoint& file, const std::string& name) {
  auto view = file.Get(name);
  EXPECT_TRUE(view.ok()) << view.status();
  if (!view.ok()) return {};
  auto values = ToFloat(*view);
  EXPECT_TRUE(values.ok()) << values.status();
  return values.ok() ? *values : std::vector<float>{};
}

inline std::vector<int64_t> Ints(const Checkpoint& file, const std::string& name) {
  auto view = file.Get(name);
  EXPECT_TRUE(view.ok()) << view.status();
  if (!view.ok()) return {};
  auto values = ToInt64(*view);
  EXPECT_TRUE(values.ok()) << values.status();
  return values.ok() ? *values : std::vector<int64_t>{};
}

// ||a - ref||_F / ||ref||_F.
inline double RelFro(const float* a, const float* ref, size_t n) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < n; ++i) {
    diff += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  return std::sqrt(diff / norm);
}

inline void ExpectRelFro(const std::vector<float>& got, const std::vector<float>& ref, double tol,
                         const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  ASSERT_FALSE(ref.empty()) << what;
  EXPECT_LE(RelFro(got.data(), ref.data(), ref.size()), tol) << what;
}

// Slice `index` of a tensor stored as [N, rest...].
inline std::vector<float> Slice(const std::vector<float>& all, size_t count, size_t index) {
  const size_t each = all.size() / count;
  return {all.begin() + index * each, all.begin() + (index + 1) * each};
}

}  // namespace twinspan::testing

#endif  // TWINSPAN_TESTS_GOLDEN_DRAFTER_GOLDEN_TENSORS_H_
