#include "common/tokenizer/stream_decoder.h"

#include "absl/strings/str_cat.h"
#include "common/tokenizer/utf8.h"

namespace twinspan::tokenizer {

absl::StatusOr<std::string> StreamDecoder::Add(absl::Span<const int32_t> ids) {
  std::string bytes = pending_;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::optional<std::string_view> token = tokenizer_.TokenBytes(ids[i]);
    if (!token.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("stream decode: id ", ids[i], " at position ",
                                                     i, " is not in the tokenizer (vocab_size ",
                                                     tokenizer_.vocab_size(), ")"));
    }
    if (skip_special_ && tokenizer_.IsSpecial(ids[i])) continue;
    bytes.append(*token);
  }
  const size_t held = IncompleteUtf8Suffix(bytes);
  pending_ = bytes.substr(bytes.size() - held);
  std::string text;
  AppendUtf8Lossy(std::string_view(bytes).substr(0, bytes.size() - held), &text);
  return text;
}

std::string StreamDecoder::Finish() {
  std::string text;
  AppendUtf8Lossy(pending_, &text);
  pending_.clear();
  return text;
}

}  // namespace twinspan::tokenizer
