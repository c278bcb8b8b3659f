#include "common/tokenizer/chat_template/jinja_lexer.h"

#include <cctype>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/tokenizer/utf8.h"

namespace twinspan::jinja {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string NormalizeNewlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  return out;
}

int LineAt(const std::string& s, size_t pos) {
  int line = 1;
  for (size_t i = 0; i < pos && i < s.size(); ++i) line += s[i] == '\n';
  return line;
}

// LineAt for positions visited in increasing order, in linear total time.
class LineCounter {
 public:
  explicit LineCounter(const std::string& s) : s_(s) {}
  int At(size_t pos) {
    if (pos < pos_) {
      pos_ = 0;
      line_ = 1;
    }
    for (; pos_ < pos && pos_ < s_.size(); ++pos_) line_ += s_[pos_] == '\n';
    return line_;
  }

 private:
  const std::string& s_;
  size_t pos_ = 0;
  int line_ = 1;
};

absl::Status Error(const std::string& s, size_t pos, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("chat template line ", LineAt(s, pos), ": ", what));
}

// Decodes a Python string literal body (escapes as Python's unicode-escape codec reads them).
absl::StatusOr<std::string> DecodeStringLiteral(const std::string& s, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) {
    if (s[i] != '\\' || i + 1 >= end) {
      out.push_back(s[i]);
      continue;
    }
    const char e = s[++i];
    const auto hex = [&](int digits) -> absl::StatusOr<char32_t> {
      if (i + digits >= end) return Error(s, i, "truncated escape");
      char32_t v = 0;
      for (int k = 1; k <= digits; ++k) {
        const char c = s[i + k];
        if (!std::isxdigit(static_cast<unsigned char>(c))) return Error(s, i, "bad hex escape");
        v = v * 16 +
            (std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10));
      }
      i += digits;
      return v;
    };
    switch (e) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '\'':
        out.push_back('\'');
        break;
      case '"':
        out.push_back('"');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case 'a':
        out.push_back('\a');
        break;
      case '0':
        out.push_back('\0');
        break;
      case '\n':
        break;
      case 'x':
      case 'u':
      case 'U': {
        absl::StatusOr<char32_t> cp = hex(e == 'x' ? 2 : (e == 'u' ? 4 : 8));
        if (!cp.ok()) return cp.status();
        if (*cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF))
          return Error(s, i, "escape is not a code point");
        tokenizer::AppendUtf8(*cp, &out);
        break;
      }
      default:
        out.push_back('\\');
        out.push_back(e);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Token>> Lex(std::string_view raw_source, const LexOptions& options) {
  std::string s = NormalizeNewlines(raw_source);
  if (!options.keep_trailing_newline && !s.empty() && s.back() == '\n') s.pop_back();
  std::vector<Token> tokens;
  size_t pos = 0;
  LineCounter lines(s);
  bool line_starting = true;
  while (pos < s.size()) {
    size_t start = s.find('{', pos);
    while (start != std::string::npos && start + 1 < s.size() && s[start + 1] != '{' &&
           s[start + 1] != '%' && s[start + 1] != '#') {
      start = s.find('{', start + 1);
    }
    if (start == std::string::npos || start + 1 >= s.size()) {
      tokens.push_back({Token::Kind::kText, s.substr(pos), 0, 0, lines.At(pos)});
      break;
    }
    const char type = s[start + 1];
    const char sign = start + 2 < s.size() ? s[start + 2] : '\0';
    std::string text = s.substr(pos, start - pos);
    if (sign == '-') {
      size_t keep = text.size();
      while (keep > 0 && IsSpace(text[keep - 1])) --keep;
      text.resize(keep);
    } else if (sign != '+' && options.lstrip_blocks && type != '{') {
      const size_t newline = text.rfind('\n');
      const size_t l_pos = newline == std::string::npos ? 0 : newline + 1;
      if (l_pos > 0 || line_starting) {
        bool blank = l_pos < text.size();
        for (size_t i = l_pos; i < text.size(); ++i) blank = blank && IsSpace(text[i]);
        if (blank) text.resize(l_pos);
      }
    }
    if (!text.empty()) tokens.push_back({Token::Kind::kText, text, 0, 0, lines.At(pos)});
    size_t p = start + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
    bool strip_after = false;
    size_t after = 0;
    if (type == '#') {
      const size_t close = s.find("#}", p);
      if (close == std::string::npos) return Error(s, start, "unterminated comment");
      strip_after = close > p && s[close - 1] == '-';
      after = close + 2;
    } else {
      const char closer = type == '{' ? '}' : '%';
      tokens.push_back({type == '{' ? Token::Kind::kVarBegin : Token::Kind::kBlockBegin, "", 0, 0,
                        lines.At(start)});
      bool closed = false;
      while (p < s.size()) {
        const char c = s[p];
        if (IsSpace(c)) {
          ++p;
          continue;
        }
        if (c == '-' && p + 2 < s.size() && s[p + 1] == closer && s[p + 2] == '}') {
          strip_after = true;
          after = p + 3;
          closed = true;
          break;
        }
        if (c == closer && p + 1 < s.size() && s[p + 1] == '}') {
          after = p + 2;
          closed = true;
          break;
        }
        const int line = lines.At(p);
        if (c == '\'' || c == '"') {
          size_t q = p + 1;
          while (q < s.size() && s[q] != c) q += (s[q] == '\\') ? 2 : 1;
          if (q >= s.size()) return Error(s, p, "unterminated string literal");
          absl::StatusOr<std::string> value = DecodeStringLiteral(s, p + 1, q);
          if (!value.ok()) return value.status();
          tokens.push_back({Token::Kind::kString, *std::move(value), 0, 0, line});
          p = q + 1;
          continue;
        }
        if (std::isdigit(static_cast<unsigned char>(c))) {
          size_t q = p;
          bool is_float = false;
          while (q < s.size() && (std::isdigit(static_cast<unsigned char>(s[q])) || s[q] == '_'))
            ++q;
          if (q + 1 < s.size() && s[q] == '.' &&
              std::isdigit(static_cast<unsigned char>(s[q + 1]))) {
            is_float = true;
            ++q;
            while (q < s.size() && std::isdigit(static_cast<unsigned char>(s[q]))) ++q;
          }
          if (q < s.size() && (s[q] == 'e' || s[q] == 'E')) {
            size_t r = q + 1;
            if (r < s.size() && (s[r] == '+' || s[r] == '-')) ++r;
            if (r < s.size() && std::isdigit(static_cast<unsigned char>(s[r]))) {
              is_float = true;
              q = r;
              while (q < s.size() && std::isdigit(static_cast<unsigned char>(s[q]))) ++q;
            }
          }
          std::string digits;
          for (size_t k = p; k < q; ++k) {
            if (s[k] != '_') digits.push_back(s[k]);
          }
          Token t{is_float ? Token::Kind::kFloat : Token::Kind::kInt, digits, 0, 0, line};
          if (is_float) {
            t.float_value = std::strtod(digits.c_str(), nullptr);
          } else {
            t.int_value = std::strtoll(digits.c_str(), nullptr, 10);
          }
          tokens.push_back(t);
          p = q;
          continue;
        }
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
          size_t q = p;
          while (q < s.size() && (std::isalnum(static_cast<unsigned char>(s[q])) || s[q] == '_'))
            ++q;
          tokens.push_back({Token::Kind::kName, s.substr(p, q - p), 0, 0, line});
          p = q;
          continue;
        }
        static constexpr std::string_view kTwoChar[] = {"==", "!=", "<=", ">=", "//", "**"};
        bool matched = false;
        for (std::string_view op : kTwoChar) {
          if (s.compare(p, 2, op.data(), 2) == 0) {
            tokens.push_back({Token::Kind::kOp, std::string(op), 0, 0, line});
            p += 2;
            matched = true;
            break;
          }
        }
        if (matched) continue;
        if (std::string_view("+-*/%~<>=()[]{}.,:|").find(c) != std::string_view::npos) {
          tokens.push_back({Token::Kind::kOp, std::string(1, c), 0, 0, line});
          ++p;
          continue;
        }
        return Error(s, p, absl::StrCat("unexpected character '", std::string(1, c), "' in a tag"));
      }
      if (!closed) return Error(s, start, "unterminated tag");
      tokens.push_back(
          {type == '{' ? Token::Kind::kVarEnd : Token::Kind::kBlockEnd, "", 0, 0, lines.At(p)});
    }
    pos = after;
    if (strip_after) {
      while (pos < s.size() && IsSpace(s[pos])) ++pos;
    } else if (type != '{' && options.trim_blocks && pos < s.size() && s[pos] == '\n') {
      ++pos;
    }
    line_starting = pos > 0 && s[pos - 1] == '\n';
  }
  tokens.push_back({Token::Kind::kEof, "", 0, 0, lines.At(s.size())});
  return tokens;
}

}  // namespace twinspan::jinja
