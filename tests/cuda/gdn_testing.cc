#include "tests/cuda/gdn_testing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_format.h"

namespace twinspan::cuda::testing {
namespace {

// What the summary line reports: the closest any comparison came to its tolerance.
struct Record {
  double worst_ratio = 0.0;
  std::string worst_what;
  int64_t close_checks = 0;
  int64_t bit_checks = 0;
  int64_t elements = 0;
};

Record& TheRecord() {
  static Record record;  // Test binaries only: one summary per process.
  return record;
}

void Note(double ratio, const std::string& what, int64_t elements) {
  Record& r = TheRecord();
  r.elements += elements;
  if (ratio > r.worst_ratio) {
    r.worst_ratio = ratio;
    r.worst_what = what;
  }
}

}  // namespace

TestStream::TestStream() {
  cudaStream_t stream = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ctx_.stream = stream;
}

TestStream::~TestStream() { cudaStreamDestroy(ctx_.stream); }

::testing::AssertionResult TestStream::Finish() const {
  const cudaError_t last = cudaGetLastError();
  const cudaError_t sync = cudaStreamSynchronize(ctx_.stream);
  if (last != cudaSuccess || sync != cudaSuccess) {
    return ::testing::AssertionFailure()
           << "last error " << cudaGetErrorString(last) << ", stream " << cudaGetErrorString(sync);
  }
  return ::testing::AssertionSuccess();
}

std::vector<float> RandomNormal(size_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> out(n);
  for (float& v : out) {
    do v = scale * dist(rng);
    while (v == 0.0f);
  }
  return out;
}

std::vector<float> RandomUniform(size_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (float& v : out) {
    do v = dist(rng);
    while (v == 0.0f);
  }
  return out;
}

void ExpectClose(const std::vector<float>& ref, const std::vector<float>& got, Tolerance tol,
                 const std::string& what) {
  ASSERT_EQ(ref.size(), got.size()) << what;
  ++TheRecord().close_checks;
  double diff_sq = 0.0, ref_sq = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    ref_sq += static_cast<double>(ref[i]) * ref[i];
  }
  const double rms = ref.empty() ? 0.0 : std::sqrt(ref_sq / static_cast<double>(ref.size()));
  double worst = 0.0;
  size_t worst_i = 0, bad = 0, unwritten = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isfinite(ref[i]) && !std::isfinite(got[i])) {
      if (unwritten++ == 0) ADD_FAILURE() << what << ": element " << i << " is " << got[i];
      continue;
    }
    const double d = std::fabs(static_cast<double>(got[i]) - ref[i]);
    diff_sq += d * d;
    const double ratio = d / (tol.element * (rms + std::fabs(ref[i])) + 1e-300);
    if (ratio > 1.0) ++bad;
    if (ratio > worst) {
      worst = ratio;
      worst_i = i;
    }
  }
  EXPECT_EQ(unwritten, 0u) << what << ": non-finite elements (unwritten or overflowed)";
  const double rel_fro = ref_sq > 0.0 ? std::sqrt(diff_sq / ref_sq) : std::sqrt(diff_sq);
  EXPECT_LE(rel_fro, tol.rel_fro) << what << ": rel_fro";
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " elements past " << tol.element
                     << " x (rms + |ref|); worst at " << worst_i << ": ref " << ref[worst_i]
                     << " got " << got[worst_i];
  Note(std::max(worst, rel_fro / tol.rel_fro), what, static_cast<int64_t>(ref.size()));
}

template <typename T>
void BitEqual(const std::vector<T>& ref, const std::vector<T>& got, const std::string& what) {
  ASSERT_EQ(ref.size(), got.size()) << what;
  ++TheRecord().bit_checks;
  TheRecord().elements += static_cast<int64_t>(ref.size());
  size_t mismatches = 0, first = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::memcmp(&ref[i], &got[i], sizeof(T)) != 0 && mismatches++ == 0) first = i;
  }
  EXPECT_EQ(mismatches, 0u) << what << ": " << mismatches << " of " << ref.size()
                            << " elements differ; first at " << first << ": "
                            << (ref.empty() ? 0 : ref[first]) << " vs "
                            << (got.empty() ? 0 : got[first]);
}

void ExpectBitEqual(const std::vector<float>& ref, const std::vector<float>& got,
                    const std::string& what) {
  BitEqual(ref, got, what);
}

void ExpectBitEqual(const std::vector<int32_t>& ref, const std::vector<int32_t>& got,
                    const std::string& what) {
  BitEqual(ref, got, what);
}

std::vector<float> Rows(const std::vector<float>& a, int64_t width, int64_t row0, int64_t rows) {
  return std::vector<float>(a.begin() + row0 * width, a.begin() + (row0 + rows) * width);
}

}  // namespace twinspan::cuda::testing

// Runs the tests, then prints one line: the counts and the closest a comparison came to its
// tolerance.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const auto start = std::chrono::steady_clock::now();
  const int rc = RUN_ALL_TESTS();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  const auto& r = twinspan::cuda::testing::TheRecord();
  const std::string name =
      argc > 0 ? std::string(argv[0]).substr(std::string(argv[0]).rfind('/') + 1) : "";
  std::string worst = "every tolerance check exact";
  if (r.close_checks == 0) worst = "no tolerance checks: bit for bit throughout";
  if (r.worst_ratio > 0.0) {
    worst = absl::StrFormat("worst error/tolerance %.3g (%s)", r.worst_ratio, r.worst_what);
  }
  std::printf(
      "%s: %d/%d tests passed in %.1f s; %lld tolerance and %lld bit-for-bit checks over "
      "%lld elements; %s\n",
      name.c_str(), unit.successful_test_count(), unit.test_to_run_count(), seconds,
      static_cast<long long>(r.close_checks), static_cast<long long>(r.bit_checks),
      static_cast<long long>(r.elements), worst.c_str());
  return rc;
}
