// engine::TextCodec over common/tokenizer: Tokenizer for ids, ChatTemplate for chat, StreamDecoder
// for UTF-8-safe streaming.
#ifndef TWINSPAN_SERVICES_TARGET_SERVER_TOKENIZER_CODEC_H_
#define TWINSPAN_SERVICES_TARGET_SERVER_TOKENIZER_CODEC_H_

#include <memory>
#include <optional>
#include <string>

#include "common/tokenizer/chat_template.h"
#include "common/tokenizer/tokenizer.h"
#include "services/target/engine/text_codec.h"

namespace twinspan::serving {

// Thread-safe after Open.
class TokenizerCodec : public engine::TextCodec {
 public:
  // Opens `dir`/tokenizer.json and the chat template beside it (a model without one serves
  // prompts and ids only). Errors: those of Tokenizer::Open; a malformed template.
  static absl::StatusOr<std::unique_ptr<TokenizerCodec>> Open(const std::string& dir);

  absl::StatusOr<std::vector<uint32_t>> Encode(std::string_view text,
                                               bool parse_special) const override;
  absl::StatusOr<std::string> RenderChat(const std::vector<engine::ChatTurn>& turns,
                                         const engine::ChatOptions& options) const override;
  std::unique_ptr<engine::TextStream> NewStream() const override;
  const std::string& sha256() const override { return tokenizer_->sha256(); }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::optional<tokenizer::ChatTemplate> chat_;
};

}  // namespace twinspan::serving

#endif  // TWINSPAN_SERVICES_TARGET_SERVER_TOKENIZER_CODEC_H_
