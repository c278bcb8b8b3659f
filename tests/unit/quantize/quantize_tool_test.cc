// twinspan-quantize's driver (tools/quantize/quantize_model.h) on tiny checkpoints: what it writes
// loads in our target model and runs, has exllamav3's tensor names, dtypes and configs; every bad
// input fails with its own error and leaves no output folder (nor a staging one) behind. Most cases
// encode with the greedy test encoder (the pipeline around the encoder is what they test); one runs
// the real Viterbi end to end.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "common/exl3/weight.h"
#include "common/safetensors/checkpoint.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "services/target/target_model.h"
#include "tests/unit/quantize/greedy_tile_encoder.h"
#include "tests/unit/quantize/tiny_hf_checkpoint.h"
#include "tools/quantize/quantize_model.h"

namespace twinspan::quantize {
namespace {

namespace fs = std::filesystem;
using testing::TinyModel;

QuantizeOptions Options(const std::string& in, const std::string& out) {
  QuantizeOptions o;
  o.in_dir = in;
  o.out_dir = out;
  o.cal_rows = 4;
  o.cal_cols = 32;
  o.threads = 2;
  return o;
}

const testing::GreedyTileEncoder kGreedy;

absl::StatusOr<QuantizeSummary> Quantize(const QuantizeOptions& o,
                                         const exl3::quantize::TileEncoder* encoder = &kGreedy) {
  std::FILE* sink = std::tmpfile();
  Progress progress(sink, false);
  absl::StatusOr<QuantizeSummary> s = QuantizeModel(o, progress, encoder);
  std::fclose(sink);
  return s;
}

nlohmann::json ReadJson(const fs::path& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

// Nothing named like the output, staged or final, is left beside it.
void ExpectNothingLeft(const std::string& out) {
  const fs::path parent = fs::path(out).parent_path();
  const std::string name = fs::path(out).filename().string();
  EXPECT_FALSE(fs::exists(out)) << out;
  if (!fs::is_directory(parent)) return;
  for (const auto& e : fs::directory_iterator(parent)) {
    EXPECT_EQ(e.path().filename().string().find("." + name + ".partial"), std::string::npos)
        << e.path();
  }
}

std::string FreshOut(const std::string& name) {
  const fs::path out = fs::path(::testing::TempDir()) / name;
  fs::remove_all(out);
  return out.string();
}

TEST(QuantizeToolTest, Qwen35CheckpointLoadsAndRuns) {
  const std::string in = testing::WriteTinyModel(
      "tiny35", testing::TinyQwen35(),
      {"tokenizer.json", "tokenizer_config.json", "generation_config.json", "chat_template.jinja"});
  const std::string out = FreshOut("tiny35-exl3");
  fs::create_directories(out);  // An empty folder is replaced.
  QuantizeOptions o = Options(in, out);
  o.bits = 4.5;  // Groups at K = 4 and 5.
  absl::StatusOr<QuantizeSummary> summary = Quantize(o);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->tensors, 14);  // 6 GDN-layer and 7 attention-layer linears, and the head.
  EXPECT_GT(summary->average_bits, 4.0);
  EXPECT_LE(summary->average_bits, 4.5);
  EXPECT_LT(summary->worst_proxy_error, 1.0);  // Greedy codes: only sane, not good.

  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json",
                        "chat_template.jinja", "quantization_config.json"}) {
    EXPECT_TRUE(fs::exists(fs::path(out) / f)) << f;
  }
  const nlohmann::json config = ReadJson(fs::path(out) / "config.json");
  EXPECT_EQ(config["tie_word_embeddings"], false);  // Un-tied: the head is its own EXL3 linear.
  const nlohmann::json& q = config["quantization_config"];
  EXPECT_EQ(q["quant_method"], "exl3");
  EXPECT_EQ(q["version"], "1.4.1");
  EXPECT_EQ(q["head_bits"], 6);
  EXPECT_EQ(q["codebook"], "mul1");
  EXPECT_EQ(q["calibration"]["rows"], 4);
  EXPECT_EQ(q["quantizer"], "twinspan-quantize");
  EXPECT_NEAR(q["bits"].get<double>(), summary->average_bits, 0.005);
  const nlohmann::json storage = ReadJson(fs::path(out) / "quantization_config.json");
  const nlohmann::json& head = storage["tensor_storage"]["lm_head"];
  EXPECT_EQ(head["quant_format"], "exl3");
  EXPECT_EQ(head["bits_per_weight"], 6);
  EXPECT_EQ(head["mul1_multiplier"], 0x83DCD12Du);

  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::Open(out);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  const std::string g = "model.language_model.layers.0.linear_attn.";
  EXPECT_EQ((*ckpt)->Find(g + "in_proj_a.weight")->dtype, DType::kF16);
  EXPECT_EQ((*ckpt)->Find(g + "conv1d.weight")->dtype, DType::kBF16);
  EXPECT_EQ((*ckpt)->Find("model.language_model.embed_tokens.weight")->dtype, DType::kBF16);
  EXPECT_FALSE((*ckpt)->Has(g + "in_proj_qkv.weight"));
  absl::StatusOr<exl3::Weight> qkv = exl3::Weight::Load(**ckpt, g + "in_proj_qkv");
  ASSERT_TRUE(qkv.ok()) << qkv.status();
  absl::StatusOr<exl3::Weight> lm_head = exl3::Weight::Load(**ckpt, "lm_head");
  ASSERT_TRUE(lm_head.ok()) << lm_head.status();
  EXPECT_EQ(lm_head->bits(), 6);

  target::TargetOptions t;
  t.context = 16;
  absl::StatusOr<std::unique_ptr<target::TargetModel>> model = target::OpenTargetModel(out, t);
  ASSERT_TRUE(model.ok()) << model.status();
  auto state = (*model)->NewSequence();
  ASSERT_TRUE(state.ok());
  const std::vector<int32_t> ids = {1, 5, 9, 200};
  target::ForwardRequest request;
  request.tokens = ids;
  target::ForwardResult result;
  ASSERT_TRUE((*model)->Forward(**state, request, &result).ok());
  for (float v : result.logits) ASSERT_TRUE(std::isfinite(v));
  ExpectNothingLeft(FreshOut("tiny35-exl3-none"));
}

TEST(QuantizeToolTest, ViterbiEndToEnd) {
  const std::string in = testing::WriteTinyModel("tiny3v", testing::TinyQwen3(1, false, 128));
  QuantizeOptions o = Options(in, FreshOut("tiny3v-exl3"));
  o.head_bits = 16;
  o.codebook = exl3::Codebook::kMcg;
  absl::StatusOr<QuantizeSummary> summary = Quantize(o, nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->tensors, 7);
  EXPECT_LT(summary->worst_proxy_error, 0.01);  // exllamav3's bound at K = 4.
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::Open(o.out_dir);
  ASSERT_TRUE(ckpt.ok());
  absl::StatusOr<exl3::Weight> down = exl3::Weight::Load(**ckpt, "model.layers.0.mlp.down_proj");
  ASSERT_TRUE(down.ok()) << down.status();
  EXPECT_EQ(down->codebook(), exl3::Codebook::kMcg);
  EXPECT_EQ((*ckpt)->Find("lm_head.weight")->dtype, DType::kBF16);  // Head bits 16 keep it.
  target::TargetOptions t;
  t.context = 8;
  EXPECT_TRUE(target::OpenTargetModel(o.out_dir, t).ok());
}

TEST(QuantizeToolTest, SameBytesForAnyThreadCount) {
  const std::string in = testing::WriteTinyModel("tiny3", testing::TinyQwen3(1, false));
  QuantizeOptions one = Options(in, FreshOut("tiny3-one"));
  one.threads = 1;
  QuantizeOptions two = one;
  two.out_dir = FreshOut("tiny3-two");
  two.threads = 2;
  ASSERT_TRUE(Quantize(one).ok());
  ASSERT_TRUE(Quantize(two).ok());
  std::ifstream a(fs::path(one.out_dir) / "model.safetensors", std::ios::binary);
  std::ifstream b(fs::path(two.out_dir) / "model.safetensors", std::ios::binary);
  const std::string bytes_a((std::istreambuf_iterator<char>(a)), {});
  const std::string bytes_b((std::istreambuf_iterator<char>(b)), {});
  EXPECT_FALSE(bytes_a.empty());
  EXPECT_TRUE(bytes_a == bytes_b);
}

// One bad input per case: its status code and the word that names it; nothing left at --out.
void ExpectRefused(const QuantizeOptions& o, absl::StatusCode code, const std::string& names) {
  absl::StatusOr<QuantizeSummary> s = Quantize(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), code) << s.status();
  EXPECT_NE(s.status().message().find(names), std::string::npos) << s.status();
  ExpectNothingLeft(o.out_dir);
}

TEST(QuantizeToolTest, BadInputIsRefusedAndLeavesNothing) {
  const std::string good = testing::WriteTinyModel("good3", testing::TinyQwen3(1, true));
  const std::string out = FreshOut("refused");

  TinyModel missing = testing::TinyQwen3(1, true);
  std::erase_if(missing.tensors, [](const OwnedTensor& t) {
    return t.name == "model.layers.0.mlp.down_proj.weight";
  });
  ExpectRefused(Options(testing::WriteTinyModel("missing", missing), out),
                absl::StatusCode::kNotFound, "model.layers.0.mlp.down_proj.weight");

  TinyModel llama = testing::TinyQwen3(1, true);
  llama.config["model_type"] = "llama";
  ExpectRefused(Options(testing::WriteTinyModel("llama", llama), out),
                absl::StatusCode::kInvalidArgument, "llama");

  TinyModel moe = testing::TinyQwen3(1, true);
  moe.config["num_experts"] = 4;
  ExpectRefused(Options(testing::WriteTinyModel("moe", moe), out), absl::StatusCode::kUnimplemented,
                "mixture-of-experts");

  TinyModel ints = testing::TinyQwen3(1, true);
  for (OwnedTensor& t : ints.tensors) {
    if (t.name == "model.layers.0.self_attn.o_proj.weight") {
      t.dtype = DType::kI16;
    }
  }
  ExpectRefused(Options(testing::WriteTinyModel("ints", ints), out),
                absl::StatusCode::kInvalidArgument, "o_proj.weight is I16");

  TinyModel shaped = testing::TinyQwen3(1, true);
  for (OwnedTensor& t : shaped.tensors) {
    if (t.name == "model.layers.0.mlp.up_proj.weight") t.shape = {128, 256};
  }
  ExpectRefused(Options(testing::WriteTinyModel("shaped", shaped), out),
                absl::StatusCode::kInvalidArgument, "up_proj.weight is [128, 256]");

  TinyModel quantized = testing::TinyQwen3(1, true);
  quantized.config["quantization_config"] = {{"quant_method", "exl3"}};
  ExpectRefused(Options(testing::WriteTinyModel("quantized", quantized), out),
                absl::StatusCode::kFailedPrecondition, "already EXL3");

  QuantizeOptions orphan = Options(good, good + "/no-such-parent/out");
  ExpectRefused(orphan, absl::StatusCode::kNotFound, "no-such-parent");

  QuantizeOptions bits = Options(good, out);
  bits.bits = 9;
  ExpectRefused(bits, absl::StatusCode::kInvalidArgument, "--bits 9");
  bits.bits = 0.5;
  ExpectRefused(bits, absl::StatusCode::kInvalidArgument, "--bits 0.5");
  QuantizeOptions head = Options(good, out);
  head.head_bits = 9;
  ExpectRefused(head, absl::StatusCode::kInvalidArgument, "--head-bits 9");

  // cuda:N depends on the build and the machine: open_encoder_test and tests/cuda cover it.
  QuantizeOptions device = Options(good, out);
  device.device = "gpu0";
  ExpectRefused(device, absl::StatusCode::kInvalidArgument, "--device \"gpu0\"");

  ExpectRefused(Options(good + "/no-such-model", out), absl::StatusCode::kNotFound,
                "no-such-model");

  // An output that exists with something in it is left exactly as it was.
  fs::create_directories(out);
  std::ofstream(fs::path(out) / "keep.txt") << "mine";
  absl::StatusOr<QuantizeSummary> busy = Quantize(Options(good, out));
  EXPECT_EQ(busy.status().code(), absl::StatusCode::kAlreadyExists) << busy.status();
  EXPECT_TRUE(fs::exists(fs::path(out) / "keep.txt"));
  fs::remove_all(out);

  // A folder where nothing can be created (/proc refuses new entries even to root).
  QuantizeOptions unwritable = Options(good, "/proc/twinspan-quantize-test");
  absl::StatusOr<QuantizeSummary> denied = Quantize(unwritable);
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied) << denied.status();
  EXPECT_NE(denied.status().message().find("/proc"), std::string::npos);

  // A calibration file that is not there (and a model without a tokenizer for it).
  QuantizeOptions text = Options(good, out);
  text.calibration_file = good + "/missing.txt";
  ExpectRefused(text, absl::StatusCode::kNotFound, "tokenizer.json");
}

}  // namespace
}  // namespace twinspan::quantize
