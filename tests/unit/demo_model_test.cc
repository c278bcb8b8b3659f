// The committed demo pair (models/demo): it loads like any checkpoint, its tokenizer encodes as
// Hugging Face's does, the target's greedy continuation of a fixed chat prompt equals the stored
// reference (made by transformers on the dequantized weights), and the trained drafter's greedy
// block after it agrees with the target's own continuation.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/tokenizer/chat_template.h"
#include "common/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "kernels/cpu/parallel.h"
#include "nlohmann/json.hpp"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"

namespace twinspan {
namespace {

using nlohmann::json;

const std::string kDemo = TWINSPAN_DEMO_DIR;

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

int32_t Argmax(const std::vector<float>& row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

TEST(DemoModelTest, TokenizerMatchesHuggingFaceOnHeldOutText) {
  auto tokenizer = tokenizer::Tokenizer::Open(kDemo + "/target");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  std::ifstream in(kDemo + "/heldout/tokenizer_reference.jsonl");
  ASSERT_TRUE(in.good());
  int cases = 0;
  for (std::string line; std::getline(in, line); ++cases) {
    const json row = json::parse(line);
    auto ids = (*tokenizer)->Encode(row["text"].get<std::string>());
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, row["ids"].get<std::vector<int32_t>>()) << "reference line " << cases + 1;
  }
  EXPECT_GE(cases, 50);
}

class DemoPairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reference_ = ReadJson(kDemo + "/reference.json");
    ASSERT_TRUE(reference_.is_object());
    auto tokenizer = tokenizer::Tokenizer::Open(kDemo + "/target");
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    auto chat = tokenizer::ChatTemplate::Open(kDemo + "/target");
    ASSERT_TRUE(chat.ok()) << chat.status();
    auto text = chat->Render(nlohmann::ordered_json(reference_["messages"]), {});
    ASSERT_TRUE(text.ok()) << text.status();
    auto ids = (*tokenizer)->Encode(*text);
    ASSERT_TRUE(ids.ok()) << ids.status();
    prompt_ = *ids;
    tokenizer_ = *std::move(tokenizer);
  }

  json reference_;
  std::vector<int32_t> prompt_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  cpu::ThreadPool pool_{2};
};

TEST_F(DemoPairTest, GreedyContinuationEqualsTheReferenceAndTheDrafterAgrees) {
  EXPECT_EQ(prompt_, reference_["prompt_ids"].get<std::vector<int32_t>>());
  const auto want = reference_["greedy_ids"].get<std::vector<int32_t>>();
  ASSERT_GE(want.size(), 16u);

  auto drafter = drafter::Drafter::Open(kDemo + "/drafter", kDemo + "/target",
                                        {.model = {.pool = &pool_, .context = 1024}});
  ASSERT_TRUE(drafter.ok()) << drafter.status();
  const drafter::DrafterConfig& dc = (*drafter)->config();
  auto model = target::OpenTargetModel(kDemo + "/target", {.pool = &pool_,
                                                           .kv_dtype = cpu::KvDtype::kF32,
                                                           .context = 1024,
                                                           .drafter_configured = true});
  ASSERT_TRUE(model.ok()) << model.status();

  auto state = (*model)->NewSequence();
  ASSERT_TRUE(state.ok()) << state.status();
  auto prefill = target::Prefill(**model, **state, prompt_, 256, dc.target_layer_ids);
  ASSERT_TRUE(prefill.ok()) << prefill.status();
  std::vector<int32_t> got = {Argmax(prefill->logits)};
  while (got.size() < want.size()) {
    target::ForwardRequest request;
    request.tokens = absl::MakeConstSpan(&got.back(), 1);
    request.logits = target::LogitsRows::kLast;
    target::ForwardResult out;
    ASSERT_TRUE((*model)->Forward(**state, request, &out).ok());
    ASSERT_TRUE((*model)->Commit(**state, 1).ok());
    got.push_back(Argmax(out.logits));
  }
  EXPECT_EQ(got, want) << "decoded: " << tokenizer_->Decode(got).value_or("?");

  // The two-span head the checkpoint names, drafting after the prompt and the first token.
  EXPECT_EQ((*drafter)->head().columns(), 7168 + 128);
  auto stream = (*drafter)->NewStream();
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_TRUE((*drafter)
                  ->AppendTaps(**stream, drafter::TapForm::kRaw, prefill->taps,
                               static_cast<int64_t>(prompt_.size()))
                  .ok());
  auto proposal = (*drafter)->Propose(**stream, got[0], {});
  ASSERT_TRUE(proposal.ok()) << proposal.status();
  size_t accepted = 0;
  while (accepted < proposal->ids.size() && proposal->ids[accepted] == got[accepted + 1]) {
    ++accepted;
  }
  // A random drafter accepts nothing here; the trained one keeps the reference's prefix.
  EXPECT_GE(static_cast<int64_t>(accepted), reference_["min_accepted"].get<int64_t>())
      << "proposal " << json(proposal->ids).dump();
  std::printf("drafter kept %zu of %zu proposals\n", accepted, proposal->ids.size());
}

}  // namespace
}  // namespace twinspan
