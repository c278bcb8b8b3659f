// twinspan-draft: drafts one block for a prompt with a DFlash / DFlash2 drafter over its target,
// and writes the block's span logits (with their global column ids) and proposals.
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "tools/draft/draft_block.h"
#include "tools/logits/dump_logits.h"

int main(int argc, char** argv) {
  CLI::App app{"Draft one block after a prompt and write span logits + proposals (safetensors)"};
  twinspan::tools::DraftBlockOptions options;
  std::string ids;
  std::string kv_dtype = "f32";
  app.add_option("--target", options.target_dir, "target model folder")->required();
  app.add_option("--drafter", options.drafter_dir, "DFlash / DFlash2 drafter folder")->required();
  app.add_option("--ids", ids, "prompt token ids, comma-separated, e.g. 1,2,3")->required();
  app.add_option("--out", options.out_path, "output .safetensors file")->required();
  app.add_option("--head", options.head, "head variant: full, two-span, or spans a:b,c:d");
  app.add_option("--block-size", options.block_size, "block size B (0: the checkpoint's own)")
      ->check(CLI::Range(0, 16));
  app.add_option("--temperature", options.temperature, "DFlash2: sample the selector walk")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", options.seed, "keys the sampled walk");
  app.add_option("--threads", options.threads, "CPU threads (results do not depend on it)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--kv-dtype", kv_dtype, "KV cache element type")
      ->check(CLI::IsMember({"f32", "bf16"}));
  CLI11_PARSE(app, argc, argv);
  options.kv_dtype =
      kv_dtype == "bf16" ? twinspan::cpu::KvDtype::kBF16 : twinspan::cpu::KvDtype::kF32;
  auto parsed = twinspan::tools::ParseIds(ids);
  if (!parsed.ok()) {
    std::fprintf(stderr, "twinspan-draft: %s\n", parsed.status().ToString().c_str());
    return 2;
  }
  options.ids = *parsed;
  const absl::Status status = twinspan::tools::DraftBlock(options);
  if (!status.ok()) {
    std::fprintf(stderr, "twinspan-draft: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
