// twinspan-synth: writes a synthetic checkpoint at a preset's real shapes and configs (random but
// valid EXL3 trellis, random bf16), so full-size speed can be measured without downloading
// anything.
//
//   twinspan-synth --preset qwen3.8-27b --out DIR/target [--bits 3.5] [--head-bits 6]
//   twinspan-synth --preset qwen3.8-27b-dflash2 --out DIR/drafter [--drafter-bits 4]
//   twinspan-synth --preset NAME --list      (the tensor inventory and config.json, nothing
//   written)
#include <cstdio>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "tools/synth/presets.h"
#include "tools/synth/shard_writer.h"

namespace {

using namespace twinspan::synth;

void PrintInventory(const CheckpointSpec& spec) {
  std::printf("%s", spec.config_json.c_str());
  for (const TensorSpec& t : spec.tensors) {
    std::printf("%s %s [%s] %lld\n", t.name.c_str(),
                std::string(twinspan::DTypeName(t.dtype)).c_str(),
                absl::StrJoin(t.shape, ", ").c_str(), static_cast<long long>(t.bytes()));
  }
  std::printf("%zu tensors, %lld bytes: %s\n", spec.tensors.size(),
              static_cast<long long>(spec.bytes()), spec.summary.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"twinspan-synth: a synthetic checkpoint at a preset's real shapes and configs"};
  std::string preset, out, codebook = "mul1";
  uint64_t seed = 1;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double shard_gb = 4.0;
  bool sync = false, list = false;
  PresetOptions options;
  int64_t layers = 0;
  app.add_option("--preset", preset, absl::StrJoin(PresetNames(), ", "))->required();
  app.add_option("--out", out, "Output directory (created; files of the same names replaced)");
  app.add_option("--seed", seed, "Seed: the same seed and options write the same bytes");
  app.add_option("--threads", threads, "Threads drawing and writing tensors")
      ->check(CLI::PositiveNumber);
  auto* bits = app.add_option("--bits", options.exl3.bits,
                              "Target body bits: an average, a per-tensor mix of floor and ceil");
  auto* head_bits = app.add_option("--head-bits", options.exl3.head_bits,
                                   "Target lm_head bits: 1..8, or 16 for an fp16 head");
  auto* codebook_opt = app.add_option("--codebook", codebook, "Target trellis codebook")
                           ->check(CLI::IsMember({"mul1", "mcg", "3inst"}));
  auto* layers_opt = app.add_option("--layers", layers, "Target decoder layers (scaled-down runs)")
                         ->check(CLI::PositiveNumber);
  auto* drafter_bits = app.add_option("--drafter-bits", options.drafter_bits,
                                      "Drafter linears: 16 (bf16) or 4 (pre-quantized Q4)");
  app.add_option("--shard-gb", shard_gb, "Largest shard in GB (1e9 bytes)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--sync", sync, "fsync the shards before reporting the time");
  app.add_flag("--list", list, "Print config.json and the tensor inventory; write nothing");
  CLI11_PARSE(app, argc, argv);

  if (codebook == "mcg") options.exl3.codebook = twinspan::exl3::Codebook::kMcg;
  if (codebook == "3inst") options.exl3.codebook = twinspan::exl3::Codebook::k3Inst;
  if (layers_opt->count() > 0) options.layers = layers;
  const bool target_given =
      bits->count() + head_bits->count() + codebook_opt->count() + layers_opt->count() > 0;
  absl::StatusOr<CheckpointSpec> spec =
      MakePreset(preset, options, target_given, drafter_bits->count() > 0);
  if (!spec.ok()) {
    std::fprintf(stderr, "twinspan-synth: %s\n", spec.status().ToString().c_str());
    return 2;
  }
  if (list) {
    PrintInventory(*spec);
    return 0;
  }
  if (out.empty()) {
    std::fprintf(stderr, "twinspan-synth: --out is required unless --list\n");
    return 2;
  }
  const absl::StatusOr<WriteReport> report =
      WriteCheckpoint(*spec, out,
                      {.seed = seed,
                       .threads = threads,
                       .max_shard_bytes = static_cast<int64_t>(shard_gb * 1e9),
                       .sync = sync,
                       .log = stdout});
  if (!report.ok()) {
    std::fprintf(stderr, "twinspan-synth: %s\n", report.status().ToString().c_str());
    return 1;
  }
  return 0;
}
