// Fuzz target: any bytes as a tokenizer.json. Loading must return a Status or a tokenizer that
// encodes and decodes a fixed text with ids inside its vocabulary; nothing may crash, throw or
// hang.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto tokenizer = twinspan::tokenizer::Tokenizer::FromJsonBytes(bytes, "fuzz/tokenizer.json");
  if (!tokenizer.ok()) {
    if (tokenizer.status().message().empty()) std::abort();  // every refusal says why
    return 0;
  }
  const twinspan::tokenizer::Tokenizer& t = **tokenizer;
  for (const bool special : {true, false}) {
    auto ids = t.Encode("Hello, world! <|im_start|>user\n  héllo 123\t\n", special);
    if (!ids.ok()) continue;
    for (int32_t id : *ids) {
      if (id < 0 || id >= t.vocab_size()) std::abort();
    }
    (void)t.Decode(*ids, /*skip_special=*/!special);
  }
  return 0;
}
