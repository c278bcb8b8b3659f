// twinspan-quantize-compare: our quantizer against exllamav3's on the golden single linears
// (shared/golden/exl3_linear), as a markdown table: shape, codebook, K, both proxy errors in the
// original basis, their ratio, our seconds.
//   twinspan-quantize-compare --golden DIR [--hessian matched|signs] [--threads N] [--case mul1.K4]
//       [--device cpu|cuda:N]
//   twinspan-quantize-compare --golden DIR --model QUANTIZED_QWEN3_5_TINY
//   twinspan-quantize-compare --bench 5120x17408 [--slice 16] [--bits 4] [--threads N]
//       [--device cpu|cuda:N]
// The second form compares a quantized hf_qwen3_5_tiny's logits error against the HF bf16 model
// with exllamav3's (golden README section 4). The third times QuantizeLinear on a random weight of
// that shape (1/slice of its columns; the time is linear in them) with a calibrated Hessian.
// --device picks the tile encoder as twinspan-quantize's does (the same bits either way).
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "common/exl3/quantize/hessian.h"
#include "tools/quantize/golden_linears.h"
#include "tools/quantize/golden_logits.h"
#include "tools/quantize/open_encoder.h"

namespace {

// Seconds of QuantizeLinear on a random [k, n / slice] weight, Hessian from 1024 random rows.
int Bench(twinspan::cpu::ThreadPool& pool, const twinspan::exl3::quantize::TileEncoder& encoder,
          const std::string& shape, int slice, int bits) {
  long k = 0, n = 0;
  if (std::sscanf(shape.c_str(), "%ldx%ld", &k, &n) != 2 || slice < 1 || n % slice != 0 ||
      (n / slice) % 128 != 0 || k % 128 != 0) {
    std::fprintf(stderr,
                 "twinspan-quantize-compare: --bench KxN with k and n / slice multiples of 128\n");
    return 2;
  }
  const long cols = n / slice;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> w(static_cast<size_t>(k * cols)), x(static_cast<size_t>(1024 * k));
  for (float& v : w) v = 0.02f * normal(rng);
  for (float& v : x) v = normal(rng);
  twinspan::exl3::quantize::HessianAccumulator acc(k);
  acc.Add(&pool, x.data(), 1024, k);
  const std::vector<float> h = acc.Mean();
  twinspan::exl3::quantize::LinearQuantOptions o;
  o.bits = bits;
  const auto start = std::chrono::steady_clock::now();
  const auto q =
      twinspan::exl3::quantize::QuantizeLinear(&pool, encoder, {w.data(), k, cols, h, {}}, o);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!q.ok()) {
    std::fprintf(stderr, "twinspan-quantize-compare: %s\n",
                 std::string(q.status().message()).c_str());
    return 1;
  }
  std::printf(
      "[k %ld, n %ld] K=%d, %d threads, encoder %s: %.1f s, proxy error %.6f; x%d for [%ld, %ld]: "
      "%.0f s\n",
      k, cols, bits, pool.num_threads(), encoder.name().c_str(), seconds, q->proxy_error, slice, k,
      n, seconds * slice);
  return 0;
}

}  // namespace

// CLI11_PARSE catches CLI11's own exceptions; any other (bad_alloc) should end the program.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  std::string golden, hessian = "matched";
  int threads = 2;
  std::vector<std::string> only;
  std::string model, bench;
  int slice = 1, bits = 4;
  std::string device = "cpu";
  CLI::App app{"Proxy error of twinspan-quantize against exllamav3 on the golden linears"};
  app.add_option("--golden", golden, "the golden folder (holding exl3_linear/)");
  app.add_option("--hessian", hessian, "LDLQ Hessian basis")
      ->check(CLI::IsMember({"matched", "signs"}))
      ->capture_default_str();
  app.add_option("--threads", threads, "CPU threads")->capture_default_str();
  app.add_option("--case", only, "only these cases, e.g. mul1.K4 (repeatable)");
  app.add_option("--model", model,
                 "instead: logits error of this quantized hf_qwen3_5_tiny against exllamav3's");
  app.add_option("--bench", bench, "instead: time QuantizeLinear on a random KxN weight");
  app.add_option("--slice", slice, "with --bench: quantize 1/slice of the columns")
      ->capture_default_str();
  app.add_option("--bits", bits, "with --bench: K")->capture_default_str();
  app.add_option("--device", device,
                 "where the trellis encoder runs (--bench and the golden table): cpu or cuda:N")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  twinspan::cpu::ThreadPool pool(threads);
  const auto opened = twinspan::quantize::OpenTileEncoder(device, &pool);
  if (!opened.ok()) {
    std::fprintf(stderr, "twinspan-quantize-compare: %s\n",
                 std::string(opened.status().message()).c_str());
    return opened.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  const twinspan::exl3::quantize::TileEncoder& encoder = **opened;
  if (!bench.empty()) return Bench(pool, encoder, bench, slice, bits);
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
