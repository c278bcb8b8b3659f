// GPU tests of kernels/cuda/candidate_selector (SelectorWalk) against cpu::SelectorWalk on random
// inputs: the 27B drafter's walk (7 slots, top-16, rank 256, [248,320, 256] codebooks in bf16 as
// stored, and in f32) and odd shapes, greedy and sampled. Proposals must be equal and scores are
// bit-equal (the same in-order sums); probabilities within 1e-5 x (rms + |ref|) (expf). Sampled
// walks draw uniforms at least 1e-4 from every cumulative boundary of the CPU walk, so expf's
// ulps cannot move a draw. Then device-side bad candidate ids and argument errors.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "kernels/cpu/candidate_selector.h"
#include "kernels/cuda/candidate_selector.cuh"
#include "tests/cuda/gdn_testing.h"

namespace twinspan::cuda {
namespace {

using cpu::CodebookType;
using testing::DeviceArray;
using testing::ExpectBitEqual;
using testing::ExpectClose;

constexpr testing::Tolerance kProbabilities{1e-5, 1e-5};

// A codebook on the host and the device; values are hashed from (seed, index): fast at 63.6 M
// entries, never zero.
struct Codebook {
  Codebook(CodebookType type, int64_t rows, int64_t rank, uint64_t seed)
      : type(type), rows(rows), rank(rank) {
    const size_t n = static_cast<size_t>(rows * rank);
    const size_t bytes = n * (type == CodebookType::kF32 ? 4 : 2);
    host.resize(bytes);
    for (size_t i = 0; i < n; ++i) {
      uint64_t z = seed * 0x9E3779B97F4A7C15ull + i;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      // (0, 1) then centred and scaled: +-0.3 at most, never zero.
      const float u = (static_cast<float>(z >> 40) + 0.5f) / 16777216.0f;
      const float v = (u - 0.5f) * 0.6f;
      if (type == CodebookType::kF32) {
        std::memcpy(host.data() + 4 * i, &v, 4);
      } else {
        const uint16_t bits = static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16);
        std::memcpy(host.data() + 2 * i, &bits, 2);
      }
    }
    device = std::make_unique<DeviceArray<std::byte>>(host);
  }
  cpu::CodebookView HostView() const { return {type, host.data(), rows, rank}; }
  cpu::CodebookView DeviceView() const { return {type, device->get(), rows, rank}; }

  CodebookType type;
  int64_t rows, rank;
  std::vector<std::byte> host;
  std::unique_ptr<DeviceArray<std::byte>> device;
};

struct Walk {
  std::vector<int32_t> candidates;
  std::vector<float> unary, projection, uniforms;
  cpu::SelectorWalkParams params;
};

// Candidates distinct within a slot, as top-k gives them.
Walk MakeWalk(int64_t slots, int64_t k, int64_t rank, int64_t vocab, float temperature,
              std::mt19937& rng) {
  Walk w;
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(vocab - 1));
  for (int64_t s = 0; s < slots; ++s) {
    std::vector<int32_t> slot;
    while (static_cast<int64_t>(slot.size()) < k) {
      const int32_t c = id(rng);
      if (vocab < k || std::find(slot.begin(), slot.end(), c) == slot.end()) slot.push_back(c);
    }
    w.candidates.insert(w.candidates.end(), slot.begin(), slot.end());
  }
  w.unary = testing::RandomNormal(slots * k, 2.0f, rng);
  w.projection = testing::RandomNormal(slots * rank, 1.0f, rng);
  w.params = {
      .slots = slots, .top_k = k, .rank = rank, .anchor_id = id(rng), .temperature = temperature};
  if (temperature > 0.0f) w.uniforms = testing::RandomUniform(slots, 0.0f, 1.0f, rng);
  return w;
}

struct Result {
  std::vector<int32_t> proposals;
  std::vector<float> scores, probabilities;
};

absl::Status RunCpu(const Walk& w, const Codebook& pred, const Codebook& succ, Result& r) {
  const int64_t n = w.params.slots * w.params.top_k;
  r.proposals.assign(w.params.slots, -7);
  r.scores.assign(n, 0.0f);
  r.probabilities.assign(w.params.temperature > 0.0f ? n : 0, 0.0f);
  return cpu::SelectorWalk(
      {}, {w.candidates, w.unary, w.projection, pred.HostView(), succ.HostView(), w.uniforms},
      {r.proposals, r.scores, r.probabilities}, w.params);
}

// Redraws any uniform within 1e-4 of a cumulative boundary of the CPU walk, until none is.
void AvoidBoundaries(Walk& w, const Codebook& pred, const Codebook& succ, std::mt19937& rng) {
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (int round = 0; round < 100; ++round) {
    Result r;
    ASSERT_TRUE(RunCpu(w, pred, succ, r).ok());
    bool moved = false;
    for (int64_t s = 0; s < w.params.slots; ++s) {
      float cumulative = 0.0f;
      for (int64_t c = 0; c < w.params.top_k; ++c) {
        cumulative += r.probabilities[s * w.params.top_k + c];
        if (std::fabs(w.uniforms[s] - cumulative) < 1e-4f) {
          w.uniforms[s] = unit(rng);
          moved = true;
          break;
        }
      }
    }
    if (!moved) return;
  }
  FAIL() << "could not draw uniforms away from the boundaries";
}

void ExpectWalksMatch(const Walk& w, const Codebook& pred, const Codebook& succ,
                      const std::string& what) {
  Result cpu_result;
  ASSERT_TRUE(RunCpu(w, pred, succ, cpu_result).ok());
  const bool sampled = w.params.temperature > 0.0f;
  const int64_t n = w.params.slots * w.params.top_k;
  DeviceArray<int32_t> cand(w.candidates), proposals(w.params.slots);
  DeviceArray<float> unary(w.unary), projection(w.projection), scores(n),
      probabilities(sampled ? n : 0);
  testing::TestStream stream;
  const absl::Status status = SelectorWalk(
      stream.ctx(),
      {cand.cspan(), unary.cspan(), projection.cspan(), pred.DeviceView(), succ.DeviceView(),
       w.uniforms},
      {proposals.span(), scores.span(), sampled ? probabilities.span() : std::span<float>()},
      w.params);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_TRUE(stream.Finish());
  ExpectBitEqual(cpu_result.proposals, proposals.Download(), "proposals, " + what);
  ExpectBitEqual(cpu_result.scores, scores.Download(), "scores, " + what);
  if (sampled) {
    ExpectClose(cpu_result.probabilities, probabilities.Download(), kProbabilities,
                "probabilities, " + what);
  }
}

TEST(SelectorWalkCudaTest, DrafterWalksMatchCpuGreedyAndSampled) {
  constexpr int64_t kVocab = 248320, kRank = 256, kSlots = 7, kTopK = 16;
  for (const CodebookType type : {CodebookType::kBF16, CodebookType::kF32}) {
    const Codebook pred(type, kVocab, kRank, 1), succ(type, kVocab, kRank, 2);
    std::mt19937 rng(type == CodebookType::kBF16 ? 3 : 4);
    for (const float temperature : {0.0f, 0.5f, 1.0f, 1.7f}) {
      for (int walk = 0; walk < 12; ++walk) {
        const std::string what =
            absl::StrFormat("%s codebooks, temperature %g, walk %d",
                            type == CodebookType::kBF16 ? "bf16" : "f32", temperature, walk);
        SCOPED_TRACE(what);
        Walk w = MakeWalk(kSlots, kTopK, kRank, kVocab, temperature, rng);
        if (temperature > 0.0f) AvoidBoundaries(w, pred, succ, rng);
        ExpectWalksMatch(w, pred, succ, what);
      }
    }
  }
}

TEST(SelectorWalkCudaTest, OddShapesAndMixedCodebooksMatchCpu) {
  struct Case {
    int64_t slots, k, rank, vocab;
    CodebookType pred, succ;
  };
  const Case cases[] = {{1, 1, 3, 10, CodebookType::kF32, CodebookType::kF32},
                        {15, 5, 33, 1000, CodebookType::kF32, CodebookType::kF32},
                        {15, 16, 256, 5000, CodebookType::kBF16, CodebookType::kF32},
                        {3, 40, 7, 50, CodebookType::kBF16, CodebookType::kBF16},
                        {64, 3, 300, 700, CodebookType::kF32, CodebookType::kBF16},
                        {0, 4, 8, 20, CodebookType::kF32, CodebookType::kF32}};
  std::mt19937 rng(5);
  for (const Case& c : cases) {
    const Codebook pred(c.pred, c.vocab, c.rank, 7), succ(c.succ, c.vocab, c.rank, 8);
    for (const float temperature : {0.0f, 0.8f}) {
      const std::string what = absl::StrFormat("slots %d top_k %d rank %d vocab %d T %g", c.slots,
                                               c.k, c.rank, c.vocab, temperature);
      SCOPED_TRACE(what);
      Walk w = MakeWalk(c.slots, c.k, c.rank, c.vocab, temperature, rng);
      if (temperature > 0.0f) AvoidBoundaries(w, pred, succ, rng);
      ExpectWalksMatch(w, pred, succ, what);
    }
  }
}

// Candidate ids live on the device: one outside [0, V) fails the walk there, visibly.
TEST(SelectorWalkCudaTest, BadCandidateIdMakesEveryProposalMinusOne) {
  const Codebook pred(CodebookType::kBF16, 100, 8, 1), succ(CodebookType::kBF16, 100, 8, 2);
  std::mt19937 rng(6);
  for (const int32_t bad : {-1, 100, 1 << 30}) {
    for (const float temperature : {0.0f, 1.0f}) {
      Walk w = MakeWalk(4, 3, 8, 100, temperature, rng);
      w.candidates[7] = bad;
      DeviceArray<int32_t> cand(w.candidates), proposals(4);
      DeviceArray<float> unary(w.unary), projection(w.projection), scores(12), probs(12);
      testing::TestStream stream;
      ASSERT_TRUE(SelectorWalk(stream.ctx(),
                               {cand.cspan(), unary.cspan(), projection.cspan(), pred.DeviceView(),
                                succ.DeviceView(), w.uniforms},
                               {proposals.span(), scores.span(), probs.span()}, w.params)
                      .ok());
      ASSERT_TRUE(stream.Finish());
      ExpectBitEqual(std::vector<int32_t>(4, -1), proposals.Download(), "proposals");
      for (const float s : scores.Download()) EXPECT_TRUE(std::isnan(s));
    }
  }
}

TEST(SelectorWalkCudaTest, RejectsBadArguments) {
  const Codebook pred(CodebookType::kF32, 50, 8, 1), succ(CodebookType::kF32, 50, 8, 2),
      narrow(CodebookType::kF32, 50, 4, 3), short_book(CodebookType::kF32, 40, 8, 4);
  std::mt19937 rng(7);
  const Walk good = MakeWalk(3, 4, 8, 50, 1.0f, rng);
  DeviceArray<int32_t> cand(good.candidates), proposals(3);
  DeviceArray<float> unary(good.unary), projection(good.projection), scores(12), probs(12);
  testing::TestStream stream;
  const auto run = [&](const Walk& w, const cpu::CodebookView& p, const cpu::CodebookView& s,
                       std::span<float> out_probs) {
    return SelectorWalk(stream.ctx(),
                        {cand.cspan(), unary.cspan(), projection.cspan(), p, s, w.uniforms},
                        {proposals.span(), scores.span(), out_probs}, w.params)
        .code();
  };
  constexpr auto kBad = absl::StatusCode::kInvalidArgument;
  ASSERT_EQ(run(good, pred.DeviceView(), succ.DeviceView(), probs.span()), absl::StatusCode::kOk);
  EXPECT_EQ(run(good, narrow.DeviceView(), succ.DeviceView(), probs.span()), kBad);      // rank
  EXPECT_EQ(run(good, pred.DeviceView(), short_book.DeviceView(), probs.span()), kBad);  // rows
  EXPECT_EQ(run(good, pred.DeviceView(), succ.DeviceView(), {}), kBad);  // no probabilities
  Walk w = good;
  w.params.anchor_id = 50;
  EXPECT_EQ(run(w, pred.DeviceView(), succ.DeviceView(), probs.span()), kBad);
  w = good;
  w.params.temperature = -1.0f;
  EXPECT_EQ(run(w, pred.DeviceView(), succ.DeviceView(), probs.span()), kBad);
  w = good;
  w.uniforms[1] = 1.0f;
  EXPECT_EQ(run(w, pred.DeviceView(), succ.DeviceView(), probs.span()), kBad);
  w = good;
  w.uniforms.pop_back();
  EXPECT_EQ(run(w, pred.DeviceView(), succ.DeviceView(), probs.span()), kBad);
  w = good;
  w.params.top_k = 5;  // Sizes no longer agree.
  EXPECT_EQ(run(w, pred.DeviceView(), succ.DeviceView(), probs.span()), kBad);
  w = good;
  w.params.slots = 65;  // Above the kernel's 64.
  EXPECT_EQ(run(w, pred.DeviceView(), succ.DeviceView(), probs.span()), kBad);
  cpu::SelectorWalkParams wide = good.params;
  wide.top_k = 300;
  wide.rank = 8;
  EXPECT_EQ(SelectorWalk(stream.ctx(), {}, {}, wide).code(), kBad);  // top_k above 256
  wide.top_k = 16;
  wide.rank = 1000;  // 16 x 1001 + 1000 floats exceed 48 KB.
  EXPECT_EQ(SelectorWalk(stream.ctx(), {}, {}, wide).code(), kBad);
  ASSERT_TRUE(stream.Finish());
}

}  // namespace
}  // namespace twinspan::cuda
