// twinspan-synth's presets (tools/synth/): the Qwen3.8-27B pair's config.json and tensor inventory
// against shared/reference/qwen3.8-27b-configs.md (sections 1.2, 1.3, 2 and 2.1), and the tiny
// presets written, opened by the target and drafter loaders, run through a forward and a draft.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/config/drafter_config.h"
#include "common/config/target_config.h"
#include "common/exl3/bit_allocation.h"
#include "common/exl3/weight.h"
#include "common/hash/sha256.h"
#include "common/safetensors/checkpoint.h"
#include "common/safetensors/half.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "nlohmann/json.hpp"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"
#include "tests/testing/speculative_loop.h"
#include "tools/synth/fill.h"
#include "tools/synth/presets.h"
#include "tools/synth/shard_writer.h"

namespace twinspan::synth {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Shape = std::vector<int64_t>;

CheckpointSpec Preset(const std::string& name, PresetOptions options = {}) {
  auto spec = MakePreset(name, options, false, false);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *std::move(spec) : CheckpointSpec{};
}

std::map<std::string, TensorSpec> ByName(const CheckpointSpec& spec) {
  std::map<std::string, TensorSpec> out;
  for (const TensorSpec& t : spec.tensors) out[t.name] = t;
  return out;
}

std::string WritePreset(const std::string& name, const std::string& folder, int threads = 3,
                        PresetOptions options = {}, int64_t max_shard_bytes = 4'000'000'000) {
  std::string dir = (fs::temp_directory_path() / folder).string();
  fs::remove_all(dir);
  auto report =
      WriteCheckpoint(Preset(name, options), dir,
                      {.seed = 7, .threads = threads, .max_shard_bytes = max_shard_bytes});
  EXPECT_TRUE(report.ok()) << report.status();
  return dir;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Section 2: the published config.json, rebuilt byte for byte (size and sha256 as recorded).
TEST(SynthTest, DrafterConfigIsThePublishedFile) {
  const CheckpointSpec spec = Preset("qwen3.8-27b-dflash2");
  EXPECT_EQ(spec.config_json.size(), 1239u);
  EXPECT_EQ(*hash::Sha256Hex(spec.config_json),
            "873e3556509b0da06e29654ba00d4944888d4b5e8a33afde25f7eb27d321e980");
  auto config = drafter::ParseDrafterConfig(json::parse(spec.config_json), "synth");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->kind, drafter::DrafterKind::kDFlash2);
  EXPECT_EQ(config->block_size, 8);
  EXPECT_EQ(config->mask_token_id, 248070);
  EXPECT_EQ(config->target_layer_ids, (std::vector<int64_t>{5, 19, 33, 47, 61}));
  EXPECT_EQ(config->selector_rank, 256);
  EXPECT_EQ(config->selector_top_k, 16);
  EXPECT_FALSE(config->layers[0].causal);
  EXPECT_EQ(config->layers[4].sliding_window, 2048);
}

// Section 2.1: 81 tensors = 5 x 15 + 6 with the reference shapes, all bf16.
TEST(SynthTest, DrafterInventoryIsTheReferenceTable) {
  const CheckpointSpec spec = Preset("qwen3.8-27b-dflash2");
  ASSERT_EQ(spec.tensors.size(), 81u);
  std::map<std::string, Shape> want = {{"fc.weight", {5120, 25600}},
                                       {"hidden_norm.weight", {5120}},
                                       {"norm.weight", {5120}},
                                       {"candidate_selector.hidden_projection.weight", {256, 5120}},
                                       {"candidate_selector.predecessor_codebook", {248320, 256}},
                                       {"candidate_selector.successor_codebook", {248320, 256}}};
  for (int i = 0; i < 5; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    want[p + "input_layernorm.weight"] = {5120};
    want[p + "post_attention_layernorm.weight"] = {5120};
    want[p + "self_attn.q_proj.weight"] = {4096, 5120};
    want[p + "self_attn.k_proj.weight"] = {1024, 5120};
    want[p + "self_attn.v_proj.weight"] = {1024, 5120};
    want[p + "self_attn.o_proj.weight"] = {5120, 4096};
    want[p + "self_attn.q_norm.weight"] = {128};
    want[p + "self_attn.k_norm.weight"] = {128};
    want[p + "mlp.gate_proj.weight"] = {17408, 5120};
    want[p + "mlp.up_proj.weight"] = {17408, 5120};
    want[p + "mlp.down_proj.weight"] = {5120, 17408};
    want[p + "attention_conv.base_kernel"] = {2, 2, 5120};
    want[p + "mlp_conv.base_kernel"] = {2, 2, 5120};
    want[p + "attention_conv.kernel_projection.weight"] = {1280, 5120};
    want[p + "mlp_conv.kernel_projection.weight"] = {1280, 5120};
  }
  int64_t params = 0;
  for (const TensorSpec& t : spec.tensors) {
    ASSERT_TRUE(want.count(t.name)) << t.name;
    EXPECT_EQ(t.shape, want[t.name]) << t.name;
    EXPECT_EQ(t.dtype, DType::kBF16) << t.name;
    params += t.numel();
  }
  EXPECT_NEAR(static_cast<double>(params) / 1e9, 1.924, 0.001);  // The reference's total.
}

// Section 1: the wrapper's and text_config's values, parsed as the target loader parses them.
TEST(SynthTest, TargetConfigHasTheReferenceValues) {
  const CheckpointSpec spec = Preset("qwen3.8-27b");
  const json c = json::parse(spec.config_json);
  EXPECT_EQ(c["architectures"], json({"Qwen3_5ForConditionalGeneration"}));
  EXPECT_EQ(c["model_type"], "qwen3_5");
  EXPECT_EQ(c["eos_token_id"], json({248046, 248044}));
  EXPECT_EQ(c["image_token_id"], 248056);
  EXPECT_EQ(c["vision_start_token_id"], 248053);
  EXPECT_EQ(c["tie_word_embeddings"], false);
  EXPECT_EQ(c["generation_config"]["top_k"], 20);
  const json& t = c["text_config"];
  EXPECT_EQ(t["model_type"], "qwen3_5_text");
  EXPECT_EQ(t["vocab_size"], 248320);
  EXPECT_EQ(t["hidden_size"], 5120);
  EXPECT_EQ(t["intermediate_size"], 17408);
  EXPECT_EQ(t["num_hidden_layers"], 64);
  EXPECT_EQ(t["num_attention_heads"], 24);
  EXPECT_EQ(t["num_key_value_heads"], 4);
  EXPECT_EQ(t["head_dim"], 256);
  EXPECT_EQ(t["linear_num_key_heads"], 16);
  EXPECT_EQ(t["linear_num_value_heads"], 48);
  EXPECT_EQ(t["linear_conv_kernel_dim"], 4);
  EXPECT_EQ(t["rope_parameters"]["rope_theta"], 10000000);
  EXPECT_EQ(t["rope_parameters"]["mrope_section"], json({11, 11, 10}));
  EXPECT_EQ(t["partial_rotary_factor"], 0.25);
  const json& q = c["quantization_config"];
  EXPECT_EQ(q["quant_method"], "exl3");
  EXPECT_EQ(q["head_bits"], 6);
  EXPECT_EQ(q["codebook"], "mul1");
  EXPECT_EQ(q["bits"], 3.5);
  auto parsed = target::ParseTargetConfig(c, "synth");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->exl3);
  EXPECT_EQ(parsed->rotary_dim, 64);
  for (int64_t i = 0; i < 64; ++i) {
    EXPECT_EQ(parsed->layer_types[i] == target::LayerType::kFullAttention, i % 4 == 3) << i;
  }
}

// Sections 1.3 and 1.4: the text tensors under their EXL3 names and the derived shapes.
TEST(SynthTest, TargetInventoryIsTheExl3PackOfTheReferenceShapes) {
  const CheckpointSpec spec = Preset("qwen3.8-27b");
  const auto t = ByName(spec);
  // 3 + 64 x 5 plain-or-linear names of the bf16 checkpoint become, per EXL3 linear, 4 tensors.
  EXPECT_EQ(spec.tensors.size(), 2054u);
  int linears = 0;
  for (const TensorSpec& s : spec.tensors) linears += s.name.ends_with(".trellis");
  EXPECT_EQ(linears, 401);  // 64 x 3 MLP + 16 x 4 attention + 48 x 3 GDN + lm_head.
  const std::string p = "model.language_model.layers.";
  // Trellis [k / 16, n / 16, 16 K] of EXL3's [k = in, n = out].
  const std::map<std::string, std::pair<int64_t, int64_t>> in_out = {
      {p + "3.self_attn.q_proj", {5120, 12288}},
      {p + "3.self_attn.k_proj", {5120, 1024}},
      {p + "3.self_attn.v_proj", {5120, 1024}},
      {p + "3.self_attn.o_proj", {6144, 5120}},
      {p + "0.linear_attn.in_proj_qkv", {5120, 10240}},
      {p + "0.linear_attn.in_proj_z", {5120, 6144}},
      {p + "0.linear_attn.out_proj", {6144, 5120}},
      {p + "63.mlp.gate_proj", {5120, 17408}},
      {p + "63.mlp.up_proj", {5120, 17408}},
      {p + "63.mlp.down_proj", {17408, 5120}},
      {"lm_head", {5120, 248320}}};
  for (const auto& [prefix, kn] : in_out) {
    ASSERT_TRUE(t.count(prefix + ".trellis")) << prefix;
    const Shape& s = t.at(prefix + ".trellis").shape;
    EXPECT_EQ(s[0], kn.first / 16) << prefix;
    EXPECT_EQ(s[1], kn.second / 16) << prefix;
    EXPECT_EQ(t.at(prefix + ".trellis").dtype, DType::kI16);
    EXPECT_EQ(t.at(prefix + ".suh").shape, Shape{kn.first}) << prefix;
    EXPECT_EQ(t.at(prefix + ".svh").shape, Shape{kn.second}) << prefix;
    EXPECT_EQ(t.at(prefix + ".mul1").shape, Shape{}) << prefix;
  }
  EXPECT_EQ(t.at("lm_head.trellis").shape[2], 16 * 6);
  const std::map<std::string, std::pair<Shape, DType>> plain = {
      {"model.language_model.embed_tokens.weight", {{248320, 5120}, DType::kBF16}},
      {"model.language_model.norm.weight", {{5120}, DType::kBF16}},
      {p + "0.input_layernorm.weight", {{5120}, DType::kBF16}},
      {p + "0.linear_attn.in_proj_a.weight", {{48, 5120}, DType::kF16}},
      {p + "0.linear_attn.in_proj_b.weight", {{48, 5120}, DType::kF16}},
      {p + "0.linear_attn.conv1d.weight", {{10240, 1, 4}, DType::kBF16}},
      {p + "0.linear_attn.A_log", {{48}, DType::kBF16}},
      {p + "0.linear_attn.dt_bias", {{48}, DType::kBF16}},
      {p + "0.linear_attn.norm.weight", {{128}, DType::kBF16}},
      {p + "3.self_attn.q_norm.weight", {{256}, DType::kBF16}}};
  for (const auto& [name, shape_dtype] : plain) {
    ASSERT_TRUE(t.count(name)) << name;
    EXPECT_EQ(t.at(name).shape, shape_dtype.first) << name;
    EXPECT_EQ(t.at(name).dtype, shape_dtype.second) << name;
  }
  EXPECT_FALSE(t.count(p + "3.linear_attn.A_log"));
  EXPECT_FALSE(t.count(p + "0.self_attn.q_proj.trellis"));
  EXPECT_NEAR(static_cast<double>(spec.bytes()) / 1e9, 14.2, 0.1);
}

TEST(SynthTest, BodyBitsAreAMixOfThreeAndFourAveragingTheRequest) {
  const CheckpointSpec spec = Preset("qwen3.8-27b");
  double weighted = 0, total = 0;
  for (const TensorSpec& t : spec.tensors) {
    if (!t.name.ends_with(".trellis") || t.name.starts_with("lm_head")) continue;
    const int64_t k = t.shape[2] / 16;
    ASSERT_TRUE(k == 3 || k == 4) << t.name << " K " << k;
    weighted += static_cast<double>(k) * t.shape[0] * t.shape[1];
    total += static_cast<double>(t.shape[0]) * t.shape[1];
  }
  EXPECT_LE(weighted / total, 3.5);
  EXPECT_GT(weighted / total, 3.49);
  PresetOptions four;
  four.exl3.bits = 4;
  for (const TensorSpec& t : Preset("qwen3.8-27b", four).tensors) {
    if (t.name.ends_with(".trellis") && !t.name.starts_with("lm_head")) {
      ASSERT_EQ(t.shape[2], 64) << t.name;
    }
  }
}

TEST(SynthTest, AllocationRefusesBadRequests) {
  EXPECT_FALSE(exl3::AllocateBits({{.layer = 0, .numel = 10}}, 1, 0.5).ok());
  EXPECT_FALSE(exl3::AllocateBits({{.layer = 0, .numel = 10}}, 1, 8.5).ok());
  EXPECT_FALSE(exl3::AllocateBits({{.layer = 2, .numel = 10}}, 2, 4).ok());
  EXPECT_FALSE(exl3::AllocateBits({{.layer = 0, .numel = 0}}, 1, 4).ok());
  auto k = exl3::AllocateBits({{.layer = 0, .numel = 10}, {.layer = 1, .numel = 10}}, 3, 2.5);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(*k, (std::vector<int>{3, 2}));  // Layer 0 is nearer an end than layer 1 of 3.
}

TEST(SynthTest, PresetsRefuseOptionsTheyDoNotTake) {
  EXPECT_EQ(MakePreset("qwen3.8-30b", {}, false, false).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(MakePreset("qwen3.8-27b-dflash2", {}, true, false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakePreset("qwen3.8-27b", {}, false, true).status().code(),
            absl::StatusCode::kInvalidArgument);
  PresetOptions bad;
  bad.exl3.head_bits = 9;
  EXPECT_FALSE(MakePreset("qwen3.8-tiny", bad, true, false).ok());
  bad = {};
  bad.drafter_bits = 8;
  EXPECT_FALSE(MakePreset("qwen3.8-tiny-dflash2", bad, false, true).ok());
}

TEST(SynthTest, FillIsTheSameForAnyChunkingAndStaysInRange) {
  const TensorSpec suh{"x.suh",
                       DType::kF16,
                       {3 * kFillBlockElements},
                       Fill{.kind = FillKind::kSignScale, .lo = 0.02f, .hi = 0.1f}};
  std::vector<std::byte> whole(suh.bytes()), parts(suh.bytes());
  FillElements(suh, 5, 0, suh.numel(), whole.data());
  FillElements(suh, 5, 0, kFillBlockElements, parts.data());
  FillElements(suh, 5, kFillBlockElements, 2 * kFillBlockElements,
               parts.data() + 2 * kFillBlockElements);
  EXPECT_EQ(whole, parts);
  int negative = 0;
  for (int64_t i = 0; i < suh.numel(); ++i) {
    uint16_t h;
    std::memcpy(&h, whole.data() + 2 * i, 2);
    const float v = HalfToFloat(h);
    ASSERT_GE(std::fabs(v), 0.0199f);
    ASSERT_LE(std::fabs(v), 0.1001f);
    negative += v < 0;
  }
  EXPECT_NEAR(negative, 0.5 * suh.numel(), 0.02 * suh.numel());
  std::vector<std::byte> other(suh.bytes());
  FillElements(suh, 6, 0, suh.numel(), other.data());
  EXPECT_NE(whole, other);
}

TEST(SynthTest, SameSeedWritesTheSameBytesOnAnyThreadCount) {
  const std::string a = WritePreset("qwen3.8-tiny", "synth_test_t1", 1);
  const std::string b = WritePreset("qwen3.8-tiny", "synth_test_t4", 4);
  EXPECT_EQ(*hash::Sha256Hex(ReadFile(fs::path(a) / "model.safetensors")),
            *hash::Sha256Hex(ReadFile(fs::path(b) / "model.safetensors")));
  EXPECT_EQ(ReadFile(fs::path(a) / "config.json"), ReadFile(fs::path(b) / "config.json"));
}

TEST(SynthTest, ShardsSplitAtTheLimitAndHoldEveryTensor) {
  const std::string one = WritePreset("qwen3.8-tiny-dflash2", "synth_test_one_shard");
  const std::string many =
      WritePreset("qwen3.8-tiny-dflash2", "synth_test_shards", 2, {}, 1'000'000);
  EXPECT_TRUE(fs::exists(fs::path(many) / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(fs::path(many) / "model.safetensors"));
  auto a = Checkpoint::Open(one);
  auto b = Checkpoint::Open(many);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT((*b)->files().size(), 3u);
  for (const auto& file : (*b)->files()) {
    EXPECT_LE(fs::file_size(file->path()), 1'000'000u + 100'000u) << file->path();
  }
  ASSERT_EQ((*a)->Names(), (*b)->Names());
  EXPECT_EQ((*a)->Names().size(), 81u);
  for (const std::string& name : (*a)->Names()) {
    const TensorView x = *(*a)->Get(name), y = *(*b)->Get(name);
    ASSERT_EQ(x.nbytes, y.nbytes) << name;
    EXPECT_EQ(std::memcmp(x.data, y.data, x.nbytes), 0) << name;
  }
}

// The tiny pair through the real loaders: a target forward with the drafter's taps, then a draft.
TEST(SynthTest, TinyPairOpensForwardsAndDrafts) {
  const std::string target_dir = WritePreset("qwen3.8-tiny", "synth_test_target");
  const std::string drafter_dir = WritePreset("qwen3.8-tiny-dflash2", "synth_test_drafter");
  for (const auto& name : Checkpoint::Open(target_dir).value()->Names()) {
    if (!name.ends_with(".trellis")) continue;
    const std::string prefix = name.substr(0, name.size() - 8);
    EXPECT_TRUE(exl3::Weight::Load(**Checkpoint::Open(target_dir), prefix).ok()) << prefix;
  }
  auto target = target::OpenTargetModel(target_dir, {.context = 64});
  ASSERT_TRUE(target.ok()) << target.status();
  const cpu::LinearWeight* head = cpu::CpuLinearWeight((*target)->lm_head());
  ASSERT_NE(head, nullptr);
  EXPECT_TRUE(head->is_exl3());
  auto drafter =
      drafter::Drafter::Open(drafter_dir, target_dir, {.model = {.context = 64}, .head = "full"});
  ASSERT_TRUE(drafter.ok()) << drafter.status();
  auto state = (*target)->NewSequence();
  ASSERT_TRUE(state.ok());
  const std::vector<int32_t> prompt = {1, 500, 4000, 77, 3000, 12};
  target::ForwardResult result;
  ASSERT_TRUE((*target)
                  ->Forward(**state,
                            {.tokens = prompt,
                             .logits = target::LogitsRows::kAll,
                             .tap_layer_ids = (*drafter)->config().target_layer_ids},
                            &result)
                  .ok());
  ASSERT_EQ(result.logits.size(), prompt.size() * 4096);
  double sum = 0;
  for (const float v : result.logits) {
    ASSERT_TRUE(std::isfinite(v));
    sum += std::fabs(v);
  }
  EXPECT_GT(sum, 0.0);
  for (const float v : result.taps) ASSERT_TRUE(std::isfinite(v));
  auto stream = (*drafter)->NewStream();
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE((*drafter)
                  ->AppendTaps(**stream, drafter::TapForm::kRaw, result.taps,
                               static_cast<int64_t>(prompt.size()))
                  .ok());
  auto proposal = (*drafter)->Propose(**stream, 42, {.walk_uniforms = {}, .want_logits = true});
  ASSERT_TRUE(proposal.ok()) << proposal.status();
  EXPECT_EQ(proposal->ids.size(), 7u);  // Block 8.
  for (const int32_t id : proposal->ids) EXPECT_TRUE(id >= 0 && id < 4096);
  for (const float v : proposal->logits) ASSERT_TRUE(std::isfinite(v));
}

// The exactness contract on the synthetic pair: drafted == plain with the drafter as written
// (bf16), pre-quantized by twinspan-synth (Q4 tensors) and quantized at load; only the drafts
// differ.
TEST(SynthTest, TinyPairDraftedEqualsPlainAtEveryDrafterPrecision) {
  const std::string target_dir = WritePreset("qwen3.8-tiny", "synth_test_exact_target");
  const std::string bf16_dir = WritePreset("qwen3.8-tiny-dflash2", "synth_test_exact_bf16");
  PresetOptions q4;
  q4.drafter_bits = 4;
  const std::string q4_dir = WritePreset("qwen3.8-tiny-dflash2", "synth_test_exact_q4", 2, q4);
  ASSERT_TRUE(Checkpoint::Open(q4_dir).value()->Has("layers.4.mlp.down_proj.q4_codes"));
  ASSERT_TRUE(Checkpoint::Open(q4_dir).value()->Has("fc.weight"));
  auto target = target::OpenTargetModel(target_dir, {.context = 128});
  ASSERT_TRUE(target.ok()) << target.status();
  const std::vector<int32_t> prompt = {3, 1000, 2047, 9, 3500, 100, 7};
  auto plain = drafter::PlainGenerate(**target, prompt, 24);
  ASSERT_TRUE(plain.ok()) << plain.status();
  struct Variant {
    std::string dir;
    drafter::LinearBits bits;
  };
  std::vector<std::vector<std::vector<int32_t>>> proposals;
  for (const Variant& v : {Variant{bf16_dir, drafter::LinearBits::kAsStored},
                           Variant{q4_dir, drafter::LinearBits::kAsStored},
                           Variant{bf16_dir, drafter::LinearBits::kQ4}}) {
    auto d = drafter::Drafter::Open(
        v.dir, target_dir, {.model = {.context = 128, .linear_bits = v.bits}, .head = "full"});
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ((*d)->model().weights().layers[0].up_proj.is_q4(),
              v.bits == drafter::LinearBits::kQ4 || v.dir == q4_dir);
    EXPECT_FALSE((*d)->model().weights().fc.is_q4());
    auto drafted = drafter::SpeculativeGenerate(**target, **d, prompt, 24);
    ASSERT_TRUE(drafted.ok()) << drafted.status();
    EXPECT_EQ(drafted->output_ids, *plain) << v.dir;
    proposals.push_back(drafted->round_proposals);
  }
  EXPECT_NE(proposals[0], proposals[2]) << "4-bit linears should change some proposal";
}

}  // namespace
}  // namespace twinspan::synth
