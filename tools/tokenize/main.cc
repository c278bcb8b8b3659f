// twinspan-tokenize: prints the ids of a text or a rendered chat (one line, comma-separated), the
// text of ids, or the rendered chat itself.
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
#include "common/tokenizer/chat_template.h"
#include "common/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"

namespace {

struct Request {
  std::string tokenizer_dir;
  std::string text_file;
  std::string ids;
  std::string chat_file;
  bool render_only = false;
  bool no_parse_special = false;
  bool skip_special = false;
};

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

// A chat file is a JSON array of messages, or an object with "messages" and optionally "tools",
// "add_generation_prompt" (default true) and "enable_thinking".
absl::StatusOr<std::string> RenderChat(const Request& request) {
  ABSL_ASSIGN_OR_RETURN(std::string bytes, ReadAll(request.chat_file));
  const nlohmann::ordered_json chat = nlohmann::ordered_json::parse(bytes, nullptr, false);
  if (chat.is_discarded())
    return absl::InvalidArgumentError(request.chat_file + ": not valid JSON");
  twinspan::tokenizer::ChatOptions options;
  nlohmann::ordered_json messages = chat;
  if (chat.is_object()) {
    if (!chat.contains("messages"))
      return absl::InvalidArgumentError(request.chat_file + ": no \"messages\"");
    messages = chat["messages"];
    if (chat.contains("tools")) options.tools = chat["tools"];
    if (chat.contains("add_generation_prompt") && chat["add_generation_prompt"].is_boolean()) {
      options.add_generation_prompt = chat["add_generation_prompt"].get<bool>();
    }
    if (chat.contains("enable_thinking") && chat["enable_thinking"].is_boolean()) {
      options.enable_thinking = chat["enable_thinking"].get<bool>();
    }
  }
  ABSL_ASSIGN_OR_RETURN(auto chat_template,
                        twinspan::tokenizer::ChatTemplate::Open(request.tokenizer_dir));
  return chat_template.Render(messages, options);
}

absl::Status Run(const Request& request) {
  if (!request.chat_file.empty() && request.render_only) {
    ABSL_ASSIGN_OR_RETURN(std::string text, RenderChat(request));
    std::fwrite(text.data(), 1, text.size(), stdout);
    return absl::OkStatus();
  }
  ABSL_ASSIGN_OR_RETURN(auto tokenizer,
                        twinspan::tokenizer::Tokenizer::Open(request.tokenizer_dir));
  if (!request.ids.empty()) {
    ABSL_ASSIGN_OR_RETURN(std::vector<int32_t> parsed, ParseIds(request.ids));
    ABSL_ASSIGN_OR_RETURN(std::string text, tokenizer->Decode(parsed, request.skip_special));
    std::fwrite(text.data(), 1, text.size(), stdout);
    return absl::OkStatus();
  }
  std::string text;
  if (!request.chat_file.empty()) {
    ABSL_ASSIGN_OR_RETURN(text, RenderChat(request));
  } else {
    ABSL_ASSIGN_OR_RETURN(text, ReadAll(request.text_file));
  }
  ABSL_ASSIGN_OR_RETURN(std::vector<int32_t> encoded,
                        tokenizer->Encode(text, !request.no_parse_special));
  std::printf("%s\n", absl::StrJoin(encoded, ",").c_str());
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Encode text, decode ids, or render a chat with a Hugging Face tokenizer.json"};
  Request request;
  app.add_option("--tokenizer", request.tokenizer_dir,
                 "folder with tokenizer.json (and tokenizer_config.json)")
      ->required();
  auto* text_opt =
      app.add_option("--text-file", request.text_file, "text to encode ('-' for stdin)");
  auto* ids_opt = app.add_option("--ids", request.ids, "comma-separated ids to decode");
  auto* chat_opt =
      app.add_option("--chat-file", request.chat_file,
                     "chat JSON (messages array, or {messages, tools, enable_thinking, "
                     "add_generation_prompt}) rendered with the model's chat template");
  text_opt->excludes(ids_opt);
  chat_opt->excludes(text_opt);
  chat_opt->excludes(ids_opt);
  app.add_flag("--render", request.render_only,
               "with --chat-file: print the rendered text instead of ids");
  app.add_flag("--no-parse-special", request.no_parse_special,
               "tokenize special-token strings as plain text");
  app.add_flag("--skip-special", request.skip_special, "drop special tokens when decoding");
  CLI11_PARSE(app, argc, argv);
  if (request.text_file.empty() && request.ids.empty() && request.chat_file.empty()) {
    std::fprintf(stderr, "twinspan-tokenize: give --text-file, --ids or --chat-file\n");
    return 2;
  }
  const absl::Status status = Run(request);
  if (!status.ok()) {
    std::fprintf(stderr, "twinspan-tokenize: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
