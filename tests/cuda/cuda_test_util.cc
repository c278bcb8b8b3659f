#include "tests/cuda/cuda_test_util.h"

#include <cmath>
#include <limits>

namespace twinspan::cuda::testing {

std::vector<float> RandomFloats(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> out(n);
  for (float& v : out) {
    v = dist(rng);
    if (std::fabs(v) < scale * 1e-3f) v = v < 0 ? -scale * 1e-3f : scale * 1e-3f;
  }
  return out;
}

size_t BitMismatches(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  size_t bad = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) bad += Bits(a[i]) != Bits(b[i]);
  return bad + (a.size() > b.size() ? a.size() - b.size() : b.size() - a.size());
}

double RelFro(const std::vector<float>& a, const std::vector<float>& ref) {
  EXPECT_EQ(a.size(), ref.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < std::min(a.size(), ref.size()); ++i) {
    if (!std::isfinite(a[i]) && std::isfinite(ref[i])) {
      return std::numeric_limits<double>::infinity();
    }
    const double d = static_cast<double>(a[i]) - ref[i];
    diff += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(diff / norm);
}

size_t OutsideTolerance(const std::vector<float>& a, const std::vector<float>& ref, double rel,
                        double abs) {
  EXPECT_EQ(a.size(), ref.size());
  size_t bad = 0;
  for (size_t i = 0; i < std::min(a.size(), ref.size()); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - ref[i]);
    if (!std::isfinite(a[i]) || !(d <= rel * std::fabs(ref[i]) + abs)) ++bad;
  }
  return bad;
}

}  // namespace twinspan::cuda::testing
