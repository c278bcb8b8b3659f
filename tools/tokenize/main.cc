// twinspan-tokenize: prints the ids of a text (one line, comma-separated) or the text of ids.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "common/tokenizer/tokenizer.h"

namespace {

absl::StatusOr<std::string> ReadAll(const std::string& path) {
  std::ostringstream buffer;
  if (path == "-") {
    buffer << std::cin.rdbuf();
    return buffer.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open " + path);
  buffer << in.rdbuf();
  return buffer.str();
}

absl::StatusOr<std::vector<int32_t>> ParseIds(const std::string& list) {
  std::vector<int32_t> ids;
  for (absl::string_view item : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    int32_t id = 0;
    if (!absl::SimpleAtoi(item, &id)) {
      return absl::InvalidArgumentError("--ids: \"" + std::string(item) +
                                        "\" is not an integer id");
    }
    ids.push_back(id);
  }
  return ids;
}

absl::Status Run(const std::string& tokenizer_dir, const std::string& text_file,
                 const std::string& ids, bool parse_special, bool skip_special) {
  ABSL_ASSIGN_OR_RETURN(auto tokenizer, twinspan::tokenizer::Tokenizer::Open(tokenizer_dir));
  if (!ids.empty()) {
    ABSL_ASSIGN_OR_RETURN(std::vector<int32_t> parsed, ParseIds(ids));
    ABSL_ASSIGN_OR_RETURN(std::string text, tokenizer->Decode(parsed, skip_special));
    std::fwrite(text.data(), 1, text.size(), stdout);
    return absl::OkStatus();
  }
  ABSL_ASSIGN_OR_RETURN(std::string text, ReadAll(text_file));
  ABSL_ASSIGN_OR_RETURN(std::vector<int32_t> encoded, tokenizer->Encode(text, parse_special));
  std::printf("%s\n", absl::StrJoin(encoded, ",").c_str());
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Encode text or decode ids with a Hugging Face tokenizer.json"};
  std::string tokenizer_dir, text_file, ids;
  bool no_parse_special = false, skip_special = false;
  app.add_option("--tokenizer", tokenizer_dir, "folder with tokenizer.json, or the file")
      ->required();
  auto* text_opt = app.add_option("--text-file", text_file, "text to encode ('-' for stdin)");
  auto* ids_opt = app.add_option("--ids", ids, "comma-separated ids to decode");
  text_opt->excludes(ids_opt);
  app.add_flag("--no-parse-special", no_parse_special,
               "tokenize special-token strings as plain text");
  app.add_flag("--skip-special", skip_special, "drop special tokens when decoding");
  CLI11_PARSE(app, argc, argv);
  if (text_file.empty() && ids.empty()) {
    std::fprintf(stderr, "twinspan-tokenize: give --text-file or --ids\n");
    return 2;
  }
  const absl::Status status = Run(tokenizer_dir, text_file, ids, !no_parse_special, skip_special);
  if (!status.ok()) {
    std::fprintf(stderr, "twinspan-tokenize: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
