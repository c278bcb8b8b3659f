// twinspan-perplexity: a target model's perplexity on a UTF-8 text file, tokenized with the
// model's own tokenizer, in windows of --window tokens.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "common/tokenizer/tokenizer.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/parallel.h"
#include "tools/perplexity/perplexity.h"

namespace {

struct Options {
  std::string model_dir, text_path;
  int64_t window = 512;
  int64_t max_tokens = 0;
  int threads = 2;
  bool json = false;
};

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrFormat("--text: cannot read %s", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::Status Run(const Options& o) {
  namespace ts = twinspan;
  ABSL_ASSIGN_OR_RETURN(std::string text, ReadFile(o.text_path));
  ABSL_ASSIGN_OR_RETURN(auto tokenizer, ts::tokenizer::Tokenizer::Open(o.model_dir));
  // Special-token strings inside the text are text here, as they were for the model's training.
  ABSL_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer->Encode(text, false));
  if (o.max_tokens > 0 && static_cast<int64_t>(ids.size()) > o.max_tokens) ids.resize(o.max_tokens);
  ts::cpu::ThreadPool pool(o.threads);
  const auto backend = ts::cpu::NewCpuBackend(&pool);
  ts::target::TargetOptions options;
  options.backend = backend.get();
  options.context = o.window;
  ABSL_ASSIGN_OR_RETURN(auto model, ts::target::OpenTargetModel(o.model_dir, options));
  const bool tty = isatty(fileno(stderr)) != 0;
  auto progress = [&](int64_t done, int64_t total) {
    if (tty) {
      std::fprintf(stderr, "\rtwinspan-perplexity: window %lld/%lld", static_cast<long long>(done),
                   static_cast<long long>(total));
      if (done == total) std::fputc('\n', stderr);
    } else if (done == total || done % 10 == 0) {
      std::fprintf(stderr, "twinspan-perplexity: window %lld/%lld\n", static_cast<long long>(done),
                   static_cast<long long>(total));
    }
  };
  ABSL_ASSIGN_OR_RETURN(ts::tools::PerplexityResult r,
                        ts::tools::MeasurePerplexity(*model, ids, o.window, progress));
  if (o.json) {
    std::printf(
        "{\"model\": \"%s\", \"text\": \"%s\", \"window\": %lld, \"windows\": %lld, "
        "\"scored_tokens\": %lld, \"mean_nll\": %.6f, \"perplexity\": %.4f}\n",
        o.model_dir.c_str(), o.text_path.c_str(), static_cast<long long>(o.window),
        static_cast<long long>(r.windows), static_cast<long long>(r.scored_tokens), r.mean_nll(),
        r.perplexity());
  } else {
    std::printf(
        "%s on %s: perplexity %.4f (mean NLL %.6f over %lld tokens, %lld windows of %lld)\n",
        o.model_dir.c_str(), o.text_path.c_str(), r.perplexity(), r.mean_nll(),
        static_cast<long long>(r.scored_tokens), static_cast<long long>(r.windows),
        static_cast<long long>(o.window));
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"twinspan-perplexity: a target model's perplexity on a text file (CPU)"};
  Options o;
  app.add_option("--model", o.model_dir, "model folder (config.json, safetensors, tokenizer.json)")
      ->required();
  app.add_option("--text", o.text_path, "UTF-8 text file")->required();
  app.add_option("--window", o.window, "tokens per window (each a fresh sequence)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  app.add_option("--max-tokens", o.max_tokens, "score at most this many tokens (0: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", o.threads, "CPU threads (results do not depend on it)")
      ->check(CLI::Range(1, 1024));
  app.add_flag("--json", o.json, "one JSON line instead of a sentence");
  CLI11_PARSE(app, argc, argv);
  if (absl::Status s = Run(o); !s.ok()) {
    std::fprintf(stderr, "twinspan-perplexity: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
