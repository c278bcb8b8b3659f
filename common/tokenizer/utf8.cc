#include "common/tokenizer/utf8.h"

#include "absl/strings/str_format.h"

namespace twinspan::tokenizer {
namespace {

// Valid range of the second byte for a lead byte (Unicode Table 3-7); {1, 0} means invalid lead.
struct LeadInfo {
  int length;
  uint8_t low;
  uint8_t high;
};

LeadInfo InfoForLead(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// Number of bytes of the valid prefix at `pos` (lead plus continuation bytes that fit), at most
// the sequence length; `complete` tells whether it is a whole sequence.
size_t ValidPrefix(std::string_view s, size_t pos, bool* complete) {
  const LeadInfo info = InfoForLead(static_cast<uint8_t>(s[pos]));
  *complete = false;
  if (info.length == 0) return 0;
  if (info.length == 1) {
    *complete = true;
    return 1;
  }
  size_t n = 1;
  for (int i = 1; i < info.length; ++i) {
    if (pos + n >= s.size()) return n;
    const uint8_t c = static_cast<uint8_t>(s[pos + n]);
    const uint8_t low = i == 1 ? info.low : 0x80;
    const uint8_t high = i == 1 ? info.high : 0xBF;
    if (c < low || c > high) return n;
    ++n;
  }
  *complete = true;
  return n;
}

}  // namespace

size_t Utf8SequenceLength(std::string_view text, size_t pos) {
  bool complete = false;
  const size_t n = ValidPrefix(text, pos, &complete);
  return complete ? n : 0;
}

char32_t DecodeUtf8At(std::string_view s, size_t pos, size_t length) {
  const auto b = [&](size_t i) { return static_cast<char32_t>(static_cast<uint8_t>(s[pos + i])); };
  switch (length) {
    case 1:
      return b(0);
    case 2:
      return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3:
      return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

absl::Status ValidateUtf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const size_t n = Utf8SequenceLength(text, pos);
    if (n == 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("text is not valid UTF-8: bad byte 0x%02X at offset %d of %d",
                          static_cast<uint8_t>(text[pos]), pos, text.size()));
    }
    pos += n;
  }
  return absl::OkStatus();
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void AppendUtf8Lossy(std::string_view bytes, std::string* out) {
  size_t pos = 0;
  size_t run_start = 0;
  while (pos < bytes.size()) {
    if (static_cast<uint8_t>(bytes[pos]) < 0x80) {
      ++pos;
      continue;
    }
    bool complete = false;
    const size_t n = ValidPrefix(bytes, pos, &complete);
    if (complete) {
      pos += n;
      continue;
    }
    out->append(bytes.substr(run_start, pos - run_start));
    out->append("\xEF\xBF\xBD");
    pos += n == 0 ? 1 : n;
    run_start = pos;
  }
  out->append(bytes.substr(run_start));
}

size_t IncompleteUtf8Suffix(std::string_view bytes) {
  const size_t limit = bytes.size() < 3 ? bytes.size() : 3;
  for (size_t k = 1; k <= limit; ++k) {
    const size_t pos = bytes.size() - k;
    const uint8_t b = static_cast<uint8_t>(bytes[pos]);
    if (b < 0x80) return 0;
    if (b >= 0xC0) {
      bool complete = false;
      const size_t n = ValidPrefix(bytes, pos, &complete);
      return (!complete && n == k) ? k : 0;
    }
  }
  return 0;
}

bool IsUnicodeWhitespace(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

}  // namespace twinspan::tokenizer
