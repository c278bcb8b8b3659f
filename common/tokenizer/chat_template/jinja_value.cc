#include "common/tokenizer/chat_template/jinja_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "common/tokenizer/utf8.h"
#include "nlohmann/json.hpp"

namespace twinspan::jinja {

namespace {

constexpr int64_t kScalarBytes = sizeof(Value);
// Far above kMaxValueBytes, so that sums of saturated sizes cannot overflow.
constexpr int64_t kSaturatedBytes = int64_t{1} << 60;

int64_t AddBytes(int64_t a, int64_t b) { return std::min(a + b, kSaturatedBytes); }

}  // namespace

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}
Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}
Value Value::Float(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.f_ = f;
  return v;
}
Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.bytes_ = AddBytes(kScalarBytes, static_cast<int64_t>(s.size()));
  v.s_ = std::move(s);
  return v;
}
Value Value::MakeList(List items) {
  Value v;
  v.kind_ = Kind::kList;
  v.bytes_ = kScalarBytes;
  for (const Value& item : items) {
    v.bytes_ = AddBytes(v.bytes_, item.bytes());
    v.depth_ = std::max(v.depth_, item.depth());
    v.holds_namespace_ = v.holds_namespace_ || item.holds_namespace();
  }
  ++v.depth_;
  v.list_ = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::MakeTuple(List items) {
  Value v = MakeList(std::move(items));
  v.tuple_ = true;
  return v;
}
Value Value::MakeDict(bool is_namespace) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<Dict>();
  v.dict_->is_namespace = is_namespace;
  v.dict_->holds_namespace = is_namespace;
  v.dict_->bytes = kScalarBytes;
  return v;
}
Value Value::MakeFunction(Function fn) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.fn_ = std::make_shared<Function>(std::move(fn));
  return v;
}

int64_t Value::bytes() const {
  if (kind_ == Kind::kDict) return dict_->bytes;
  return kind_ == Kind::kString || kind_ == Kind::kList ? bytes_ : kScalarBytes;
}

int Value::depth() const {
  if (kind_ == Kind::kDict) return dict_->depth;
  return kind_ == Kind::kList ? depth_ : 0;
}

bool Value::holds_namespace() const {
  if (kind_ == Kind::kDict) return dict_->holds_namespace;
  return kind_ == Kind::kList && holds_namespace_;
}

namespace {

// Recursion stops at kMaxValueDepth, so a deeply nested request cannot exhaust the stack.
absl::StatusOr<Value> ValueFromJson(const nlohmann::ordered_json& json, int depth) {
  if (depth > kMaxValueDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("JSON nested deeper than ", kMaxValueDepth, " levels"));
  }
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::None();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::Bool(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::Int(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value::Int(static_cast<int64_t>(json.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float:
      return Value::Float(json.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::String(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      for (const auto& item : json) {
        ABSL_ASSIGN_OR_RETURN(Value v, ValueFromJson(item, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::MakeList(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value d = Value::MakeDict();
      for (const auto& [key, item] : json.items()) {
        ABSL_ASSIGN_OR_RETURN(Value v, ValueFromJson(item, depth + 1));
        d.dict().Set(key, std::move(v));
      }
      return d;
    }
    default:
      return Value();
  }
}

}  // namespace

absl::StatusOr<Value> Value::FromJson(const nlohmann::ordered_json& json) {
  return ValueFromJson(json, 1);
}

bool Value::is_namespace() const { return kind_ == Kind::kDict && dict_->is_namespace; }

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return f_ != 0;
    case Kind::kString:
      return !s_.empty();
    case Kind::kList:
      return !list_->empty();
    case Kind::kDict:
      return dict_->is_namespace || !dict_->items.empty();
    case Kind::kFunction:
      return true;
  }
  return false;
}

bool Value::Equals(const Value& other) const {
  if (is_number() && other.is_number()) {
    if (kind_ == Kind::kFloat || other.kind_ == Kind::kFloat) return as_float() == other.as_float();
    return as_int() == other.as_int();
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return s_ == other.s_;
    case Kind::kList:
      if (list_->size() != other.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].Equals((*other.list_)[i])) return false;
      }
      return true;
    case Kind::kDict:
      if (dict_ == other.dict_) return true;
      if (dict_->items.size() != other.dict_->items.size()) return false;
      for (const auto& [key, value] : dict_->items) {
        const Value* found = other.dict_->Find(key);
        if (found == nullptr || !value.Equals(*found)) return false;
      }
      return true;
    case Kind::kFunction:
      return fn_ == other.fn_;
    default:
      return false;
  }
}

std::string PythonFloatRepr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  if (f == 0) return std::signbit(f) ? "-0.0" : "0.0";
  // Shortest digits that read back to the same double.
  char buffer[64];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*e", precision - 1, f);
    if (std::strtod(buffer, nullptr) == f) break;
  }
  std::string text(buffer);
  const bool negative = text[0] == '-';
  if (negative) text.erase(0, 1);
  const size_t e = text.find('e');
  std::string digits = text.substr(0, 1) + (e > 2 ? text.substr(2, e - 2) : std::string());
  const int exponent = std::atoi(text.c_str() + e + 1);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int decpt = exponent + 1;  // digits d1d2... means 0.d1d2... * 10^decpt
  std::string out;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out = "0." + std::string(-decpt, '0') + digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out = digits + std::string(decpt - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, decpt) + "." + digits.substr(decpt);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    absl::StrAppendFormat(&out, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  }
  return negative ? "-" + out : out;
}

std::string PythonStringRepr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t n = tokenizer::Utf8SequenceLength(s, pos);
    const char32_t cp = n == 0 ? 0xFFFD : tokenizer::DecodeUtf8At(s, pos, n);
    const size_t step = n == 0 ? 1 : n;
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0xA0) || cp == 0xAD) {
      absl::StrAppendFormat(&out, "\\x%02x", static_cast<unsigned>(cp));
    } else {
      out.append(s, pos, step);
    }
    pos += step;
  }
  out += quote;
  return out;
}

std::string Value::Str() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return s_;
    default:
      return Repr();
  }
}

namespace {

// Appends repr(value); stops once `out` passes kMaxValueBytes (the caller refuses the result).
void AppendRepr(const Value& value, std::string* out) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return;
    case Value::Kind::kNone:
      *out += "None";
      return;
    case Value::Kind::kBool:
      *out += value.as_bool() ? "True" : "False";
      return;
    case Value::Kind::kInt:
      absl::StrAppend(out, value.as_int());
      return;
    case Value::Kind::kFloat:
      *out += PythonFloatRepr(value.as_float());
      return;
    case Value::Kind::kString:
      *out += PythonStringRepr(value.as_string());
      return;
    case Value::Kind::kList: {
      const List& items = value.list();
      *out += value.is_tuple() ? "(" : "[";
      for (size_t i = 0; i < items.size() && static_cast<int64_t>(out->size()) <= kMaxValueBytes;
           ++i) {
        if (i > 0) *out += ", ";
        AppendRepr(items[i], out);
      }
      if (value.is_tuple()) {
        *out += items.size() == 1 ? ",)" : ")";
      } else {
        *out += "]";
      }
      return;
    }
    case Value::Kind::kDict: {
      if (value.is_namespace()) {
        *out += "<Namespace>";
        return;
      }
      const auto& items = value.dict().items;
      *out += "{";
      for (size_t i = 0; i < items.size() && static_cast<int64_t>(out->size()) <= kMaxValueBytes;
           ++i) {
        if (i > 0) *out += ", ";
        *out += PythonStringRepr(items[i].first);
        *out += ": ";
        AppendRepr(items[i].second, out);
      }
      *out += "}";
      return;
    }
    case Value::Kind::kFunction:
      *out += "<function>";
      return;
  }
}

}  // namespace

std::string Value::Repr() const {
  std::string out;
  AppendRepr(*this, &out);
  return out;
}

std::string Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return "list";
    case Kind::kDict:
      return dict_->is_namespace ? "Namespace" : "dict";
    case Kind::kFunction:
      return "function";
  }
  return "?";
}

const Value* Dict::Find(const std::string& key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::Set(const std::string& key, Value value) {
  depth = std::max(depth, value.depth() + 1);
  holds_namespace = holds_namespace || value.holds_namespace();
  for (auto& [k, v] : items) {
    if (k == key) {
      bytes = AddBytes(std::max<int64_t>(0, bytes - v.bytes()), value.bytes());
      v = std::move(value);
      return;
    }
  }
  bytes = AddBytes(bytes, AddBytes(static_cast<int64_t>(key.size()), value.bytes()));
  items.emplace_back(key, std::move(value));
}

namespace {

void JsonString(const std::string& s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  size_t pos = 0;
  while (pos < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[pos]);
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", c);
        } else if (c >= 0x80 && ensure_ascii) {
          const size_t n = tokenizer::Utf8SequenceLength(s, pos);
          const char32_t cp = n == 0 ? 0xFFFD : tokenizer::DecodeUtf8At(s, pos, n);
          if (cp >= 0x10000) {
            const char32_t v = cp - 0x10000;
            absl::StrAppendFormat(out, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
          } else {
            absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned>(cp));
          }
          pos += n == 0 ? 1 : n;
          continue;
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
    ++pos;
  }
  out->push_back('"');
}

absl::Status TooLong() {
  return absl::InvalidArgumentError(
      absl::StrCat("tojson: output larger than the limit of ", kMaxValueBytes, " bytes"));
}

absl::Status Dump(const Value& value, const JsonFormat& format, const std::string& indent_unit,
                  bool pretty, int depth, std::string* out) {
  const std::string item_sep = format.separators ? format.separators->first : (pretty ? "," : ", ");
  const std::string key_sep = format.separators ? format.separators->second : ": ";
  const auto newline = [&](int level) {
    out->push_back('\n');
    for (int i = 0; i < level && static_cast<int64_t>(out->size()) <= kMaxValueBytes; ++i)
      *out += indent_unit;
  };
  const auto too_long = [&]() { return static_cast<int64_t>(out->size()) > kMaxValueBytes; };
  switch (value.kind()) {
    case Value::Kind::kNone:
      *out += "null";
      return absl::OkStatus();
    case Value::Kind::kBool:
      *out += value.as_bool() ? "true" : "false";
      return absl::OkStatus();
    case Value::Kind::kInt:
      absl::StrAppend(out, value.as_int());
      return absl::OkStatus();
    case Value::Kind::kFloat: {
      const double f = value.as_float();
      if (std::isnan(f)) {
        *out += "NaN";
      } else if (std::isinf(f)) {
        *out += f > 0 ? "Infinity" : "-Infinity";
      } else {
        *out += PythonFloatRepr(f);
      }
      return absl::OkStatus();
    }
    case Value::Kind::kString:
      JsonString(value.as_string(), format.ensure_ascii, out);
      return absl::OkStatus();
    case Value::Kind::kList: {
      const List& items = value.list();
      if (items.empty()) {
        *out += "[]";
        return absl::OkStatus();
      }
      out->push_back('[');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) *out += item_sep;
        if (pretty) newline(depth + 1);
        absl::Status status = Dump(items[i], format, indent_unit, pretty, depth + 1, out);
        if (!status.ok()) return status;
        if (too_long()) return TooLong();
      }
      if (pretty) newline(depth);
      out->push_back(']');
      return absl::OkStatus();
    }
    case Value::Kind::kDict: {
      if (value.is_namespace()) break;  // not JSON serializable, as in Python
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& item : value.dict().items) items.push_back(&item);
      if (format.sort_keys) {
        std::stable_sort(items.begin(), items.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      if (items.empty()) {
        *out += "{}";
        return absl::OkStatus();
      }
      out->push_back('{');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) *out += item_sep;
        if (pretty) newline(depth + 1);
        JsonString(items[i]->first, format.ensure_ascii, out);
        *out += key_sep;
        absl::Status status = Dump(items[i]->second, format, indent_unit, pretty, depth + 1, out);
        if (!status.ok()) return status;
        if (too_long()) return TooLong();
      }
      if (pretty) newline(depth);
      out->push_back('}');
      return absl::OkStatus();
    }
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("tojson: object of type ", value.TypeName(), " is not JSON serializable"));
}

}  // namespace

absl::StatusOr<std::string> PythonJsonDumps(const Value& value, const JsonFormat& format) {
  std::string indent_unit;
  bool pretty = false;
  if (format.indent_string.has_value()) {
    indent_unit = *format.indent_string;
    pretty = true;
  } else if (format.indent.has_value()) {
    if (*format.indent > kMaxValueBytes) return TooLong();
    indent_unit = std::string(std::max<int64_t>(0, *format.indent), ' ');
    pretty = true;
  }
  std::string out;
  absl::Status status = Dump(value, format, indent_unit, pretty, 0, &out);
  if (!status.ok()) return status;
  return out;
}

}  // namespace twinspan::jinja
