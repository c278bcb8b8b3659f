// Loading Qwen3.5 checkpoints as published: the qwen3_5 wrapper config (text_config inside), the
// text model under model.language_model., lm_head at the root, and vision / MTP tensors that must
// never be read. Built from the golden qwen3_5_text model, which uses the model. prefix.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "common/safetensors/checkpoint.h"
#include "common/safetensors/writer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "services/target/target_model.h"
#include "tests/testing/golden.h"

namespace twinspan::target {
namespace {

namespace fs = std::filesystem;

class Qwen35LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_ = twinspan::testing::GoldenPath("hf_qwen3_5_tiny/model");
    ASSERT_FALSE(source_.empty());
    std::ifstream in(source_ + "/config.json");
    text_config_ = nlohmann::json::parse(in);
    auto ckpt = Checkpoint::Open(source_);
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    for (const std::string& name : (*ckpt)->Names()) {
      const TensorView* view = (*ckpt)->Find(name);
      OwnedTensor t{name, view->dtype, view->shape, {}};
      t.bytes.assign(view->data, view->data + view->nbytes);
      tensors_.push_back(std::move(t));
    }
  }

  // Writes the golden tensors in the published layout (after `edit`) with a qwen3_5 wrapper
  // config, and returns the folder.
  std::string WritePublishedLayout(const std::string& folder,
                                   void (*edit)(std::vector<OwnedTensor>&) = nullptr) {
    const fs::path dir = fs::path(::testing::TempDir()) / folder;
    fs::create_directories(dir);
    std::vector<OwnedTensor> out;
    for (const OwnedTensor& t : tensors_) {
      OwnedTensor copy = t;
      if (absl::StartsWith(copy.name, "model.")) {
        copy.name = absl::StrReplaceAll(copy.name, {{"model.", "model.language_model."}});
      }
      out.push_back(std::move(copy));
    }
    // Tensors a text target must skip; wrong shapes prove they are never read.
    out.push_back(OwnedTensor::FromFloats("mtp.fc.weight", {3}, {1, 2, 3}));
    out.push_back(OwnedTensor::FromFloats("mtp.layers.0.input_layernorm.weight", {1}, {1}));
    out.push_back(OwnedTensor::FromFloats("model.visual.blocks.0.attn.qkv.weight", {2}, {1, 2}));
    if (edit != nullptr) edit(out);
    EXPECT_TRUE(WriteSafetensors((dir / "model.safetensors").string(), out).ok());
    nlohmann::json text = text_config_;
    text["model_type"] = "qwen3_5_text";
    nlohmann::json wrapper = {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
                              {"model_type", "qwen3_5"},
                              {"text_config", text},
                              {"vision_config", {{"model_type", "qwen3_5_vision"}, {"depth", 1}}},
                              {"tie_word_embeddings", false}};
    std::ofstream(dir / "config.json") << wrapper.dump(2);
    return dir.string();
  }

  static TargetOptions Options() {
    TargetOptions options;
    options.kv_dtype = cpu::KvDtype::kF32;
    options.context = 64;
    return options;
  }

  static std::vector<float> Logits(const TargetModel& model) {
    auto state = model.NewSequence();
    EXPECT_TRUE(state.ok());
    const std::vector<int32_t> tokens = {5, 4000, 17, 256, 3};
    ForwardRequest request;
    request.tokens = tokens;
    ForwardResult result;
    EXPECT_TRUE(model.Forward(**state, request, &result).ok());
    return result.logits;
  }

  std::string source_;
  nlohmann::json text_config_;
  std::vector<OwnedTensor> tensors_;
};

TEST_F(Qwen35LoaderTest, PublishedLayoutLoadsAndMatchesTextLayoutBitForBit) {
  auto text_model = OpenTargetModel(source_, Options());
  ASSERT_TRUE(text_model.ok()) << text_model.status();
  auto published = OpenTargetModel(WritePublishedLayout("qwen35_published"), Options());
  ASSERT_TRUE(published.ok()) << published.status();
  EXPECT_EQ((*published)->config().model_type, "qwen3_5");
  const std::vector<float> a = Logits(**text_model), b = Logits(**published);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

TEST_F(Qwen35LoaderTest, MissingGdnTensorIsNotFoundNamingIt) {
  auto model = OpenTargetModel(
      WritePublishedLayout("qwen35_missing_dt_bias",
                           [](std::vector<OwnedTensor>& t) {
                             std::erase_if(t, [](const OwnedTensor& x) {
                               return x.name == "model.language_model.layers.1.linear_attn.dt_bias";
                             });
                           }),
      Options());
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(model.status().message(), "layers.1.linear_attn.dt_bias"))
      << model.status();
}

TEST_F(Qwen35LoaderTest, WrongConvShapeIsInvalidArgumentNamingIt) {
  auto model = OpenTargetModel(
      WritePublishedLayout("qwen35_bad_conv",
                           [](std::vector<OwnedTensor>& t) {
                             for (OwnedTensor& x : t) {
                               if (x.name ==
                                   "model.language_model.layers.2.linear_attn.conv1d.weight") {
                                 x.shape = {640, 1, 2};  // Kernel 2 where the config says 4.
                                 x.bytes.resize(640 * 2 * 2);
                               }
                             }
                           }),
      Options());
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(model.status().message(), "layers.2.linear_attn.conv1d.weight"))
      << model.status();
}

}  // namespace
}  // namespace twinspan::target
