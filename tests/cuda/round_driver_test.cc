// The round steps twinspan_round_bench times (tools/gpu/round_driver.h) and the bytes it counts
// (round_bytes.h), on the CPU backend over twinspan-synth's tiny Qwen3.8 pair (the 27B's structure
// at hidden 256; Q4 drafter): a 16-row verify padded with the drafts, greedy acceptance, commit,
// append and draft; a measuring verify discarded leaves the state as it was (same argmax again);
// --keep forces the committed rows; bad input. Runs under ctest (no GPU).
#include "tools/gpu/round_driver.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"
#include "tools/gpu/round_bytes.h"
#include "tools/synth/presets.h"
#include "tools/synth/shard_writer.h"

namespace twinspan::gpu {
namespace {

namespace fs = std::filesystem;

std::string WritePreset(const std::string& name, const std::string& folder, int drafter_bits) {
  std::string dir = (fs::temp_directory_path() / folder).string();
  fs::remove_all(dir);
  synth::PresetOptions options;
  options.drafter_bits = drafter_bits;
  auto spec = synth::MakePreset(name, options, false, synth::IsDrafterPreset(name));
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto report = synth::WriteCheckpoint(*spec, dir, {.seed = 3, .threads = 2});
  EXPECT_TRUE(report.ok()) << report.status();
  return dir;
}

class RoundDriverTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    target_dir_ = new std::string(WritePreset("qwen3.8-tiny", "round_driver_target", 16));
    drafter_dir_ = new std::string(WritePreset("qwen3.8-tiny-dflash2", "round_driver_drafter", 4));
  }
  void SetUp() override {
    auto t = target::OpenTargetModel(*target_dir_, {.context = 256});
    ASSERT_TRUE(t.ok()) << t.status();
    target_ = std::move(*t);
    auto d = drafter::Drafter::Open(*drafter_dir_, *target_dir_,
                                    {.model = {.context = 256}, .head = "0:2048,3968:4096"});
    ASSERT_TRUE(d.ok()) << d.status();
    drafter_ = std::move(*d);
  }
  static std::string* target_dir_;
  static std::string* drafter_dir_;
  std::unique_ptr<target::TargetModel> target_;
  std::unique_ptr<drafter::Drafter> drafter_;
};
std::string* RoundDriverTest::target_dir_ = nullptr;
std::string* RoundDriverTest::drafter_dir_ = nullptr;

TEST_F(RoundDriverTest, RoundsCommitWhatGreedyAcceptanceKeeps) {
  RoundDriver d(*target_, *drafter_, {.prompt = 20});
  ASSERT_TRUE(d.Prefill().ok());
  EXPECT_EQ(d.block(), 8);
  EXPECT_EQ(d.proposals().size(), 7u);
  EXPECT_EQ(d.target_length(), 20);
  EXPECT_EQ(d.drafter_length(), 20);
  int64_t committed = 0;
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(d.Verify(16, true).ok());
    ASSERT_EQ(d.argmax().size(), 16u);
    ASSERT_TRUE(d.Commit(true).ok());
    EXPECT_GE(d.last_keep(), 1);
    committed += d.last_keep();
    ASSERT_TRUE(d.AppendAndDraft().ok());
    EXPECT_EQ(d.target_length(), 20 + committed);
    EXPECT_EQ(d.drafter_length(), 20 + committed);
    for (const int32_t id : d.proposals()) EXPECT_TRUE(id >= 0 && id < 4096) << id;
  }
}

TEST_F(RoundDriverTest, ADiscardedVerifyLeavesTheStateAsItWas) {
  RoundDriver d(*target_, *drafter_, {.prompt = 12});
  ASSERT_TRUE(d.Prefill().ok());
  for (const int64_t rows : {1, 8, 16}) {
    ASSERT_TRUE(d.Verify(rows, true).ok());
    const std::vector<int32_t> first = d.argmax();
    ASSERT_TRUE(d.Discard().ok());
    ASSERT_TRUE(d.Verify(rows, false).ok());
    EXPECT_EQ(d.argmax(), first) << rows;
    ASSERT_TRUE(d.Discard().ok());
    EXPECT_EQ(d.target_length(), 12);
  }
  ASSERT_TRUE(d.AppendOneAndDraft().ok());
  EXPECT_EQ(d.drafter_length(), 13);
}

TEST_F(RoundDriverTest, KeepForcesTheCommittedRowsAndBadInputIsRefused) {
  RoundDriver d(*target_, *drafter_, {.prompt = 10, .keep = 7});
  ASSERT_TRUE(d.Prefill().ok());
  ASSERT_TRUE(d.Verify(16, true).ok());
  ASSERT_TRUE(d.Commit(false).ok());
  EXPECT_EQ(d.last_keep(), 7);
  ASSERT_TRUE(d.AppendAndDraft().ok());
  EXPECT_EQ(d.target_length(), 17);
  EXPECT_EQ(d.drafter_length(), 17);
  EXPECT_TRUE(absl::IsInvalidArgument(d.Verify(kMaxRoundRows + 1, true)));
  EXPECT_TRUE(absl::IsInvalidArgument(d.Verify(0, true)));
  ASSERT_TRUE(d.Verify(4, false).ok());
  ASSERT_TRUE(d.Commit(false).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(d.AppendAndDraft()));  // That verify had no taps.
  RoundDriver empty(*target_, *drafter_, {.prompt = 0});
  EXPECT_TRUE(absl::IsInvalidArgument(empty.Prefill()));
}

// On one backend the taps stay there (taps_out, AppendTapsInBackend): the same proposals.
TEST_F(RoundDriverTest, TapsInTheBackendDraftWhatHostTapsDraft) {
  const std::unique_ptr<backend::Backend> b = cpu::NewCpuBackend(nullptr);
  auto t = target::OpenTargetModel(*target_dir_, {.backend = b.get(), .context = 256});
  ASSERT_TRUE(t.ok()) << t.status();
  auto dr = drafter::Drafter::Open(
      *drafter_dir_, *target_dir_,
      {.model = {.backend = b.get(), .context = 256}, .head = "0:2048,3968:4096"});
  ASSERT_TRUE(dr.ok()) << dr.status();
  RoundDriver host(**t, **dr, {.prompt = 9, .keep = 3});
  RoundDriver device(**t, **dr, {.prompt = 9, .keep = 3, .device_taps = true});
  ASSERT_TRUE(host.Prefill().ok());
  ASSERT_TRUE(device.Prefill().ok());
  for (int round = 0; round < 2; ++round) {
    for (RoundDriver* d : {&host, &device}) {
      ASSERT_TRUE(d->Verify(16, true).ok());
      ASSERT_TRUE(d->Commit(false).ok());
      ASSERT_TRUE(d->AppendAndDraft().ok());
    }
    EXPECT_EQ(device.proposals(), host.proposals()) << round;
    EXPECT_EQ(device.drafter_length(), host.drafter_length());
  }
  ASSERT_TRUE(host.AppendOneAndDraft().ok());
  ASSERT_TRUE(device.AppendOneAndDraft().ok());
  EXPECT_EQ(device.drafter_length(), host.drafter_length());
  // Two backends cannot share taps.
  RoundDriver split(*target_, **dr, {.prompt = 3, .device_taps = true});
  EXPECT_TRUE(absl::IsInvalidArgument(split.Prefill()));
}

TEST_F(RoundDriverTest, BytesCountTheWeightsAndTheState) {
  auto t = TargetWeightBytes(*target_dir_);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GT(t->trellis, 0);
  EXPECT_EQ(t->q4, 0);
  EXPECT_GT(t->dense, 0);
  auto d = DrafterWeightBytes(*drafter_dir_, drafter_->head());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_GT(d->q4, 0);
  EXPECT_GT(d->dense, 0);    // fc stays bf16
  EXPECT_GT(d->trellis, 0);  // the span views of the EXL3 head
  const Bytes keep_all = TargetStateBytes(target_->config(), 16, 16, 100, 2);
  const Bytes reject = TargetStateBytes(target_->config(), 16, 1, 100, 2);
  EXPECT_GT(reject.state, keep_all.state);  // The kept rows replayed.
  EXPECT_GT(TargetStateBytes(target_->config(), 16, 1, 200, 2).state, reject.state);
  EXPECT_GT(DrafterStateBytes(drafter_->config(), 7, 8, 100, 2176).state,
            DrafterStateBytes(drafter_->config(), 1, 8, 100, 2176).state);
}

}  // namespace
}  // namespace twinspan::gpu
