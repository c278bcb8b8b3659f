// Helpers for the drafter's GPU tests: backends, buffers poisoned with NaN before an op writes
// them, a random EXL3 head in memory, and proposals compared within a stated tolerance.
#ifndef TWINSPAN_TESTS_CUDA_DRAFTER_CUDA_UTIL_H_
#define TWINSPAN_TESTS_CUDA_DRAFTER_CUDA_UTIL_H_

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/exl3/weight.h"
#include "gtest/gtest.h"
#include "kernels/backend/backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "services/drafter/drafter.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/unit/formats_exl3_fixture.h"

namespace twinspan::drafter::testing {

inline std::unique_ptr<backend::Backend> Cuda() {
  auto b = cuda::NewCudaBackend({});
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? std::move(*b) : nullptr;
}

// A backend buffer of `bytes`, every byte 0xFF (NaN floats, -1 ints) so unwritten values show.
inline std::unique_ptr<backend::Buffer> Poisoned(backend::Backend& b, size_t bytes) {
  auto buffer = b.Allocate(bytes);
  EXPECT_TRUE(buffer.ok()) << buffer.status();
  if (!buffer.ok()) return nullptr;
  const std::vector<unsigned char> poison(bytes, 0xFF);
  EXPECT_TRUE(b.Upload(**buffer, 0, poison.data(), bytes).ok());
  return std::move(*buffer);
}

template <typename T>
std::vector<T> Read(backend::Backend& b, const backend::Buffer& buffer, size_t n) {
  std::vector<T> out(n);
  const absl::Status s = b.Download(out.data(), buffer, 0, n * sizeof(T));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// A random EXL3 head [k in, n out] (the fixture's trellis and scales), kept with its checkpoint.
struct Exl3Head {
  std::unique_ptr<Checkpoint> checkpoint;
  exl3::Weight weight;
};

inline Exl3Head MakeExl3Head(const std::string& name, int64_t k, int64_t n, int bits,
                             uint32_t seed) {
  twinspan::testing::SyntheticLinear spec;
  spec.prefix = "lm_head";
  spec.k = k;
  spec.n = n;
  spec.bits = bits;
  spec.seed = seed;
  Exl3Head head;
  head.checkpoint = twinspan::testing::OpenTensors(name + ".safetensors",
                                                   twinspan::testing::SyntheticTensors(spec));
  EXPECT_NE(head.checkpoint, nullptr);
  if (head.checkpoint == nullptr) return head;
  auto w = exl3::Weight::Load(*head.checkpoint, "lm_head");
  EXPECT_TRUE(w.ok()) << w.status();
  if (w.ok()) head.weight = *w;
  // The map stays valid; the file (up to 1 GB for the 27B's head) need not.
  std::filesystem::remove(std::filesystem::path(::testing::TempDir()) / (name + ".safetensors"));
  return head;
}

// Two proposals of the same drafter on two backends: the same ids and candidates, and every
// float field within rel_fro `tol`.
inline void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, double tol,
                        const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  if (want.empty()) return;
  const double err = cuda::testing::RelFro(got, want);
  EXPECT_LE(err, tol) << what;
  ::testing::Test::RecordProperty(std::string(what) + "_rel_fro", std::to_string(err));
}

inline void ExpectCloseProposals(const Proposal& got, const Proposal& want, double tol) {
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_EQ(got.candidate_ids, want.candidate_ids);
  EXPECT_EQ(got.column_ids, want.column_ids);
  ExpectClose(got.logits, want.logits, tol, "logits");
  ExpectClose(got.candidate_logits, want.candidate_logits, tol, "candidate_logits");
  ExpectClose(got.selector_projection, want.selector_projection, tol, "selector_projection");
  ExpectClose(got.walk_scores, want.walk_scores, tol, "walk_scores");
  ExpectClose(got.probabilities, want.probabilities, tol, "probabilities");
}

}  // namespace twinspan::drafter::testing

#endif  // TWINSPAN_TESTS_CUDA_DRAFTER_CUDA_UTIL_H_
