#include "services/target/server/tokenizer_codec.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/tokenizer/stream_decoder.h"
#include "nlohmann/json.hpp"

namespace twinspan::serving {
namespace {

class DecoderStream : public engine::TextStream {
 public:
  explicit DecoderStream(const tokenizer::Tokenizer& t) : decoder_(t) {}
  absl::StatusOr<std::string> Add(absl::Span<const uint32_t> ids) override {
    std::vector<int32_t> signed_ids(ids.begin(), ids.end());
    return decoder_.Add(signed_ids);
  }
  std::string Finish() override { return decoder_.Finish(); }

 private:
  tokenizer::StreamDecoder decoder_;
};

// Where ChatTemplate::Open found the template, for messages.
std::string ChatTemplateFile(const std::string& dir) {
  std::string config = dir + "/tokenizer_config.json";
  std::ifstream in(config);
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!json.is_discarded() && json.is_object() && json.contains("chat_template")) return config;
  return dir + "/chat_template.jinja";
}

}  // namespace

absl::StatusOr<std::unique_ptr<TokenizerCodec>> TokenizerCodec::Open(const std::string& dir) {
  auto codec = std::unique_ptr<TokenizerCodec>(new TokenizerCodec());
  ABSL_ASSIGN_OR_RETURN(codec->tokenizer_, tokenizer::Tokenizer::Open(dir));
  absl::StatusOr<tokenizer::ChatTemplate> chat = tokenizer::ChatTemplate::Open(dir);
  if (chat.ok()) {
    codec->chat_ = *std::move(chat);
  } else if (!absl::IsNotFound(chat.status())) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": the chat template (", ChatTemplateFile(dir),
                     ") does not load: ", chat.status().message(),
                     "; fix the template, or remove it to serve prompts and token ids only"));
  }
  if (codec->chat_.has_value()) {
    // A template that cannot render one user message would fail every chat request: refuse it
    // now, where the operator sees it, instead of at the first request.
    const std::vector<engine::ChatTurn> probe = {{"user", "Hello"}};
    for (const bool prompt : {true, false}) {
      engine::ChatOptions options;
      options.add_generation_prompt = prompt;
      absl::StatusOr<std::string> rendered = codec->RenderChat(probe, options);
      absl::Status status = rendered.status();
      if (status.ok()) status = codec->Encode(*rendered, /*parse_special=*/true).status();
      if (!status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(dir, ": the chat template (", ChatTemplateFile(dir),
                         ") cannot render a conversation of one user message: ", status.message(),
                         "; fix the template, or remove it to serve prompts and token ids only"));
      }
    }
  }
  return codec;
}

absl::StatusOr<std::vector<uint32_t>> TokenizerCodec::Encode(std::string_view text,
                                                             bool parse_special) const {
  ABSL_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer_->Encode(text, parse_special));
  return std::vector<uint32_t>(ids.begin(), ids.end());
}

absl::StatusOr<std::string> TokenizerCodec::RenderChat(const std::vector<engine::ChatTurn>& turns,
                                                       const engine::ChatOptions& options) const {
  if (!chat_.has_value()) {
    return absl::FailedPreconditionError(
        "chat: this model has no chat template; send a prompt or prompt_ids");
  }
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (const engine::ChatTurn& t : turns) {
    messages.push_back({{"role", t.role}, {"content", t.content}});
  }
  tokenizer::ChatOptions chat_options;
  chat_options.add_generation_prompt = options.add_generation_prompt;
  if (!options.enable_thinking) chat_options.enable_thinking = false;
  return chat_->Render(messages, chat_options);
}

std::unique_ptr<engine::TextStream> TokenizerCodec::NewStream() const {
  return std::make_unique<DecoderStream>(*tokenizer_);
}

}  // namespace twinspan::serving
