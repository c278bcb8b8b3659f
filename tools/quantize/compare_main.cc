// twinspan-quantize-compare: our quantizer against exllamav3's on the golden single linears
// (shared/golden/exl3_linear), as a markdown table: shape, codebook, K, both proxy errors in the
// original basis, their ratio, our seconds.
//   twinspan-quantize-compare --golden DIR [--hessian matched|signs] [--threads N] [--case mul1.K4]
//   twinspan-quantize-compare --golden DIR --model QUANTIZED_QWEN3_5_TINY
// The second form compares a quantized hf_qwen3_5_tiny's logits error against the HF bf16 model
// with exllamav3's (golden README section 4).
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "tools/quantize/golden_linears.h"
#include "tools/quantize/golden_logits.h"

int main(int argc, char** argv) {
  std::string golden, hessian = "matched";
  int threads = 2;
  std::vector<std::string> only;
  std::string model;
  CLI::App app{"Proxy error of twinspan-quantize against exllamav3 on the golden linears"};
  app.add_option("--golden", golden, "the golden folder (holding exl3_linear/)")->required();
  app.add_option("--hessian", hessian, "LDLQ Hessian basis")
      ->check(CLI::IsMember({"matched", "signs"}))
      ->capture_default_str();
  app.add_option("--threads", threads, "CPU threads")->capture_default_str();
  app.add_option("--case", only, "only these cases, e.g. mul1.K4 (repeatable)");
  app.add_option("--model", model,
                 "instead: logits error of this quantized hf_qwen3_5_tiny against exllamav3's");
  CLI11_PARSE(app, argc, argv);

  twinspan::cpu::ThreadPool pool(threads);
  if (!model.empty()) {
    const auto logits = twinspan::quantize::CompareGoldenLogits(&pool, model, golden);
    if (!logits.ok()) {
      std::fprintf(stderr, "twinspan-quantize-compare: %s\n",
                   std::string(logits.status().message()).c_str());
      return 1;
    }
    std::printf("| sequence | ours vs HF bf16 | exllamav3 vs HF bf16 | ratio |\n");
    std::printf("| --- | --- | --- | --- |\n");
    for (size_t s = 0; s < logits->ours.size(); ++s) {
      std::printf("| %zu | %.4f | %.4f | %.3f |\n", s, logits->ours[s], logits->theirs[s],
                  logits->ours[s] / logits->theirs[s]);
    }
    std::printf("| all | %.4f | %.4f | %.3f |\n", logits->ours_all, logits->theirs_all,
                logits->ours_all / logits->theirs_all);
    return 0;
  }
  const twinspan::exl3::quantize::CpuTileEncoder encoder(&pool);
  twinspan::exl3::quantize::LinearQuantOptions options;
  options.hessian_basis = hessian == "signs" ? twinspan::exl3::quantize::HessianBasis::kSigns
                                             : twinspan::exl3::quantize::HessianBasis::kScales;
  std::printf("| k x n | codebook | K | exllamav3 | ours | ours / exllamav3 | our s |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  double worst = 0, sum = 0;
  int count = 0;
  for (const char* file : {"exl3_linear_256x384.safetensors", "exl3_linear_512x256.safetensors",
                           "exl3_linear_1024x512.safetensors"}) {
    const auto cases =
        twinspan::quantize::CompareGoldenLinears(&pool, encoder, golden, file, only, options);
    if (!cases.ok()) {
      std::fprintf(stderr, "twinspan-quantize-compare: %s\n",
                   std::string(cases.status().message()).c_str());
      return 1;
    }
    for (const auto& c : *cases) {
      const double ratio = c.ours / c.theirs;
      worst = std::max(worst, ratio);
      sum += ratio;
      ++count;
      std::printf("| %ld x %ld | %s | %d | %.6g | %.6g | %.3f | %.1f |\n", static_cast<long>(c.k),
                  static_cast<long>(c.n), c.codebook.c_str(), c.bits, c.theirs, c.ours, ratio,
                  c.seconds);
      std::fflush(stdout);
    }
  }
  std::printf("\n%d cases: mean ratio %.3f, worst %.3f\n", count, count ? sum / count : 0.0, worst);
  return 0;
}
