// The device layer (services/device): --device values, the backend a spec opens on the CPU, and
// the host LogitsSampler against sampler::KeyedSampler (the reference the CUDA sampler is held
// to on the GPU: tests/cuda/logits_sampler_cuda_test.cc). Linked twice: with this build's layer
// and with the layer of a build without CUDA, which must refuse cuda:N naming the flag.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/mask_logits.h"
#include "services/device/device_backend.h"
#include "services/device/device_spec.h"
#include "services/device/logits_sampler.h"

namespace twinspan::device {
namespace {

TEST(DeviceSpecTest, ParsesCpuAndCudaOrdinals) {
  absl::StatusOr<DeviceSpec> cpu = DeviceSpec::Parse("cpu", "--device");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_FALSE(cpu->is_cuda());
  EXPECT_EQ(cpu->ToString(), "cpu");
  absl::StatusOr<DeviceSpec> cuda = DeviceSpec::Parse("cuda:3", "--device");
  if (BuildHasCuda()) {
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    EXPECT_TRUE(cuda->is_cuda());
    EXPECT_EQ(cuda->ordinal, 3);
    EXPECT_EQ(cuda->ToString(), "cuda:3");
  } else {
    ASSERT_TRUE(absl::IsInvalidArgument(cuda.status())) << cuda.status();
    EXPECT_NE(cuda.status().message().find("--device cuda:3"), std::string::npos);
    EXPECT_NE(cuda.status().message().find("no CUDA backend"), std::string::npos);
  }
}

TEST(DeviceSpecTest, RefusesOtherValuesNamingTheFlag) {
  for (const char* bad : {"", "gpu", "CPU", "cuda", "cuda:", "cuda:-1", "cuda:x", "cuda:1 ",
                          "cuda:0x1", "cuda:1024", "cuda:99999999999"}) {
    absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(bad, "--drafter-device");
    ASSERT_FALSE(spec.ok()) << "'" << bad << "'";
    EXPECT_TRUE(absl::IsInvalidArgument(spec.status())) << spec.status();
    EXPECT_NE(spec.status().message().find("--drafter-device"), std::string::npos) << spec.status();
  }
}

TEST(DeviceBackendTest, TheCpuSpecOpensTheCpuBackendAndNoDeviceSampler) {
  auto backend = OpenBackend(DeviceSpec{}, nullptr);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ((*backend)->name(), "cpu");
  auto sampler = OpenLogitsSampler(DeviceSpec{});
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  EXPECT_EQ(*sampler, nullptr);  // The engine samples host logits itself.
  if (!BuildHasCuda()) {
    const DeviceSpec cuda{DeviceSpec::Kind::kCuda, 0};
    EXPECT_TRUE(absl::IsInvalidArgument(OpenBackend(cuda, nullptr).status()));
    EXPECT_TRUE(absl::IsInvalidArgument(OpenLogitsSampler(cuda).status()));
  }
}

TEST(HostLogitsSamplerTest, DrawsWhatKeyedSamplerDrawsAndMarksNaNRows) {
  const int64_t vocab = 301, rows = 6;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(rows * vocab);
  for (float& x : logits) x = normal(rng);
  logits[4 * vocab + 17] = std::numeric_limits<float>::quiet_NaN();
  std::vector<RowDraw> draws(rows);
  for (int64_t r = 0; r < rows; ++r) {
    draws[r].params.temperature = r == 0 ? 0.0f : 0.5f + 0.2f * r;
    draws[r].params.top_k = r == 2 ? 10 : 0;
    draws[r].params.top_p = r == 3 ? 0.8f : 1.0f;
    draws[r].params.min_p = r == 5 ? 0.05f : 0.0f;
    draws[r].seed = 1000 + r;
    draws[r].position = 40 + r;
  }
  auto backend = cpu::NewCpuBackend(nullptr);
  auto buffer = backend->UploadFloats(logits);
  ASSERT_TRUE(buffer.ok());
  HostLogitsSampler sampler;
  std::vector<int32_t> tokens;
  ASSERT_TRUE(sampler.Sample(*backend, **buffer, vocab, draws, &tokens).ok());
  ASSERT_EQ(tokens.size(), static_cast<size_t>(rows));
  const sampler::KeyedSampler keyed;
  for (int64_t r = 0; r < rows; ++r) {
    if (r == 4) {
      EXPECT_EQ(tokens[r], -1);
      continue;
    }
    auto want = keyed.Sample(absl::MakeConstSpan(logits).subspan(r * vocab, vocab), draws[r].params,
                             draws[r].seed, draws[r].position);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(tokens[r], *want) << "row " << r;
  }

  // Too few logits for the rows, and bad parameters, are refused naming the problem.
  std::vector<RowDraw> more(rows + 1);
  EXPECT_TRUE(absl::IsInvalidArgument(sampler.Sample(*backend, **buffer, vocab, more, &tokens)));
  draws[1].params.temperature = -2.0f;
  absl::Status bad = sampler.Sample(*backend, **buffer, vocab, draws, &tokens);
  EXPECT_TRUE(absl::IsInvalidArgument(bad)) << bad;
  EXPECT_NE(bad.message().find("row 1"), std::string::npos) << bad;
}

TEST(HostLogitsSamplerTest, AMaskedRowDrawsOnlyAllowedIdsAsTheKeyedSamplerDoesOnMaskedLogits) {
  const int64_t vocab = 301, rows = 4, words = cpu::MaskWords(vocab);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(rows * vocab);
  for (float& x : logits) x = normal(rng);
  // Every third id allowed in rows 0..2; row 3 unconstrained.
  std::vector<uint32_t> masks(3 * words, 0u);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t id = r; id < vocab; id += 3) masks[r * words + id / 32] |= 1u << (id % 32);
  }
  std::vector<RowDraw> draws(rows);
  for (int64_t r = 0; r < rows; ++r) {
    draws[r].params.temperature = r == 0 ? 0.0f : 0.9f;
    draws[r].params.top_k = r == 2 ? 5 : 0;
    draws[r].seed = 77;
    draws[r].position = 10 + r;
    if (r < 3) draws[r].allowed = absl::MakeConstSpan(masks).subspan(r * words, words);
  }
  auto backend = cpu::NewCpuBackend(nullptr);
  auto buffer = backend->UploadFloats(logits);
  ASSERT_TRUE(buffer.ok());
  HostLogitsSampler sampler;
  std::vector<int32_t> tokens;
  ASSERT_TRUE(sampler.Sample(*backend, **buffer, vocab, draws, &tokens).ok());
  std::vector<float> masked = logits;
  ASSERT_TRUE(cpu::MaskLogits({}, masked.data(), vocab, vocab, masks.data(), 3).ok());
  const sampler::KeyedSampler keyed;
  for (int64_t r = 0; r < rows; ++r) {
    if (r < 3) EXPECT_EQ(tokens[r] % 3, r) << "row " << r;
    auto want = keyed.Sample(absl::MakeConstSpan(masked).subspan(r * vocab, vocab), draws[r].params,
                             draws[r].seed, draws[r].position);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(tokens[r], *want) << "row " << r;
  }
  std::vector<uint32_t> short_mask(words - 1, ~0u);
  draws[3].allowed = short_mask;
  EXPECT_TRUE(absl::IsInvalidArgument(sampler.Sample(*backend, **buffer, vocab, draws, &tokens)));
  EXPECT_TRUE(absl::IsInvalidArgument(
      cpu::MaskLogits({}, masked.data(), vocab - 1, vocab, masks.data(), 1)));
}

TEST(MaskLogitsTest, EqualsTheIdByIdRuleForWholeEmptyAndMixedWordsAndLeavesPastVocabAlone) {
  const int64_t vocab = 200, stride = 203, rows = 3, words = cpu::MaskWords(vocab);
  std::mt19937 rng(9);
  std::vector<uint32_t> masks(rows * words);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t w = 0; w < words; ++w) {
      // All-set, all-clear and mixed words, and the last word's bits past vocab set or not.
      const uint32_t kind = (r + w) % 3;
      masks[r * words + w] = kind == 0 ? ~0u : kind == 1 ? 0u : static_cast<uint32_t>(rng());
    }
  }
  std::vector<float> logits(rows * stride);
  for (float& x : logits) x = static_cast<float>(rng() % 1000) / 100.0f;
  std::vector<float> want = logits;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < vocab; ++i) {
      if (((masks[r * words + i / 32] >> (i % 32)) & 1u) == 0) {
        want[r * stride + i] = -std::numeric_limits<float>::infinity();
      }
    }
  }
  ASSERT_TRUE(cpu::MaskLogits({}, logits.data(), stride, vocab, masks.data(), rows).ok());
  EXPECT_EQ(logits, want);
}

}  // namespace
}  // namespace twinspan::device
