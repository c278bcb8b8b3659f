// twinspan-logits: writes a target model's fp32 logits and hidden states for a prompt, so anyone
// can compare the C++ forward against a reference (e.g. HF transformers' output_hidden_states).
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "tools/logits/dump_logits.h"

int main(int argc, char** argv) {
  CLI::App app{"Run one forward of a target model and write logits + hidden states (safetensors)"};
  twinspan::tools::DumpLogitsOptions options;
  std::string ids;
  std::string kv_dtype = "f32";
  app.add_option("--model", options.model_dir, "model folder (config.json + safetensors)")
      ->required();
  app.add_option("--ids", ids, "token ids, comma-separated, e.g. 1,2,3")->required();
  app.add_option("--out", options.out_path, "output .safetensors file")->required();
  app.add_option("--threads", options.threads, "CPU threads (results do not depend on it)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--kv-dtype", kv_dtype, "KV cache element type")
      ->check(CLI::IsMember({"f32", "bf16"}));
  CLI11_PARSE(app, argc, argv);
  options.kv_dtype =
      kv_dtype == "bf16" ? twinspan::cpu::KvDtype::kBF16 : twinspan::cpu::KvDtype::kF32;
  auto parsed = twinspan::tools::ParseIds(ids);
  if (!parsed.ok()) {
    std::fprintf(stderr, "twinspan-logits: %s\n", parsed.status().ToString().c_str());
    return 2;
  }
  options.ids = *parsed;
  const absl::Status status = twinspan::tools::DumpLogits(options);
  if (!status.ok()) {
    std::fprintf(stderr, "twinspan-logits: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
