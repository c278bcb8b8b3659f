#include "common/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/tokenizer/utf8.h"

namespace twinspan::tokenizer {
namespace {

// Oniguruma's \s for UTF-8: \t \n \v \f \r, NEL and the Z categories (Zs, Zl, Zp).
constexpr char kWhitespaceItems[] = "\\t\\n\\x{0B}\\f\\r\\x{85}\\p{Z}";

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return std::string(reinterpret_cast<const char*>(buffer));
}

}  // namespace

absl::StatusOr<std::string> TranslateOnigurumaPattern(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      ++i;
      if (next == 's') {
        if (in_class) {
          out.append(kWhitespaceItems);
        } else {
          absl::StrAppend(&out, "[", kWhitespaceItems, "]");
        }
      } else if (next == 'S') {
        if (in_class) {
          return absl::UnimplementedError(absl::StrFormat(
              "tokenizer regex: \\S inside a character class is not supported (offset %d)", i - 1));
        }
        absl::StrAppend(&out, "[^", kWhitespaceItems, "]");
      } else {
        out.push_back('\\');
        out.push_back(next);
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out.push_back(pattern[++i]);
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out.push_back(pattern[++i]);
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
  }
  return out;
}

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

Regex::Regex(std::unique_ptr<Compiled> compiled) : compiled_(std::move(compiled)) {}
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

namespace {

absl::StatusOr<pcre2_code*> CompileWithOptions(std::string_view pattern, uint32_t extra,
                                               std::string_view original) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | extra, &error, &offset, nullptr);
  if (code == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("tokenizer regex %s does not compile: %s at offset %d", original,
                        Pcre2Message(error), offset));
  }
  // JIT is an optimisation: without it pcre2_match interprets the same pattern.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return code;
}

}  // namespace

absl::StatusOr<Regex> Regex::Compile(std::string_view pattern) {
  absl::StatusOr<std::string> translated = TranslateOnigurumaPattern(pattern);
  if (!translated.ok()) return translated.status();
  absl::StatusOr<pcre2_code*> code = CompileWithOptions(*translated, 0, pattern);
  if (!code.ok()) return code.status();
  auto compiled = std::make_unique<Compiled>();
  compiled->code = *code;
  return Regex(std::move(compiled));
}

absl::StatusOr<Regex> Regex::CompileLiteral(std::string_view literal) {
  absl::StatusOr<pcre2_code*> code = CompileWithOptions(literal, PCRE2_LITERAL, literal);
  if (!code.ok()) return code.status();
  auto compiled = std::make_unique<Compiled>();
  compiled->code = *code;
  return Regex(std::move(compiled));
}

absl::Status Regex::FindAll(std::string_view text, std::vector<MatchSpan>* matches) const {
  return ForEachMatch(text,
                      [matches](size_t begin, size_t end) { matches->emplace_back(begin, end); });
}

absl::Status Regex::ForEachMatch(std::string_view text,
                                 absl::FunctionRef<void(size_t, size_t)> visit) const {
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(compiled_->code, nullptr);
  if (data == nullptr) return absl::ResourceExhaustedError("tokenizer regex: out of memory");
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  absl::Status status;
  while (start <= text.size()) {
    const int rc = pcre2_match(compiled_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK,
                               data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      status = absl::ResourceExhaustedError(
          absl::StrFormat("tokenizer regex failed at byte %d of a %d-byte piece: %s", start,
                          text.size(), Pcre2Message(rc)));
      break;
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    visit(begin, end);
    if (end > begin) {
      start = end;
    } else {
      if (end >= text.size()) break;
      const size_t n = Utf8SequenceLength(text, end);
      start = end + (n == 0 ? 1 : n);
    }
  }
  pcre2_match_data_free(data);
  return status;
}

}  // namespace twinspan::tokenizer
