// Helpers for the target's golden tests: reference tensors by name and the README's rel_fro.
#ifndef TWINSPAN_TESTS_GOLDEN_TARGET_GOLDEN_UTIL_H_
#define TWINSPAN_TESTS_GOLDEN_TARGET_GOLDEN_UTIL_H_

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/safetensors/checkpoint.h"
#include "gtest/gtest.h"

namespace twinspan::target::testing {

// ||a - ref||_F / ||ref||_F over the whole tensor (sizes must match).
inline double RelFro(const std::vector<float>& a, const std::vector<float>& ref) {
  EXPECT_EQ(a.size(), ref.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < std::min(a.size(), ref.size()); ++i) {
    diff += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  return std::sqrt(diff / norm);
}

inline double MaxAbs(const std::vector<float>& a, const std::vector<float>& ref) {
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), ref.size()); ++i) {
    worst = std::max(worst, std::fabs(double(a[i]) - ref[i]));
  }
  return worst;
}

// A reference file's tensors as floats / int ids; failures are test failures.
class ReferenceFile {
 public:
  explicit ReferenceFile(const std::string& path) {
    auto opened = Checkpoint::Open(path);
    EXPECT_TRUE(opened.ok()) << opened.status();
    if (opened.ok()) checkpoint_ = std::move(*opened);
  }
  bool ok() const { return checkpoint_ != nullptr; }

  std::vector<float> Floats(const std::string& name) const {
    auto view = checkpoint_->Get(name);
    EXPECT_TRUE(view.ok()) << view.status();
    if (!view.ok()) return {};
    auto values = ToFloat(*view);
    EXPECT_TRUE(values.ok()) << values.status();
    return values.ok() ? *values : std::vector<float>{};
  }

  std::vector<int32_t> Ids(const std::string& name) const {
    auto view = checkpoint_->Get(name);
    EXPECT_TRUE(view.ok()) << view.status();
    if (!view.ok()) return {};
    auto values = ToInt64(*view);
    EXPECT_TRUE(values.ok()) << values.status();
    if (!values.ok()) return {};
    return std::vector<int32_t>(values->begin(), values->end());
  }

 private:
  std::unique_ptr<Checkpoint> checkpoint_;
};

}  // namespace twinspan::target::testing

#endif  // TWINSPAN_TESTS_GOLDEN_TARGET_GOLDEN_UTIL_H_
