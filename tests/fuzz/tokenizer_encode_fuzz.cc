// Fuzz target: any bytes as text for the demo tokenizer (a byte-level BPE like Qwen's). The first
// byte picks whether special tokens are parsed; the rest is the text. Encoding must refuse
// invalid UTF-8 with a Status or give ids inside the vocabulary whose decoding (the text after
// NFC) encodes to the same ids again; the streaming decoder must give the same text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "common/tokenizer/stream_decoder.h"
#include "common/tokenizer/tokenizer.h"

namespace {

const twinspan::tokenizer::Tokenizer& Demo() {
  static const std::unique_ptr<twinspan::tokenizer::Tokenizer> tokenizer = [] {
    auto t = twinspan::tokenizer::Tokenizer::Open(TWINSPAN_FUZZ_TOKENIZER_DIR);
    if (!t.ok()) std::abort();  // the committed tokenizer must load
    return *std::move(t);
  }();
  return *tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool parse_special = (data[0] & 1) != 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const twinspan::tokenizer::Tokenizer& t = Demo();
  auto ids = t.Encode(text, parse_special);
  if (!ids.ok()) {
    if (ids.status().message().empty()) std::abort();
    return 0;
  }
  for (int32_t id : *ids) {
    if (id < 0 || id >= t.vocab_size()) std::abort();
  }
  auto decoded = t.Decode(*ids);
  if (!decoded.ok()) std::abort();
  auto again = t.Encode(*decoded, parse_special);
  if (!again.ok() || *again != *ids) std::abort();
  twinspan::tokenizer::StreamDecoder stream(t);
  std::string streamed;
  for (int32_t id : *ids) {
    auto piece = stream.Add({id});
    if (!piece.ok()) std::abort();
    streamed += *piece;
  }
  streamed += stream.Finish();
  if (streamed != *decoded) std::abort();
  return 0;
}
