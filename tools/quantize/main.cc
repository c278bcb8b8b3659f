// twinspan-quantize: an HF qwen3 / qwen3_5 checkpoint (bf16, fp16 or fp32) to an EXL3 checkpoint.
//   twinspan-quantize --in HF_DIR --out DIR --bits B [--head-bits 6] [--codebook mul1|mcg|3inst]
//       [--calibration FILE] [--cal-rows N] [--cal-cols N] [--device cpu|cuda:N] [--threads N]
//       [--seed S]
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "tools/quantize/quantize_model.h"

// CLI11_PARSE catches CLI11's own exceptions; any other (bad_alloc) should end the program.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  using twinspan::quantize::QuantizeOptions;
  QuantizeOptions options;
  options.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string codebook = "mul1";
  CLI::App app{"Quantize an HF qwen3 / qwen3_5 checkpoint to EXL3 (trellis, LDLQ, Hadamard)"};
  app.add_option("--in", options.in_dir, "HF checkpoint folder (config.json + safetensors)")
      ->required();
  app.add_option("--out", options.out_dir, "output folder; must not exist or be empty")->required();
  app.add_option("--bits", options.bits,
                 "average bits per weight of the decoder linears, 1..8 (fractional: a mix of "
                 "floor and floor + 1 per layer group)")
      ->required();
  app.add_option("--head-bits", options.head_bits, "lm_head bits, 1..8, or 16 to keep it")
      ->capture_default_str();
  app.add_option("--codebook", codebook, "trellis codebook: mul1, mcg or 3inst")
      ->capture_default_str();
  app.add_option("--calibration", options.calibration_file,
                 "UTF-8 text for calibration (tokenized with the model's tokenizer.json); "
                 "without it, seeded random tokens");
  app.add_option("--cal-rows", options.cal_rows, "calibration sequences")->capture_default_str();
  app.add_option("--cal-cols", options.cal_cols, "tokens per calibration sequence")
      ->capture_default_str();
  app.add_option("--device", options.device, "where the trellis encoder runs: cpu or cuda:N")
      ->capture_default_str();
  app.add_option("--threads", options.threads, "CPU threads (results do not depend on it)")
      ->capture_default_str();
  app.add_option("--seed", options.seed, "seed of the sign flips and random calibration rows")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  absl::StatusOr<twinspan::exl3::Codebook> parsed = twinspan::quantize::ParseCodebook(codebook);
  if (!parsed.ok()) {
    std::fprintf(stderr, "twinspan-quantize: %s\n", std::string(parsed.status().message()).c_str());
    return 2;
  }
  options.codebook = *parsed;
  twinspan::quantize::Progress progress(stderr, isatty(fileno(stderr)) != 0);
  const absl::StatusOr<twinspan::quantize::QuantizeSummary> summary =
      twinspan::quantize::QuantizeModel(options, progress);
  if (!summary.ok()) {
    progress.Finish();
    std::fprintf(stderr, "twinspan-quantize: %s\n",
                 std::string(summary.status().message()).c_str());
    return summary.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::fprintf(stderr,
               "done: %d tensors quantized, %.2f bits on average (decoder linears), worst proxy "
               "error %.6f (%s), %.1f s; wrote %s\n",
               static_cast<int>(summary->tensors), summary->average_bits,
               summary->worst_proxy_error, summary->worst_tensor.c_str(), summary->seconds,
               options.out_dir.c_str());
  return 0;
}
