// Text <-> ids for the serving layer: encoding, chat templates and UTF-8-safe streaming decode.
// TokenizerCodec adapts common/tokenizer to it.
#ifndef TWINSPAN_SERVICES_TARGET_ENGINE_TEXT_CODEC_H_
#define TWINSPAN_SERVICES_TARGET_ENGINE_TEXT_CODEC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace twinspan::engine {

struct ChatTurn {
  std::string role;
  std::string content;
};

struct ChatOptions {
  bool add_generation_prompt = true;
  bool enable_thinking = true;
};

// One stream's decoder; not thread-safe.
class TextStream {
 public:
  virtual ~TextStream() = default;
  // Text completed by `ids` (whole UTF-8 characters only).
  virtual absl::StatusOr<std::string> Add(absl::Span<const uint32_t> ids) = 0;
  // Flushes what is held back.
  virtual std::string Finish() = 0;
};

// Thread-safe after construction.
class TextCodec {
 public:
  virtual ~TextCodec() = default;
  // InvalidArgument for text that is not UTF-8.
  virtual absl::StatusOr<std::vector<uint32_t>> Encode(std::string_view text,
                                                       bool parse_special) const = 0;
  // The model's chat template applied to `turns`. FailedPrecondition when the model has none.
  virtual absl::StatusOr<std::string> RenderChat(const std::vector<ChatTurn>& turns,
                                                 const ChatOptions& options) const = 0;
  virtual std::unique_ptr<TextStream> NewStream() const = 0;
  // SHA-256 of tokenizer.json (the handshake's tokenizer identity).
  virtual const std::string& sha256() const = 0;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_TARGET_ENGINE_TEXT_CODEC_H_
