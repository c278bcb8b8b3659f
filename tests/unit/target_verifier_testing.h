// Helpers of the TargetVerifier tests on the CPU backend and on the GPU: random tiny targets of
// both families, an oracle drafter that knows the plain output, and requests run through a
// LaneEngine to their summaries.
#ifndef TWINSPAN_TESTS_UNIT_TARGET_VERIFIER_TESTING_H_
#define TWINSPAN_TESTS_UNIT_TARGET_VERIFIER_TESTING_H_

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "gtest/gtest.h"
#include "services/draft_link/draft_model.h"
#include "services/target/engine/lane_engine.h"
#include "services/target/engine/verifier_model.h"
#include "tests/testing/summary_sink.h"
#include "tests/unit/target_random_model.h"
#include "tests/unit/target_random_qwen35.h"

namespace twinspan::serving::testing {

enum class Family { kQwen3, kQwen35 };

// A random tiny target of `family` (weights from `seed`, `seed + 1` for qwen3_5); null after a
// test failure when it cannot be made.
inline std::unique_ptr<target::TargetModel> RandomTarget(Family family,
                                                         const target::TargetOptions& options,
                                                         uint32_t seed) {
  if (family == Family::kQwen3) return target::testing::RandomQwen3Model(options, seed);
  const target::TargetConfig config = target::testing::TinyQwen35Config();
  auto model = target::Qwen35Model::Create(
      config, target::testing::RandomQwen35Weights(config, seed + 1), options);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  return std::move(*model);
}

// The verifier's description of `model`, 256 positions per stream.
inline engine::VerifierInfo RandomTargetInfo(const target::TargetModel& model) {
  const target::TargetConfig& c = model.config();
  engine::VerifierInfo info;
  info.model_name = "random";
  info.model_type = c.model_type;
  info.vocab_size = static_cast<int>(c.vocab_size);
  info.max_context = 256;
  info.hidden_size = static_cast<int>(c.hidden_size);
  return info;
}

inline std::vector<uint32_t> RandomIds(std::mt19937& rng, int n, int vocab_size) {
  std::vector<uint32_t> ids(n);
  for (uint32_t& id : ids) id = rng() % vocab_size;
  return ids;
}

// Request `which` of a mixed set: prompts of 3 + 4 * which ids, greedy when `which` is even and
// sampled at 0.8 when odd, 17 + 5 * which tokens, drafted except request 2 (whose one-row
// windows ride with the others).
inline engine::EngineRequest MixedRequest(int which, int vocab_size) {
  engine::EngineRequest r;
  r.request_id = absl::StrCat("req-", which);
  for (int i = 0; i < 3 + 4 * which; ++i) {
    r.prompt_ids.push_back((which * 37 + i * 11) % vocab_size);
  }
  r.sampling.temperature = which % 2 == 0 ? 0.0f : 0.8f;
  r.sampling.seed = 900 + which;
  r.max_tokens = 17 + 5 * which;
  r.ignore_eos = true;
  r.draft = which != 2;
  return r;
}

// Plain completions by prompt.
using Completions = std::map<std::vector<uint32_t>, std::vector<uint32_t>>;

// Proposes the plain completion of its prompt (known in advance), every third proposal wrong; with
// tree_nodes, a tree: the plain continuation also hangs beside the first wrong draft. It keeps no
// prompt-prefix cache: a prompt whose first rows the target resumed is refused, as a drafter that
// lost them refuses it. Not thread-safe, like every DraftSession.
class OracleSession : public engine::DraftSession {
 public:
  OracleSession(const engine::DrafterInfo* info, const Completions* plain)
      : info_(info), plain_(plain) {}
  absl::StatusOr<engine::DraftProposal> Open(absl::Span<const uint32_t> prompt,
                                             const engine::TapRows& taps,
                                             uint32_t /*pending*/) override {
    if (taps.first_row > 0) {
      return absl::FailedPreconditionError("oracle: holds no cached prompt rows");
    }
    ABSL_RETURN_IF_ERROR(CheckTaps(prompt.size(), taps));
    prompt_.assign(prompt.begin(), prompt.end());
    return Propose();
  }
  absl::StatusOr<engine::DraftProposal> Commit(absl::Span<const uint32_t> ids,
                                               const engine::TapRows& taps,
                                               uint32_t /*pending*/) override {
    ABSL_RETURN_IF_ERROR(CheckTaps(ids.size(), taps));
    committed_ += static_cast<int64_t>(ids.size());
    return Propose();
  }

 private:
  absl::Status CheckTaps(size_t rows, const engine::TapRows& taps) const {
    if (taps.rows != static_cast<int64_t>(rows) || taps.width != info_->tap_width ||
        taps.data.size() != rows * taps.width) {
      return absl::InvalidArgumentError("oracle: taps of the wrong shape");
    }
    return absl::OkStatus();
  }
  engine::DraftProposal Propose() {
    auto it = plain_->find(prompt_);
    engine::DraftProposal out;
    std::vector<uint32_t> truth;
    int wrong = -1;  // The first wrong draft.
    for (int i = 1; i < info_->block_size; ++i) {
      const size_t next = static_cast<size_t>(committed_ + i);  // completion[committed_] pends.
      truth.push_back(it != plain_->end() && next < it->second.size() ? it->second[next] : 0);
      uint32_t id = truth.back();
      if (++proposed_ % 3 == 0) {
        id = (id + 1) % info_->vocab_size;
        if (wrong < 0) wrong = i - 1;
      }
      out.ids.push_back(id);
    }
    if (info_->tree_nodes == 0 || wrong < 0) return out;
    for (size_t i = 0; i < out.ids.size(); ++i) out.parents.push_back(static_cast<uint32_t>(i));
    for (size_t j = wrong; j < truth.size(); ++j) {  // The truth under the wrong draft's parent.
      out.ids.push_back(truth[j]);
      out.parents.push_back(static_cast<int>(j) == wrong
                                ? static_cast<uint32_t>(wrong)
                                : static_cast<uint32_t>(out.ids.size() - 1));
    }
    out.Prune(info_->block_size - 1, info_->tree_nodes);
    return out;
  }

  const engine::DrafterInfo* info_;
  const Completions* plain_;
  std::vector<uint32_t> prompt_;
  int64_t committed_ = 0;
  int64_t proposed_ = 0;
};

class OracleDrafter : public engine::DraftModel {
 public:
  // An oracle of `block_size` over the target `target` with taps of layers `taps`.
  OracleDrafter(int block_size, const engine::VerifierInfo& target,
                const std::vector<int64_t>& taps, const Completions* plain, int tree_nodes = 0)
      : plain_(plain) {
    info_.tree_nodes = tree_nodes;
    info_.block_size = block_size;
    info_.head_variant = "oracle";
    info_.vocab_size = target.vocab_size;
    info_.target_layer_ids = taps;
    info_.tap_width = static_cast<int>(taps.size()) * target.hidden_size;
    info_.max_streams = 16;
    info_.max_context = 1 << 20;
  }
  const engine::DrafterInfo& info() const override { return info_; }
  absl::StatusOr<std::unique_ptr<engine::DraftSession>> NewSession() const override {
    return std::make_unique<OracleSession>(&info_, plain_);
  }

 private:
  engine::DrafterInfo info_;
  const Completions* plain_;
};

using Sink = twinspan::testing::SummarySink;

// Runs `requests` all at once through an engine of `parallel` streams over `model`; a stream that
// fails is a test failure and an empty summary.
inline std::vector<engine::StreamSummary> RunAll(
    const engine::VerifierModel& model, engine::TokenSampler* sampler, int parallel,
    engine::DraftChannel* channel, const std::vector<engine::EngineRequest>& requests) {
  engine::EngineOptions options;
  options.parallel = parallel;
  options.draft_timeout = absl::Seconds(10);
  auto engine = engine::LaneEngine::Start(options, &model, sampler, channel, nullptr);
  EXPECT_TRUE(engine.ok()) << engine.status();
  std::vector<std::shared_ptr<Sink>> sinks;
  for (const auto& r : requests) {
    sinks.push_back(std::make_shared<Sink>());
    EXPECT_TRUE((*engine)->Submit(r, sinks.back()).ok());
  }
  std::vector<engine::StreamSummary> out;
  for (auto& sink : sinks) {
    auto summary = sink->Wait();
    EXPECT_TRUE(summary.ok()) << summary.status();
    out.push_back(summary.ok() ? *summary : engine::StreamSummary{});
  }
  return out;
}

}  // namespace twinspan::serving::testing

#endif  // TWINSPAN_TESTS_UNIT_TARGET_VERIFIER_TESTING_H_
