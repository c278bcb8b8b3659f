// TapFuser (the target's half of fused taps, on the target's backend) against the drafter's own
// FuseTaps: bit for bit on the CPU backend, on random DFlash and DFlash2 checkpoints, with and
// without threads, from host rows and from rows already in backend memory; and its errors.
#include "services/draft_link/tap_fuser.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/parallel.h"
#include "services/draft_link/checkpoint_fingerprint.h"
#include "services/drafter/drafter_model.h"
#include "tests/golden/drafter/random_drafter.h"

namespace twinspan::engine {
namespace {

std::vector<float> RandomRows(int64_t rows, int64_t width, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> v(rows * width);
  for (float& x : v) x = normal(gen);
  return v;
}

TEST(TapFuserTest, EqualsDrafterFuseTapsBitForBit) {
  cpu::ThreadPool pool(2);
  for (bool dflash2 : {false, true}) {
    for (cpu::ThreadPool* p : {static_cast<cpu::ThreadPool*>(nullptr), &pool}) {
      const std::string dir = testing::WriteRandomDrafter(
          dflash2 ? "tap_fuser_dflash2" : "tap_fuser_dflash", dflash2, 11, 128, 512, {0, 1, 2});
      const std::unique_ptr<backend::Backend> target_backend = cpu::NewCpuBackend(p);
      absl::StatusOr<std::unique_ptr<TapFuser>> fuser = TapFuser::Open(dir, target_backend.get());
      ASSERT_TRUE(fuser.ok()) << fuser.status();
      drafter::DrafterModelOptions options;
      options.pool = p;
      absl::StatusOr<std::unique_ptr<drafter::DrafterModel>> model =
          drafter::DrafterModel::Open(dir, options);
      ASSERT_TRUE(model.ok()) << model.status();
      EXPECT_EQ((*fuser)->raw_width(), 3 * 128);
      EXPECT_EQ((*fuser)->fused_width(), 128);
      EXPECT_EQ((*fuser)->target_layer_ids(), (std::vector<int64_t>{0, 1, 2}));
      EXPECT_EQ((*fuser)->drafter_fingerprint(), *CheckpointFingerprint(dir));
      for (int64_t rows : {1, 2, 7, 33}) {
        const std::vector<float> raw = RandomRows(rows, 3 * 128, 100 + rows);
        std::vector<float> want(rows * 128, -1.0f), got(rows * 128, -2.0f);
        ASSERT_TRUE((*model)->FuseTaps(raw.data(), rows, want.data()).ok());
        ASSERT_TRUE((*fuser)->Fuse(raw.data(), rows, got.data()).ok());
        EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
            << "rows " << rows << " dflash2 " << dflash2;
        // Rows already in the backend's memory, as the verifier hands them over.
        auto in = target_backend->UploadFloats(raw);
        auto out = target_backend->AllocateFloats(rows * 128);
        ASSERT_TRUE(in.ok() && out.ok());
        ASSERT_TRUE((*fuser)->FuseOnBackend((*in)->floats(), rows, (*out)->floats()).ok());
        std::vector<float> on_backend(rows * 128, -3.0f);
        ASSERT_TRUE(
            target_backend->Download(on_backend.data(), **out, 0, on_backend.size() * sizeof(float))
                .ok());
        EXPECT_EQ(std::memcmp(want.data(), on_backend.data(), want.size() * sizeof(float)), 0)
            << "on the backend, rows " << rows << " dflash2 " << dflash2;
      }
    }
  }
}

TEST(TapFuserTest, RefusesBadInput) {
  const std::string dir = testing::WriteRandomDrafter("tap_fuser_bad", false, 3, 64, 256, {0, 1});
  const std::unique_ptr<backend::Backend> host = cpu::NewCpuBackend(nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(TapFuser::Open(dir, nullptr).status()));
  absl::StatusOr<std::unique_ptr<TapFuser>> fuser = TapFuser::Open(dir, host.get());
  ASSERT_TRUE(fuser.ok()) << fuser.status();
  std::vector<float> raw(2 * 128), out(64);
  const absl::Status negative = (*fuser)->Fuse(raw.data(), -1, out.data());
  EXPECT_TRUE(absl::IsInvalidArgument(negative)) << negative;
  EXPECT_TRUE((*fuser)->Fuse(raw.data(), 0, out.data()).ok());

  const absl::StatusOr<std::unique_ptr<TapFuser>> missing =
      TapFuser::Open((std::filesystem::path(dir) / "no-such-folder").string(), host.get());
  EXPECT_FALSE(missing.ok());

  // A config that promises three taps while fc reads two: the shape error names fc.
  const std::filesystem::path wrong = std::filesystem::temp_directory_path() / "tap_fuser_wrong";
  std::filesystem::create_directories(wrong);
  std::filesystem::copy(std::filesystem::path(dir) / "model.safetensors",
                        wrong / "model.safetensors",
                        std::filesystem::copy_options::overwrite_existing);
  nlohmann::json config;
  std::ifstream(std::filesystem::path(dir) / "config.json") >> config;
  config["dflash_config"]["target_layer_ids"] = {0, 1, 2};
  std::ofstream(wrong / "config.json") << config.dump();
  const absl::StatusOr<std::unique_ptr<TapFuser>> bad = TapFuser::Open(wrong.string(), host.get());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fc"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace twinspan::engine
