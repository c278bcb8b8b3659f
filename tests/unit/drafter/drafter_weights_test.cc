// Loading refuses missing or misshapen DFlash2 tensors, naming them; uses the golden DFlash2 tiny
// checkpoint (golden/README.md section 8) as the well-formed starting point.
#include "services/drafter/drafter_weights.h"

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "common/safetensors/checkpoint.h"
#include "common/safetensors/writer.h"
#include "gtest/gtest.h"
#include "tests/testing/golden.h"

namespace twinspan::drafter {
namespace {

// Copies the golden checkpoint's tensors, lets `edit` change the list, writes it to a temp file.
std::string Rewrite(const std::string& name,
                    const std::function<void(std::vector<OwnedTensor>&)>& edit) {
  auto source = Checkpoint::Open(testing::GoldenPath("dflash2_drafter_tiny/model"));
  EXPECT_TRUE(source.ok()) << source.status();
  std::vector<OwnedTensor> tensors;
  for (const std::string& tensor : (*source)->Names()) {
    const TensorView view = *(*source)->Get(tensor);
    OwnedTensor owned{tensor, view.dtype, view.shape, {}};
    owned.bytes.assign(view.data, view.data + view.nbytes);
    tensors.push_back(std::move(owned));
  }
  edit(tensors);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("drafter_weights_test_" + name + ".safetensors"))
          .string();
  EXPECT_TRUE(WriteSafetensors(path, tensors).ok());
  return path;
}

absl::StatusOr<DrafterWeights> LoadRewritten(
    const std::string& name, const std::function<void(std::vector<OwnedTensor>&)>& edit,
    DrafterKind kind = DrafterKind::kDFlash2) {
  auto config = LoadDrafterConfig(testing::GoldenPath("dflash2_drafter_tiny/model"));
  EXPECT_TRUE(config.ok()) << config.status();
  config->kind = kind;
  const std::string path = Rewrite(name, edit);
  auto checkpoint = Checkpoint::Open(path);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status();
  auto weights = LoadDrafterWeights(**checkpoint, *config);
  std::remove(path.c_str());
  return weights;
}

void Drop(std::vector<OwnedTensor>& tensors, const std::string& name) {
  std::erase_if(tensors, [&](const OwnedTensor& t) { return t.name == name; });
}

TEST(DrafterWeightsTest, LoadsThePublishedLayout) {
  auto weights = LoadRewritten("ok", [](std::vector<OwnedTensor>&) {});
  ASSERT_TRUE(weights.ok()) << weights.status();
  ASSERT_TRUE(weights->selector.has_value());
  EXPECT_EQ(weights->selector->predecessor.type, cpu::CodebookType::kBF16);
  EXPECT_EQ(weights->layers.size(), 2u);
  EXPECT_TRUE(weights->layers[1].mlp_conv.has_value());
}

TEST(DrafterWeightsTest, AcceptsCodebooksWithAWeightSuffix) {
  auto weights = LoadRewritten("suffix", [](std::vector<OwnedTensor>& tensors) {
    for (OwnedTensor& t : tensors) {
      if (t.name.ends_with("_codebook")) t.name += ".weight";
    }
  });
  ASSERT_TRUE(weights.ok()) << weights.status();
}

TEST(DrafterWeightsTest, MissingDFlash2TensorsAreNotFoundByName) {
  for (const std::string name :
       {"layers.1.mlp_conv.base_kernel", "layers.0.attention_conv.kernel_projection.weight",
        "candidate_selector.successor_codebook", "candidate_selector.hidden_projection.weight"}) {
    auto weights = LoadRewritten("missing", [&](std::vector<OwnedTensor>& t) { Drop(t, name); });
    ASSERT_FALSE(weights.ok()) << name;
    EXPECT_EQ(weights.status().code(), absl::StatusCode::kNotFound) << weights.status();
    EXPECT_NE(weights.status().message().find(name), std::string::npos) << weights.status();
  }
}

TEST(DrafterWeightsTest, MisshapenTensorsNameTheTensorAndTheExpectedShape) {
  struct Case {
    std::string name;
    std::vector<int64_t> shape;
    std::string expected;
  };
  for (const Case& c :
       {Case{"layers.0.mlp_conv.base_kernel", {4, 256}, "[2, 2, 256]"},
        Case{"layers.1.attention_conv.kernel_projection.weight", {32, 512}, "[64, 256]"},
        Case{"candidate_selector.predecessor_codebook", {2048, 64}, "[4096, 32]"}}) {
    auto weights = LoadRewritten("shape", [&](std::vector<OwnedTensor>& tensors) {
      for (OwnedTensor& t : tensors) {
        if (t.name == c.name) t.shape = c.shape;  // Same element count, wrong shape.
      }
    });
    ASSERT_FALSE(weights.ok()) << c.name;
    EXPECT_EQ(weights.status().code(), absl::StatusCode::kInvalidArgument) << weights.status();
    EXPECT_NE(weights.status().message().find(c.name), std::string::npos) << weights.status();
    EXPECT_NE(weights.status().message().find(c.expected), std::string::npos) << weights.status();
  }
}

TEST(DrafterWeightsTest, AsDFlashV1TheConvAndSelectorTensorsAreNotNeeded) {
  auto weights = LoadRewritten(
      "v1",
      [](std::vector<OwnedTensor>& tensors) {
        std::erase_if(tensors, [](const OwnedTensor& t) {
          return t.name.find("_conv.") != std::string::npos ||
                 t.name.starts_with("candidate_selector.");
        });
      },
      DrafterKind::kDFlash);
  ASSERT_TRUE(weights.ok()) << weights.status();
  EXPECT_FALSE(weights->selector.has_value());
  EXPECT_FALSE(weights->layers[0].attention_conv.has_value());
}

}  // namespace
}  // namespace twinspan::drafter
