#include "services/structured/gbnf_regex.h"

#include <cctype>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/tokenizer/utf8.h"
#include "services/structured/json_schema_regex.h"

namespace twinspan::structured {
namespace {

// Any one UTF-8 encoded non-ASCII character (its well-formedness is Utf8Prefix's job).
constexpr char kNonAscii[] =
    R"([\xc0-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf7][\x80-\xbf]{3})";

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  absl::StatusOr<std::string> Translate() {
    SkipSpace(true);
    while (pos_ < text_.size()) {
      std::string name = Name();
      if (name.empty()) return Error("expected a rule name");
      SkipSpace(false);
      if (text_.substr(pos_, 3) != "::=") return Error(absl::StrCat("expected ::= after ", name));
      pos_ += 3;
      if (index_.count(name) > 0) return Error(absl::StrCat("rule ", name, " is defined twice"));
      index_[name] = static_cast<int>(bodies_.size()) + 1;
      bodies_.emplace_back();
      absl::StatusOr<std::string> body = Alternatives(/*nested=*/false);
      if (!body.ok()) return body.status();
      bodies_[index_[name] - 1] = *std::move(body);
      SkipSpace(true);
    }
    auto root = index_.find("root");
    if (root == index_.end()) return absl::InvalidArgumentError("grammar: no rule named root");
    for (const auto& [name, line] : references_) {
      if (index_.count(name) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("grammar line ", line, ": rule ", name, " is not defined"));
      }
    }
    std::string out = "(?(DEFINE)";
    for (const std::string& body : bodies_) absl::StrAppend(&out, "(", body, ")");
    absl::StrAppend(&out, ")(?", root->second, ")");
    // References were written with names; now that every rule has a number, resolve them.
    std::string resolved;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out.compare(i, 4, "(?&<") == 0) {
        const size_t end = out.find('>', i);
        absl::StrAppend(&resolved, "(?", index_[out.substr(i + 4, end - i - 4)], ")");
        i = end + 1;  // skips the closing ')'
        continue;
      }
      resolved.push_back(out[i]);
    }
    return resolved;
  }

 private:
  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat("grammar line ", line_, ": ", what));
  }

  // Skips blanks and comments; newlines too when `newlines`.
  void SkipSpace(bool newlines) {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == '\n' && newlines) {
        ++line_;
        ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  std::string Name() {
    const size_t start = pos_;
    while (pos_ < text_.size() && IsNameChar(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // True when a new rule ("name ::=") starts at pos_.
  bool AtRuleStart() const {
    size_t p = pos_;
    while (p < text_.size() && IsNameChar(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    return text_.substr(p, 3) == "::=";
  }

  absl::StatusOr<std::string> Alternatives(bool nested) {
    std::string out;
    while (true) {
      absl::StatusOr<std::string> seq = Sequence(nested);
      if (!seq.ok()) return seq.status();
      absl::StrAppend(&out, *seq);
      SkipSpace(nested);
      if (pos_ < text_.size() && text_[pos_] == '|') {
        ++pos_;
        absl::StrAppend(&out, "|");
        SkipSpace(true);
        continue;
      }
      return out;
    }
  }

  absl::StatusOr<std::string> Sequence(bool nested) {
    std::string out;
    while (true) {
      SkipSpace(nested);
      // A rule ends at a newline that is followed by the next rule (or the end).
      if (!nested && pos_ < text_.size() && text_[pos_] == '\n') {
        SkipSpace(true);
        if (pos_ >= text_.size() || AtRuleStart()) return absl::StrCat("(?:", out, ")");
        if (text_[pos_] == '|') return absl::StrCat("(?:", out, ")");
      }
      if (pos_ >= text_.size()) return absl::StrCat("(?:", out, ")");
      const char c = text_[pos_];
      if (c == '|' || c == ')') return absl::StrCat("(?:", out, ")");
      absl::StatusOr<std::string> atom = Atom();
      if (!atom.ok()) return atom.status();
      absl::StatusOr<std::string> repeated = Postfix(*atom);
      if (!repeated.ok()) return repeated.status();
      absl::StrAppend(&out, *repeated);
    }
  }

  absl::StatusOr<std::string> Postfix(const std::string& atom) {
    if (pos_ >= text_.size()) return atom;
    const char c = text_[pos_];
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      return absl::StrCat("(?:", atom, ")", std::string(1, c));
    }
    if (c != '{') return atom;
    const size_t close = text_.find('}', pos_);
    if (close == std::string_view::npos) return Error("unclosed {");
    const std::string inner(text_.substr(pos_ + 1, close - pos_ - 1));
    for (char d : inner) {
      if (!std::isdigit(static_cast<unsigned char>(d)) && d != ',' && d != ' ') {
        return Error(absl::StrCat("bad repetition {", inner, "}"));
      }
    }
    pos_ = close + 1;
    return absl::StrCat("(?:", atom, "){", inner, "}");
  }

  absl::StatusOr<std::string> Atom() {
    const char c = text_[pos_];
    if (c == '"') return Literal();
    if (c == '[') return Class();
    if (c == '.') {
      ++pos_;
      return absl::StrCat("(?:[\\x00-\\x7f]|", kNonAscii, ")");
    }
    if (c == '(') {
      ++pos_;
      SkipSpace(true);
      absl::StatusOr<std::string> inner = Alternatives(/*nested=*/true);
      if (!inner.ok()) return inner.status();
      SkipSpace(true);
      if (pos_ >= text_.size() || text_[pos_] != ')') return Error("expected )");
      ++pos_;
      return absl::StrCat("(?:", *inner, ")");
    }
    if (IsNameChar(c)) {
      const std::string name = Name();
      references_.emplace_back(name, line_);
      return absl::StrCat("(?&<", name, ">)");
    }
    return Error(absl::StrCat("unexpected character '", std::string(1, c), "'"));
  }

  // One (possibly escaped) character of a literal or class, as a code point.
  absl::StatusOr<uint32_t> Char() {
    if (pos_ >= text_.size()) return Error("unexpected end of grammar");
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (c != '\\') {
      // A raw character, strictly decoded: no overlongs, surrogates or stray continuation bytes.
      const size_t n = tokenizer::Utf8SequenceLength(text_, pos_);
      if (n == 0) return Error(absl::StrFormat("invalid UTF-8 (byte 0x%02X)", c));
      const char32_t cp = tokenizer::DecodeUtf8At(text_, pos_, n);
      pos_ += n;
      return static_cast<uint32_t>(cp);
    }
    if (pos_ + 1 >= text_.size()) return Error("a lone backslash");
    const char e = text_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case 'n':
        return uint32_t{'\n'};
      case 'r':
        return uint32_t{'\r'};
      case 't':
        return uint32_t{'\t'};
      case 'x':
      case 'u':
      case 'U': {
        const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (pos_ + digits > text_.size()) return Error("truncated \\x / \\u escape");
        uint32_t cp = 0;
        for (size_t i = 0; i < digits; ++i) {
          const char h = text_[pos_ + i];
          if (!std::isxdigit(static_cast<unsigned char>(h))) return Error("bad hex digit");
          cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                   ? h - '0'
                                                   : std::tolower(h) - 'a' + 10);
        }
        pos_ += digits;
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return Error("an escape names a surrogate or a code point past U+10FFFF");
        }
        return cp;
      }
      default:
        return static_cast<uint32_t>(static_cast<unsigned char>(e));
    }
  }

  absl::StatusOr<std::string> Literal() {
    ++pos_;  // "
    std::string bytes;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\n') return Error("newline inside a literal");
      absl::StatusOr<uint32_t> cp = Char();
      if (!cp.ok()) return cp.status();
      tokenizer::AppendUtf8(*cp, &bytes);
    }
    if (pos_ >= text_.size()) return Error("unclosed literal");
    ++pos_;
    return absl::StrCat("(?:", RegexLiteral(bytes), ")");
  }

  absl::StatusOr<std::string> Class() {
    ++pos_;  // [
    bool negated = false;
    if (pos_ < text_.size() && text_[pos_] == '^') {
      negated = true;
      ++pos_;
    }
    std::string ascii;                   // the class body over ASCII
    std::vector<std::string> non_ascii;  // listed non-ASCII characters
    while (pos_ < text_.size() && text_[pos_] != ']') {
      absl::StatusOr<uint32_t> lo = Char();
      if (!lo.ok()) return lo.status();
      uint32_t hi = *lo;
      if (pos_ + 1 < text_.size() && text_[pos_] == '-' && text_[pos_ + 1] != ']') {
        ++pos_;
        absl::StatusOr<uint32_t> end = Char();
        if (!end.ok()) return end.status();
        hi = *end;
        if (hi < *lo) return Error("a class range ends below its start");
      }
      if (hi >= 0x80) {
        if (hi != *lo) return Error("class ranges over non-ASCII characters are not supported");
        if (negated) return Error("a negated class may list ASCII characters only");
        std::string utf8;
        tokenizer::AppendUtf8(*lo, &utf8);
        non_ascii.push_back(RegexLiteral(utf8));
        continue;
      }
      absl::StrAppendFormat(&ascii, "\\x%02x", *lo);
      if (hi != *lo) absl::StrAppendFormat(&ascii, "-\\x%02x", hi);
    }
    if (pos_ >= text_.size()) return Error("unclosed class");
    ++pos_;
    if (negated) return absl::StrCat("(?:[^", ascii, "\\x80-\\xff]|", kNonAscii, ")");
    std::string out = "(?:";
    if (!ascii.empty()) absl::StrAppend(&out, "[", ascii, "]");
    for (const std::string& ch : non_ascii) {
      absl::StrAppend(&out, out.size() > 3 ? "|" : "", ch);
    }
    if (out.size() == 3) return Error("an empty class");
    return absl::StrCat(out, ")");
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  std::map<std::string, int> index_;  // rule name -> group number
  std::vector<std::string> bodies_;
  std::vector<std::pair<std::string, int>> references_;  // name, line
};

}  // namespace

absl::StatusOr<std::string> GbnfToRegex(std::string_view grammar) {
  return Parser(grammar).Translate();
}

}  // namespace twinspan::structured
