// Tree verify on both families (random tiny models, CPU backend): every row of a tree window gets
// the logits and taps that a chain forward of its path gives the path's last row, bit for bit;
// CommitPath leaves the state serial decoding of that path leaves; bad trees and paths are refused
// without losing the pending rows.
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/tree_rows.h"
#include "services/target/qwen3_5_model.h"
#include "services/target/qwen3_model.h"
#include "tests/unit/target_random_model.h"
#include "tests/unit/target_random_qwen35.h"

namespace twinspan::target {
namespace {

enum class Family { kQwen3, kQwen35 };

struct Case {
  Family family;
  cpu::KvDtype kv;
};

std::string Name(const ::testing::TestParamInfo<Case>& info) {
  return absl::StrCat(info.param.family == Family::kQwen3 ? "qwen3" : "qwen3_5",
                      info.param.kv == cpu::KvDtype::kF32 ? "_f32" : "_bf16");
}

// Rows in a drafter's best-first order: a main chain with branches at several depths.
const std::vector<int32_t> kTree = {-1, 0, 1, 0, 2, 1, 4, 3, 6, 2, 8, 5};

struct Rows {
  std::vector<float> logits;  // [rows, vocab]
  std::vector<float> taps;    // [rows, taps, hidden]
};

class TargetTreeTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    TargetOptions options;
    options.kv_dtype = GetParam().kv;
    options.context = 64;
    options.pool = &pool_;
    if (GetParam().family == Family::kQwen3) {
      model_ = testing::RandomQwen3Model(options, 5);
      taps_ = {0, 2};
    } else {
      const TargetConfig config = testing::TinyQwen35Config();
      auto model = Qwen35Model::Create(config, testing::RandomQwen35Weights(config, 7), options);
      ASSERT_TRUE(model.ok()) << model.status();
      model_ = std::move(*model);
      taps_ = {1, 2};  // A GDN layer and the attention layer.
    }
    ASSERT_NE(model_, nullptr);
    vocab_ = model_->config().vocab_size;
    hidden_ = model_->config().hidden_size;
    std::mt19937 gen(11);
    for (int i = 0; i < 40; ++i) tokens_.push_back(static_cast<int32_t>(gen() % vocab_));
    prompt_.assign(tokens_.begin(), tokens_.begin() + 9);
    window_.assign(tokens_.begin() + 9, tokens_.begin() + 9 + kTree.size());
  }

  std::unique_ptr<SequenceState> Prefilled() {
    auto state = model_->NewSequence();
    EXPECT_TRUE(state.ok()) << state.status();
    Forward(**state, prompt_, {});
    EXPECT_TRUE(model_->Commit(**state, prompt_.size()).ok());
    return std::move(*state);
  }

  Rows Forward(SequenceState& state, const std::vector<int32_t>& tokens,
               const std::vector<int32_t>& parents) {
    ForwardRequest request;
    request.tokens = tokens;
    request.parents = parents;
    request.tap_layer_ids = taps_;
    ForwardResult result;
    const absl::Status status = model_->Forward(state, request, &result);
    EXPECT_TRUE(status.ok()) << status;
    return Rows{result.logits, result.taps};
  }

  // The chain of `path`'s window tokens after the prompt: its last row's logits and taps.
  Rows ChainOfPath(const std::vector<int64_t>& path) {
    auto state = Prefilled();
    std::vector<int32_t> tokens;
    for (int64_t row : path) tokens.push_back(window_[row]);
    Rows all = Forward(*state, tokens, {});
    const size_t tap_width = taps_.size() * hidden_;
    return Rows{std::vector<float>(all.logits.end() - vocab_, all.logits.end()),
                std::vector<float>(all.taps.end() - tap_width, all.taps.end())};
  }

  static void ExpectSameBits(const float* a, const float* b, size_t n, const std::string& what) {
    EXPECT_EQ(0, std::memcmp(a, b, n * sizeof(float))) << what;
  }

  cpu::ThreadPool pool_{2};
  std::unique_ptr<TargetModel> model_;
  std::vector<int64_t> taps_;
  int64_t vocab_ = 0, hidden_ = 0;
  std::vector<int32_t> tokens_, prompt_, window_;
};

TEST_P(TargetTreeTest, EveryRowEqualsAChainForwardOfItsPath) {
  auto state = Prefilled();
  const Rows tree = Forward(*state, window_, kTree);
  const size_t tap_width = taps_.size() * hidden_;
  ASSERT_EQ(tree.logits.size(), kTree.size() * vocab_);
  for (int64_t r = 0; r < static_cast<int64_t>(kTree.size()); ++r) {
    const Rows chain = ChainOfPath(cpu::TreePath(kTree.data(), r));
    ExpectSameBits(&tree.logits[r * vocab_], chain.logits.data(), vocab_,
                   absl::StrCat("logits of row ", r));
    ExpectSameBits(&tree.taps[r * tap_width], chain.taps.data(), tap_width,
                   absl::StrCat("taps of row ", r));
  }
}

// Committing a path and decoding on gives what serial decoding of that path gives.
TEST_P(TargetTreeTest, CommitPathThenContinueEqualsSerialDecodingOfThePath) {
  const std::vector<int32_t> next = {tokens_[30], tokens_[31], tokens_[32]};
  for (int64_t leaf : {0, 3, 7, 10, 11}) {
    SCOPED_TRACE(absl::StrCat("path to row ", leaf));
    const std::vector<int64_t> path = cpu::TreePath(kTree.data(), leaf);
    auto tree = Prefilled();
    Forward(*tree, window_, kTree);
    ASSERT_TRUE(model_->CommitPath(*tree, path).ok());
    ASSERT_EQ(tree->length(), static_cast<int64_t>(prompt_.size() + path.size()));

    auto serial = Prefilled();
    for (int64_t row : path) {
      Forward(*serial, {window_[row]}, {});
      ASSERT_TRUE(model_->Commit(*serial, 1).ok());
    }
    const Rows got = Forward(*tree, {next[0], next[1]}, {});  // A round of two rows, then one.
    const Rows want = Forward(*serial, {next[0], next[1]}, {});
    ExpectSameBits(got.logits.data(), want.logits.data(), got.logits.size(), "logits after");
    ExpectSameBits(got.taps.data(), want.taps.data(), got.taps.size(), "taps after");
    ASSERT_TRUE(model_->Commit(*tree, 2).ok());
    ASSERT_TRUE(model_->Commit(*serial, 2).ok());
    const Rows got2 = Forward(*tree, {next[2]}, {});
    const Rows want2 = Forward(*serial, {next[2]}, {});
    ExpectSameBits(got2.logits.data(), want2.logits.data(), got2.logits.size(), "logits later");
  }
}

TEST_P(TargetTreeTest, BadTreesAndPathsAreRefusedAndThePendingRowsKept) {
  auto state = Prefilled();
  ForwardRequest request;
  request.tokens = window_;
  const std::vector<int32_t> short_parents(kTree.begin(), kTree.end() - 1);
  request.parents = short_parents;
  ForwardResult result;
  EXPECT_EQ(model_->Forward(*state, request, &result).code(), absl::StatusCode::kInvalidArgument);
  std::vector<int32_t> cyclic = kTree;
  cyclic[4] = 6;
  request.parents = cyclic;
  EXPECT_EQ(model_->Forward(*state, request, &result).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(state->pending(), 0);

  Forward(*state, window_, kTree);
  const std::vector<int64_t> not_a_path = {0, 1, 3};  // Row 3 hangs under the root, not row 1.
  EXPECT_EQ(model_->CommitPath(*state, not_a_path).code(), absl::StatusCode::kInvalidArgument);
  const std::vector<int64_t> no_root = {1, 2};
  EXPECT_EQ(model_->CommitPath(*state, no_root).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model_->Commit(*state, 4).code(), absl::StatusCode::kInvalidArgument);  // Row 3: root.
  EXPECT_EQ(state->pending(), static_cast<int64_t>(kTree.size()));
  EXPECT_TRUE(model_->CommitPath(*state, cpu::TreePath(kTree.data(), 9)).ok());
  EXPECT_EQ(state->length(), static_cast<int64_t>(prompt_.size()) + 4);
}

// A tree and a chain in one batch: each as if alone.
TEST_P(TargetTreeTest, ABatchOfATreeAndAChainEqualsEachAlone) {
  auto tree_alone = Prefilled();
  const Rows want_tree = Forward(*tree_alone, window_, kTree);
  const std::vector<int32_t> chain_tokens(tokens_.begin() + 20, tokens_.begin() + 25);
  auto chain_alone = Prefilled();
  const Rows want_chain = Forward(*chain_alone, chain_tokens, {});

  auto a = Prefilled();
  auto b = Prefilled();
  ForwardRequest ra, rb;
  ra.tokens = window_;
  ra.parents = kTree;
  ra.tap_layer_ids = taps_;
  rb.tokens = chain_tokens;
  rb.tap_layer_ids = taps_;
  ForwardResult oa, ob;
  const SequenceForward batch[] = {{b.get(), &rb, &ob}, {a.get(), &ra, &oa}};
  ASSERT_TRUE(model_->ForwardBatch(batch).ok());
  ExpectSameBits(oa.logits.data(), want_tree.logits.data(), oa.logits.size(), "tree logits");
  ExpectSameBits(oa.taps.data(), want_tree.taps.data(), oa.taps.size(), "tree taps");
  ExpectSameBits(ob.logits.data(), want_chain.logits.data(), ob.logits.size(), "chain logits");
}

INSTANTIATE_TEST_SUITE_P(Families, TargetTreeTest,
                         ::testing::Values(Case{Family::kQwen3, cpu::KvDtype::kBF16},
                                           Case{Family::kQwen3, cpu::KvDtype::kF32},
                                           Case{Family::kQwen35, cpu::KvDtype::kBF16},
                                           Case{Family::kQwen35, cpu::KvDtype::kF32}),
                         Name);

}  // namespace
}  // namespace twinspan::target
