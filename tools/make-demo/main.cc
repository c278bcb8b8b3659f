// make-demo: writes a small RANDOM target (qwen3) + DFlash2 drafter pair with a byte-level BPE
// tokenizer, as config.json + safetensors, for the demo and the service tests. The weights are
// random: the text is gibberish and drafts are rarely accepted; it exercises the whole serving path
// (tokenizer, chat template, target, drafter, gRPC, router), not model quality.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "common/safetensors/writer.h"
#include "nlohmann/json.hpp"

namespace {

using nlohmann::ordered_json;
using twinspan::DType;
using twinspan::OwnedTensor;

constexpr int kVocab = 512;  // 256 bytes + 252 merges + 4 special tokens
constexpr int kMerges = 252;
constexpr int kEndOfText = 508, kImStart = 509, kImEnd = 510, kMask = 511;

// GPT-2's byte -> printable unicode mapping, as UTF-8 strings.
std::vector<std::string> ByteAlphabet() {
  std::vector<int> printable;
  for (int b = '!'; b <= '~'; ++b) printable.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) printable.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) printable.push_back(b);
  std::vector<int> code(256, -1);
  for (int b : printable) code[b] = b;
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    if (code[b] < 0) code[b] = next++;
  }
  std::vector<std::string> out(256);
  for (int b = 0; b < 256; ++b) {
    const int c = code[b];
    std::string s;
    if (c < 0x80) {
      s.push_back(static_cast<char>(c));
    } else {
      s.push_back(static_cast<char>(0xC0 | (c >> 6)));
      s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
    out[b] = s;
  }
  return out;
}

const char* kCorpus =
    "the quick brown fox jumps over the lazy dog. speculative decoding lets a small drafter "
    "propose tokens that the target model verifies in one forward pass. the tokens are those of "
    "plain decoding; drafts only change the speed. a router splits traffic between head variants "
    "and keeps each session on its variant. the drafter and the target may share one gpu or use "
    "two. hello, how are you today? i am fine, thank you. what is the weather like in the city? "
    "it is sunny and warm, with a light wind from the sea. please tell me a story about a "
    "dragon who learned to read, and about the library where the dragon found the books.";

// Byte-level BPE merges learned greedily from kCorpus (words keep their leading space, as the
// GPT-2 pre-tokenizer splits them).
std::vector<std::pair<std::string, std::string>> LearnMerges(
    const std::vector<std::string>& alphabet) {
  std::vector<std::vector<std::string>> words;
  std::string text = kCorpus;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i + 1;
    while (j < text.size() && text[j] != ' ') ++j;
    std::vector<std::string> word;
    for (size_t k = i; k < j; ++k) word.push_back(alphabet[static_cast<unsigned char>(text[k])]);
    words.push_back(word);
    i = j;
  }
  std::vector<std::pair<std::string, std::string>> merges;
  while (static_cast<int>(merges.size()) < kMerges) {
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const auto& w : words) {
      for (size_t k = 0; k + 1 < w.size(); ++k) counts[{w[k], w[k + 1]}]++;
    }
    if (counts.empty()) break;
    auto best = counts.begin();
    for (auto it = counts.begin(); it != counts.end(); ++it) {
      if (it->second > best->second) best = it;
    }
    const auto pair = best->first;
    merges.push_back(pair);
    for (auto& w : words) {
      std::vector<std::string> merged;
      for (size_t k = 0; k < w.size(); ++k) {
        if (k + 1 < w.size() && w[k] == pair.first && w[k + 1] == pair.second) {
          merged.push_back(pair.first + pair.second);
          ++k;
        } else {
          merged.push_back(w[k]);
        }
      }
      w = merged;
    }
  }
  // A short corpus may run out of pairs: pad with byte pairs nobody will see.
  for (int k = 0; static_cast<int>(merges.size()) < kMerges; ++k) {
    merges.push_back({alphabet[0x80 + k / 64], alphabet[0xC0 + k % 64]});
  }
  return merges;
}

ordered_json Tokenizer(const std::vector<std::string>& alphabet,
                       const std::vector<std::pair<std::string, std::string>>& merges) {
  ordered_json vocab = ordered_json::object();
  for (int b = 0; b < 256; ++b) vocab[alphabet[b]] = b;
  ordered_json merge_list = ordered_json::array();
  int id = 256;
  for (const auto& [a, b] : merges) {
    if (!vocab.contains(a + b)) vocab[a + b] = id++;
    merge_list.push_back(ordered_json::array({a, b}));
  }
  while (id < kEndOfText) {  // fill unused ids so every id in [0, vocab) decodes
    vocab[absl::StrCat("<|unused_", id, "|>")] = id;
    ++id;
  }
  ordered_json added = ordered_json::array();
  const std::pair<int, const char*> specials[] = {{kEndOfText, "<|endoftext|>"},
                                                  {kImStart, "<|im_start|>"},
                                                  {kImEnd, "<|im_end|>"},
                                                  {kMask, "<|mask|>"}};
  for (const auto& [sid, content] : specials) {
    added.push_back({{"id", sid},
                     {"content", content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  ordered_json byte_level = {{"type", "ByteLevel"},
                             {"add_prefix_space", false},
                             {"trim_offsets", false},
                             {"use_regex", false}};
  ordered_json t;
  t["version"] = "1.0";
  t["truncation"] = nullptr;
  t["padding"] = nullptr;
  t["added_tokens"] = added;
  t["normalizer"] = {{"type", "NFC"}};
  t["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       ordered_json::array(
           {{{"type", "Split"},
             {"pattern",
              {{"Regex",
                "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            byte_level})}};
  t["post_processor"] = byte_level;
  t["decoder"] = byte_level;
  t["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", false},
                {"vocab", vocab},
                {"merges", merge_list}};
  return t;
}

const char* kChatTemplate =
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + "
    "'<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' "
    "}}{%- endif %}";

// Random bf16 weights: N(0, std), or `fill` for norms.
class Weights {
 public:
  explicit Weights(uint64_t seed) : rng_(seed) {}
  void Add(const std::string& name, std::vector<int64_t> shape, float std, float fill = 0.0f) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::normal_distribution<float> normal(0.0f, std);
    std::vector<uint16_t> bf16(n);
    for (int64_t i = 0; i < n; ++i) {
      const float v = std > 0 ? normal(rng_) : fill;
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      bits += 0x7FFF + ((bits >> 16) & 1);  // round to nearest even
      bf16[i] = static_cast<uint16_t>(bits >> 16);
    }
    tensors_.push_back(OwnedTensor::FromRaw(name, DType::kBF16, std::move(shape), bf16));
  }
  absl::Status Write(const std::string& path) { return twinspan::WriteSafetensors(path, tensors_); }

 private:
  std::mt19937_64 rng_;
  std::vector<OwnedTensor> tensors_;
};

constexpr int kHidden = 256, kInter = 512, kHeads = 4, kKvHeads = 2, kHeadDim = 64;
constexpr int kTargetLayers = 4, kDraftLayers = 2, kBlock = 8;

void AddLayer(Weights& w, const std::string& p) {
  const float s = 0.05f;
  w.Add(p + "input_layernorm.weight", {kHidden}, 0, 1.0f);
  w.Add(p + "post_attention_layernorm.weight", {kHidden}, 0, 1.0f);
  w.Add(p + "self_attn.q_proj.weight", {kHeads * kHeadDim, kHidden}, s);
  w.Add(p + "self_attn.k_proj.weight", {kKvHeads * kHeadDim, kHidden}, s);
  w.Add(p + "self_attn.v_proj.weight", {kKvHeads * kHeadDim, kHidden}, s);
  w.Add(p + "self_attn.o_proj.weight", {kHidden, kHeads * kHeadDim}, s);
  w.Add(p + "self_attn.q_norm.weight", {kHeadDim}, 0, 1.0f);
  w.Add(p + "self_attn.k_norm.weight", {kHeadDim}, 0, 1.0f);
  w.Add(p + "mlp.gate_proj.weight", {kInter, kHidden}, s);
  w.Add(p + "mlp.up_proj.weight", {kInter, kHidden}, s);
  w.Add(p + "mlp.down_proj.weight", {kHidden, kInter}, s);
}

ordered_json BaseConfig(int layers, const char* layer_type) {
  ordered_json c;
  c["hidden_act"] = "silu";
  c["hidden_size"] = kHidden;
  c["intermediate_size"] = kInter;
  c["num_attention_heads"] = kHeads;
  c["num_key_value_heads"] = kKvHeads;
  c["head_dim"] = kHeadDim;
  c["num_hidden_layers"] = layers;
  c["layer_types"] = ordered_json::array();
  for (int i = 0; i < layers; ++i) c["layer_types"].push_back(layer_type);
  c["max_position_embeddings"] = 4096;
  c["rms_norm_eps"] = 1e-6;
  c["rope_parameters"] = {{"rope_theta", 1000000.0}, {"rope_type", "default"}};
  c["tie_word_embeddings"] = false;
  c["attention_bias"] = false;
  c["vocab_size"] = kVocab;
  c["dtype"] = "bfloat16";
  return c;
}

absl::Status WriteJson(const std::filesystem::path& path, const ordered_json& j) {
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) return absl::InternalError(absl::StrCat("make-demo: cannot write ", path.string()));
  return absl::OkStatus();
}

absl::Status Make(const std::string& out_dir, uint64_t seed) {
  namespace fs = std::filesystem;
  const fs::path target = fs::path(out_dir) / "target";
  const fs::path drafter = fs::path(out_dir) / "drafter";
  fs::create_directories(target);
  fs::create_directories(drafter);
  const std::vector<std::string> alphabet = ByteAlphabet();
  const ordered_json tokenizer = Tokenizer(alphabet, LearnMerges(alphabet));
  ordered_json tokenizer_config = {
      {"add_bos_token", false},         {"bos_token", nullptr},
      {"eos_token", "<|im_end|>"},      {"pad_token", "<|endoftext|>"},
      {"chat_template", kChatTemplate}, {"tokenizer_class", "Qwen2Tokenizer"}};
  for (const fs::path& dir : {target, drafter}) {
    if (absl::Status s = WriteJson(dir / "tokenizer.json", tokenizer); !s.ok()) return s;
    if (absl::Status s = WriteJson(dir / "tokenizer_config.json", tokenizer_config); !s.ok()) {
      return s;
    }
  }

  ordered_json tc = BaseConfig(kTargetLayers, "full_attention");
  tc["architectures"] = {"Qwen3ForCausalLM"};
  tc["model_type"] = "qwen3";
  tc["eos_token_id"] = kImEnd;
  tc["bos_token_id"] = nullptr;
  if (absl::Status s = WriteJson(target / "config.json", tc); !s.ok()) return s;
  if (absl::Status s = WriteJson(target / "generation_config.json",
                                 {{"eos_token_id", ordered_json::array({kImEnd, kEndOfText})}});
      !s.ok()) {
    return s;
  }
  Weights tw(seed);
  tw.Add("model.embed_tokens.weight", {kVocab, kHidden}, 1.0f);
  for (int l = 0; l < kTargetLayers; ++l) AddLayer(tw, absl::StrCat("model.layers.", l, "."));
  tw.Add("model.norm.weight", {kHidden}, 0, 1.0f);
  tw.Add("lm_head.weight", {kVocab, kHidden}, 0.05f);
  if (absl::Status s = tw.Write((target / "model.safetensors").string()); !s.ok()) return s;

  ordered_json dc = BaseConfig(kDraftLayers, "sliding_attention");
  dc["architectures"] = {"DFlash2DraftModel"};
  dc["model_type"] = "qwen3";
  dc["is_causal"] = false;
  dc["num_target_layers"] = kTargetLayers;
  dc["sliding_window"] = 2048;
  dc["use_sliding_window"] = true;
  dc["dflash_config"] = {{"block_size", kBlock},      {"conv_group_size", 16},
                         {"conv_kernel_size", 2},     {"mask_token_id", kMask},
                         {"selector_rank", 32},       {"selector_top_k", 8},
                         {"target_layer_ids", {1, 2}}};
  if (absl::Status s = WriteJson(drafter / "config.json", dc); !s.ok()) return s;
  Weights dw(seed + 1);
  dw.Add("fc.weight", {kHidden, 2 * kHidden}, 0.05f);
  dw.Add("hidden_norm.weight", {kHidden}, 0, 1.0f);
  for (int l = 0; l < kDraftLayers; ++l) {
    const std::string p = absl::StrCat("layers.", l, ".");
    AddLayer(dw, p);
    dw.Add(p + "attention_conv.base_kernel", {2, 2, kHidden}, 0.05f);
    dw.Add(p + "attention_conv.kernel_projection.weight", {64, kHidden}, 0.05f);
    dw.Add(p + "mlp_conv.base_kernel", {2, 2, kHidden}, 0.05f);
    dw.Add(p + "mlp_conv.kernel_projection.weight", {64, kHidden}, 0.05f);
  }
  dw.Add("norm.weight", {kHidden}, 0, 1.0f);
  dw.Add("candidate_selector.hidden_projection.weight", {32, kHidden}, 0.05f);
  dw.Add("candidate_selector.predecessor_codebook", {kVocab, 32}, 0.05f);
  dw.Add("candidate_selector.successor_codebook", {kVocab, 32}, 0.05f);
  if (absl::Status s = dw.Write((drafter / "model.safetensors").string()); !s.ok()) return s;
  std::ofstream note(fs::path(out_dir) / "README.txt");
  note << "RANDOM demo pair written by make-demo (seed " << seed
       << "): a qwen3 target and a DFlash2 drafter with random weights. The text they produce is "
          "gibberish and drafts are rarely accepted; they exist to run the serving path.\n";
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"make-demo: a small RANDOM target + DFlash2 drafter pair for the demo"};
  std::string out_dir;
  uint64_t seed = 20261129;
  app.add_option("--out", out_dir, "Output folder (gets target/ and drafter/)")->required();
  app.add_option("--seed", seed, "Seed of the random weights");
  CLI11_PARSE(app, argc, argv);
  if (absl::Status s = Make(out_dir, seed); !s.ok()) {
    std::fprintf(stderr, "make-demo: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf(
      "make-demo: wrote a RANDOM demo pair to %s (target/: qwen3, 4 layers, vocab %d; drafter/: "
      "DFlash2, block %d). Random weights: gibberish text, drafts rarely accepted.\n",
      out_dir.c_str(), kVocab, kBlock);
  return 0;
}
