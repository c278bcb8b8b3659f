// Tree drafts on the lane engine (toy models): the proposal type and the accept walk on their own,
// then drafted == plain with trees (greedy and sampled, 1/2/4 streams), trees accepting past a
// wrong draft where a chain stops, a chains-only verifier given the main chain, and malformed trees
// drafting nothing.
#include <memory>
#include <vector>

#include "common/metrics/serving_metrics.h"
#include "common/status.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "services/draft_link/accept_walk.h"
#include "services/draft_link/draft_proposal.h"
#include "services/target/engine/in_process_draft_channel.h"
#include "services/target/engine/lane_engine.h"
#include "tests/integration/toy_models.h"
#include "tests/testing/summary_sink.h"

namespace twinspan::engine {
namespace {

using testing::ToyDrafter;
using testing::ToySampler;
using testing::ToyVerifier;

constexpr int kVocab = 97;
constexpr uint32_t kEos = 96;

// A tree: the root's children 5 (row 1) and 6 (row 2); 7 under 5, 8 under 6, 9 under 8.
DraftProposal Tree() { return DraftProposal{{5, 6, 7, 8, 9}, {0, 0, 1, 2, 4}}; }

TEST(DraftProposalTest, ValidateRefusesBadTreesNamingTheDraft) {
  EXPECT_TRUE(Tree().Validate(kVocab, 5).ok());
  EXPECT_EQ(Tree().Validate(kVocab, 4).code(), absl::StatusCode::kInvalidArgument);
  DraftProposal forward = Tree();
  forward.parents[2] = 4;  // Draft 2 (row 3) under row 4: not an earlier row.
  const absl::Status status = forward.Validate(kVocab, 8);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("draft 2"), std::string::npos) << status;
  DraftProposal short_parents = Tree();
  short_parents.parents.pop_back();
  EXPECT_FALSE(short_parents.Validate(kVocab, 8).ok());
  DraftProposal big_id = Tree();
  big_id.ids[0] = kVocab;
  EXPECT_FALSE(big_id.Validate(kVocab, 8).ok());
}

TEST(DraftProposalTest, WindowParentsPruneAndMainChain) {
  EXPECT_EQ(Tree().WindowParents(), (std::vector<int32_t>{-1, 0, 0, 1, 2, 4}));
  EXPECT_EQ((DraftProposal{{4, 4, 4}, {}}).WindowParents(), (std::vector<int32_t>{-1, 0, 1, 2}));
  EXPECT_EQ(Tree().MainChain().ids, (std::vector<uint32_t>{5, 7}));
  EXPECT_TRUE(Tree().MainChain().parents.empty());
  DraftProposal shallow = Tree();
  shallow.Prune(/*max_depth=*/2, /*max_nodes=*/10);  // 9 is at depth 3.
  EXPECT_EQ(shallow.ids, (std::vector<uint32_t>{5, 6, 7, 8}));
  EXPECT_EQ(shallow.parents, (std::vector<uint32_t>{0, 0, 1, 2}));
  DraftProposal few = Tree();
  few.Prune(10, 3);
  EXPECT_EQ(few.ids, (std::vector<uint32_t>{5, 6, 7}));
  DraftProposal chain{{1, 2, 3, 4}, {}};
  chain.Prune(2, 10);
  EXPECT_EQ(chain.ids, (std::vector<uint32_t>{1, 2}));
}

TEST(AcceptWalkTest, FollowsTheDraftsTheDrawsAgreeWithDownAnyBranch) {
  // Draws by row: the root draws 6 (row 2), row 2 draws 8 (row 4), row 4 draws 1 (no child).
  const std::vector<uint32_t> draws = {6, 0, 8, 0, 1, 0};
  std::vector<int64_t> depths;
  auto path = WalkAccepted(Tree(), [&](int64_t row, int64_t depth) -> absl::StatusOr<uint32_t> {
    depths.push_back(depth);
    return draws[row];
  });
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->rows, (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(path->tokens, (std::vector<uint32_t>{6, 8, 1}));
  EXPECT_EQ(path->accepted(), 2);
  EXPECT_EQ(depths, (std::vector<int64_t>{0, 1, 2}));  // Each row drawn at its own depth.
  auto failed = WalkAccepted(Tree(), [](int64_t, int64_t) -> absl::StatusOr<uint32_t> {
    return absl::InternalError("no logits");
  });
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal);
}

using CollectingSink = twinspan::testing::SummarySink;

EngineRequest MakeRequest(int which, float temperature) {
  EngineRequest r;
  r.request_id = "req-" + std::to_string(which);
  for (int i = 0; i < 5 + which; ++i) r.prompt_ids.push_back((which * 31 + i * 7) % 90);
  r.sampling.temperature = temperature;
  r.sampling.seed = 1234 + which;
  r.max_tokens = 48;
  return r;
}

// Every request at once on `parallel` lanes; the summaries in order.
std::vector<StreamSummary> RunAll(const VerifierModel& model, DraftChannel* channel, int parallel,
                                  const std::vector<EngineRequest>& requests,
                                  metrics::ServingMetrics* metrics = nullptr,
                                  DraftWindowOptions window = {}) {
  ToySampler sampler;
  EngineOptions options;
  options.parallel = parallel;
  options.draft_window = window;
  options.draft_timeout = absl::Seconds(5);
  auto engine = LaneEngine::Start(options, &model, &sampler, channel, metrics);
  EXPECT_TRUE(engine.ok()) << engine.status();
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (const EngineRequest& r : requests) {
    sinks.push_back(std::make_shared<CollectingSink>());
    EXPECT_TRUE((*engine)->Submit(r, sinks.back()).ok());
  }
  std::vector<StreamSummary> out;
  for (auto& sink : sinks) {
    absl::StatusOr<StreamSummary> s = sink->Wait();
    EXPECT_TRUE(s.ok()) << s.status();
    if (s.ok()) out.push_back(*s);
  }
  return out;
}

std::vector<EngineRequest> Requests(float temperature) {
  std::vector<EngineRequest> requests;
  requests.reserve(4);
  for (int which = 0; which < 4; ++which) requests.push_back(MakeRequest(which, temperature));
  return requests;
}

TEST(TreeEngineTest, TreeDraftsEqualPlainGreedyAndSampledAtOneTwoAndFourStreams) {
  ToyVerifier model(kVocab, 512, kEos);
  ToyDrafter chain_drafter(kVocab, 6, /*miss_every=*/3, 8);
  ToyDrafter tree_drafter(kVocab, 6, /*miss_every=*/3, 8, 0, /*tree_nodes=*/9);
  for (float temperature : {0.0f, 0.8f}) {
    const std::vector<StreamSummary> plain = RunAll(model, nullptr, 1, Requests(temperature));
    for (int parallel : {1, 2, 4}) {
      SCOPED_TRACE(::testing::Message() << "t=" << temperature << ", " << parallel << " streams");
      InProcessDraftChannel chains(&chain_drafter), trees(&tree_drafter);
      const std::vector<StreamSummary> chain =
          RunAll(model, &chains, parallel, Requests(temperature));
      const std::vector<StreamSummary> tree =
          RunAll(model, &trees, parallel, Requests(temperature));
      ASSERT_EQ(tree.size(), plain.size());
      ASSERT_EQ(chain.size(), plain.size());
      int64_t tree_accepted = 0, chain_accepted = 0;
      for (size_t i = 0; i < plain.size(); ++i) {
        EXPECT_EQ(tree[i].completion_ids, plain[i].completion_ids) << "request " << i;
        EXPECT_EQ(chain[i].completion_ids, plain[i].completion_ids) << "request " << i;
        tree_accepted += tree[i].accepted;
        chain_accepted += chain[i].accepted;
      }
      // Greedy: the tree holds the right token beside each wrong one, so it accepts past it.
      if (temperature == 0.0f) EXPECT_GT(tree_accepted, chain_accepted);
    }
  }
}

TEST(TreeEngineTest, ADraftWindowIsATreesNodeBudgetAndTheTokensArePlain) {
  ToyVerifier model(kVocab, 512, kEos);
  ToyDrafter tree_drafter(kVocab, 6, 3, 8, 0, 9);
  for (float temperature : {0.0f, 0.8f}) {
    const std::vector<StreamSummary> plain = RunAll(model, nullptr, 1, Requests(temperature));
    for (const DraftWindowOptions& window : {DraftWindowOptions{DraftWindowMode::kAll, 3},
                                             DraftWindowOptions{DraftWindowMode::kAdaptive, 0}}) {
      SCOPED_TRACE(::testing::Message()
                   << "t=" << temperature << ", window " << DraftWindowName(window));
      InProcessDraftChannel trees(&tree_drafter);
      const std::vector<StreamSummary> drafted =
          RunAll(model, &trees, 2, Requests(temperature), nullptr, window);
      ASSERT_EQ(drafted.size(), plain.size());
      for (size_t i = 0; i < plain.size(); ++i) {
        EXPECT_EQ(drafted[i].completion_ids, plain[i].completion_ids) << "request " << i;
        if (temperature == 0.0f) EXPECT_GT(drafted[i].accepted, 0) << "request " << i;
        // A window of 3 verifies at most 3 of the tree's 9 drafts a round.
        if (window.max_drafts > 0) {
          EXPECT_LE(drafted[i].drafted, window.max_drafts * drafted[i].rounds) << "request " << i;
        }
      }
    }
  }
}

// A verifier that takes chains only gets each tree's main chain: still exact.
class ChainsOnlyVerifier : public VerifierModel {
 public:
  explicit ChainsOnlyVerifier(const ToyVerifier* inner) : inner_(inner) {
    info_ = inner->info();
    info_.verifies_trees = false;
  }
  const VerifierInfo& info() const override { return info_; }
  absl::StatusOr<std::unique_ptr<VerifierSequence>> NewSequence() const override {
    return inner_->NewSequence();
  }
  void VerifyBatch(absl::Span<VerifyJob> jobs) const override {
    for (const VerifyJob& job : jobs) EXPECT_TRUE(job.parents.empty()) << "a tree was verified";
    inner_->VerifyBatch(jobs);
  }

 private:
  const ToyVerifier* inner_;
  VerifierInfo info_;
};

TEST(TreeEngineTest, AChainsOnlyVerifierGetsTheMainChain) {
  ToyVerifier toy(kVocab, 512, kEos);
  ChainsOnlyVerifier model(&toy);
  ToyDrafter tree_drafter(kVocab, 6, 3, 8, 0, 9);
  InProcessDraftChannel trees(&tree_drafter);
  const std::vector<StreamSummary> plain = RunAll(toy, nullptr, 1, Requests(0.0f));
  const std::vector<StreamSummary> drafted = RunAll(model, &trees, 2, Requests(0.0f));
  ASSERT_EQ(drafted.size(), plain.size());
  int64_t accepted = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(drafted[i].completion_ids, plain[i].completion_ids);
    accepted += drafted[i].accepted;
  }
  EXPECT_GT(accepted, 0);
}

// Sends a tree whose last draft hangs under a later row: never verified, the tokens are plain.
class MalformedTreeDrafter : public DraftModel {
 public:
  explicit MalformedTreeDrafter(const ToyDrafter* inner) : inner_(inner) {}
  const DrafterInfo& info() const override { return inner_->info(); }
  absl::StatusOr<std::unique_ptr<DraftSession>> NewSession() const override {
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<DraftSession> session, inner_->NewSession());
    return std::unique_ptr<DraftSession>(new Session(std::move(session)));
  }

 private:
  class Session : public DraftSession {
   public:
    explicit Session(std::unique_ptr<DraftSession> inner) : inner_(std::move(inner)) {}
    absl::StatusOr<DraftProposal> Open(absl::Span<const uint32_t> ids, const TapRows& taps,
                                       uint32_t pending) override {
      return Break(inner_->Open(ids, taps, pending));
    }
    absl::StatusOr<DraftProposal> Commit(absl::Span<const uint32_t> ids, const TapRows& taps,
                                         uint32_t pending) override {
      return Break(inner_->Commit(ids, taps, pending));
    }

   private:
    static absl::StatusOr<DraftProposal> Break(absl::StatusOr<DraftProposal> p) {
      if (p.ok() && !p->ids.empty()) {
        p->parents.assign(p->ids.size(), 0);
        p->parents.back() = static_cast<uint32_t>(p->ids.size() + 3);
      }
      return p;
    }
    std::unique_ptr<DraftSession> inner_;
  };
  const ToyDrafter* inner_;
};

TEST(TreeEngineTest, MalformedTreesDraftNothingAndTheTokensArePlain) {
  ToyVerifier model(kVocab, 512, kEos);
  ToyDrafter inner(kVocab, 6, 3, 8, 0, 9);
  MalformedTreeDrafter drafter(&inner);
  InProcessDraftChannel channel(&drafter);
  const std::vector<StreamSummary> plain = RunAll(model, nullptr, 1, Requests(0.0f));
  const std::vector<StreamSummary> drafted = RunAll(model, &channel, 2, Requests(0.0f));
  ASSERT_EQ(drafted.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(drafted[i].completion_ids, plain[i].completion_ids);
    EXPECT_EQ(drafted[i].drafted, 0);
  }
}

TEST(TreeEngineTest, RoundsReportTreeSizeAndAcceptedDepthByHeadVariant) {
  ToyVerifier model(kVocab, 512, kEos);
  ToyDrafter tree_drafter(kVocab, 6, 3, 8, 0, 9);
  InProcessDraftChannel trees(&tree_drafter);
  auto registry = std::make_shared<prometheus::Registry>();
  metrics::ServingMetrics metrics(registry, "toy");
  const std::vector<StreamSummary> drafted =
      RunAll(model, &trees, 1, {MakeRequest(0, 0.0f)}, &metrics);
  ASSERT_EQ(drafted.size(), 1u);
  const std::string text = prometheus::TextSerializer().Serialize(registry->Collect());
  const std::string labels = "{model_name=\"toy\",head_variant=\"toy-head\",shape=\"tree\"}";
  EXPECT_NE(text.find("twinspan_spec_decode_draft_nodes_per_round_count" + labels + " " +
                      std::to_string(drafted[0].rounds)),
            std::string::npos)
      << text;  // Every round carried a tree.
  const std::string depth_sum = "twinspan_spec_decode_accepted_depth_per_round_sum" + labels + " " +
                                std::to_string(drafted[0].accepted);
  EXPECT_NE(text.find(depth_sum), std::string::npos) << text;
}

}  // namespace
}  // namespace twinspan::engine
