#include "common/tokenizer/chat_template/jinja_builtins.h"

#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/tokenizer/utf8.h"

namespace twinspan::jinja {
namespace {

absl::Status Bad(const std::string& what) { return absl::InvalidArgumentError(what); }

absl::Status TooLarge(const char* what) {
  return Bad(absl::StrCat(what, ": result larger than the limit of ", kMaxValueBytes, " bytes"));
}

// Whether `n` values (before their strings' bytes) already pass kMaxValueBytes.
bool TooManyValues(size_t n) { return static_cast<int64_t>(n * sizeof(Value)) > kMaxValueBytes; }

// Python's int(f), refused outside int64 (Python's ints have no bound; ours do).
absl::StatusOr<int64_t> FloatToInt(double f) {
  if (!(std::fabs(f) < 9.2e18)) return Bad(absl::StrCat("int: ", f, " does not fit in 64 bits"));
  return static_cast<int64_t>(f);
}

// Python's str.isspace set.
bool IsPythonSpace(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Code points with their byte offsets; offsets has one extra entry (the end).
struct CodePoints {
  std::vector<char32_t> cps;
  std::vector<size_t> offsets;
};

CodePoints Decode(const std::string& s) {
  CodePoints out;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t n = tokenizer::Utf8SequenceLength(s, pos);
    out.offsets.push_back(pos);
    out.cps.push_back(n == 0 ? 0xFFFD : tokenizer::DecodeUtf8At(s, pos, n));
    pos += n == 0 ? 1 : n;
  }
  out.offsets.push_back(s.size());
  return out;
}

// Keyword or positional argument `index` named `name`, or nullopt.
std::optional<Value> Arg(Args& args, size_t index, const std::string& name) {
  for (auto& [key, value] : args.keyword) {
    if (key == name) return value;
  }
  if (index < args.positional.size()) return args.positional[index];
  return std::nullopt;
}

absl::StatusOr<std::string> StringArg(Args& args, size_t index, const std::string& name,
                                      const char* where) {
  std::optional<Value> v = Arg(args, index, name);
  if (!v.has_value() || !v->is_string())
    return Bad(absl::StrCat(where, ": argument '", name, "' must be a string"));
  return v->as_string();
}

std::string Strip(const std::string& s, const std::optional<Value>& chars, bool left, bool right) {
  CodePoints cp = Decode(s);
  std::vector<char32_t> set;
  const bool whitespace = !chars.has_value() || chars->is_none() || chars->is_undefined();
  if (!whitespace) set = Decode(chars->Str()).cps;
  const auto strip = [&](char32_t c) {
    return whitespace ? IsPythonSpace(c) : std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t begin = 0, end = cp.cps.size();
  if (left) {
    while (begin < end && strip(cp.cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strip(cp.cps[end - 1])) --end;
  }
  return s.substr(cp.offsets[begin], cp.offsets[end] - cp.offsets[begin]);
}

absl::StatusOr<Value> Split(const std::string& s, const std::optional<Value>& sep,
                            int64_t maxsplit) {
  List parts;
  if (!sep.has_value() || sep->is_none()) {
    CodePoints cp = Decode(s);
    size_t i = 0;
    const size_t n = cp.cps.size();
    while (true) {
      while (i < n && IsPythonSpace(cp.cps[i])) ++i;
      if (i >= n) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        size_t end = n;
        while (end > i && IsPythonSpace(cp.cps[end - 1])) --end;
        parts.push_back(Value::String(s.substr(cp.offsets[i], cp.offsets[end] - cp.offsets[i])));
        break;
      }
      if (TooManyValues(parts.size())) return TooLarge("split");
      size_t j = i;
      while (j < n && !IsPythonSpace(cp.cps[j])) ++j;
      parts.push_back(Value::String(s.substr(cp.offsets[i], cp.offsets[j] - cp.offsets[i])));
      i = j;
    }
    return Value::MakeList(std::move(parts));
  }
  if (!sep->is_string()) return Bad("split: separator must be a string");
  const std::string& d = sep->as_string();
  if (d.empty()) return Bad("split: empty separator");
  size_t start = 0;
  while (true) {
    const size_t hit = s.find(d, start);
    if (hit == std::string::npos ||
        (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit)) {
      parts.push_back(Value::String(s.substr(start)));
      break;
    }
    if (TooManyValues(parts.size())) return TooLarge("split");
    parts.push_back(Value::String(s.substr(start, hit - start)));
    start = hit + d.size();
  }
  return Value::MakeList(std::move(parts));
}

std::string MapCase(const std::string& s, bool upper) {
  std::string out;
  for (char32_t c : Decode(s).cps) {
    tokenizer::AppendUtf8(static_cast<char32_t>(upper ? utf8proc_toupper(c) : utf8proc_tolower(c)),
                          &out);
  }
  return out;
}

std::string Capitalize(const std::string& s) {
  CodePoints cp = Decode(s);
  std::string out;
  for (size_t i = 0; i < cp.cps.size(); ++i) {
    tokenizer::AppendUtf8(
        static_cast<char32_t>(i == 0 ? utf8proc_toupper(cp.cps[i]) : utf8proc_tolower(cp.cps[i])),
        &out);
  }
  return out;
}

std::string Title(const std::string& s) {
  std::string out;
  bool previous_cased = false;
  for (char32_t c : Decode(s).cps) {
    const utf8proc_category_t cat = utf8proc_category(c);
    const bool cased =
        cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
    tokenizer::AppendUtf8(
        static_cast<char32_t>(previous_cased ? utf8proc_tolower(c) : utf8proc_toupper(c)), &out);
    previous_cased = cased;
  }
  return out;
}

absl::StatusOr<std::string> Replace(const std::string& s, const std::string& old,
                                    const std::string& replacement, int64_t count) {
  int64_t hits = 0;
  if (old.empty()) {
    hits = static_cast<int64_t>(CodePointCount(s)) + 1;
  } else {
    for (size_t at = s.find(old); at != std::string::npos && (count < 0 || hits < count);
         at = s.find(old, at + old.size()))
      ++hits;
  }
  if (count >= 0) hits = std::min(hits, count);
  if (static_cast<double>(s.size()) + static_cast<double>(hits) * replacement.size() >
      static_cast<double>(kMaxValueBytes))
    return TooLarge("replace");
  if (old.empty()) {
    // Python inserts the replacement between every character.
    CodePoints cp = Decode(s);
    std::string out;
    int64_t done = 0;
    for (size_t i = 0; i <= cp.cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      if (i < cp.cps.size()) out += s.substr(cp.offsets[i], cp.offsets[i + 1] - cp.offsets[i]);
    }
    return out;
  }
  std::string out;
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(old, start);
    if (hit == std::string::npos) break;
    out += s.substr(start, hit - start) + replacement;
    start = hit + old.size();
    ++done;
  }
  return out + s.substr(start);
}

absl::StatusOr<bool> AffixMatch(const std::string& s, const Value& affix, bool prefix) {
  const auto one = [&](const Value& a) -> absl::StatusOr<bool> {
    if (!a.is_string())
      return Bad("startswith/endswith: argument must be a string or a tuple of strings");
    const std::string& x = a.as_string();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0
                  : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_list()) {
    for (const Value& a : affix.list()) {
      ABSL_ASSIGN_OR_RETURN(bool hit, one(a));
      if (hit) return true;
    }
    return false;
  }
  return one(affix);
}

Value ItemsOf(const Value& dict) {
  List items;
  for (const auto& [k, v] : dict.dict().items)
    items.push_back(Value::MakeTuple({Value::String(k), v}));
  return Value::MakeList(std::move(items));
}

absl::StatusOr<Value> StringMethod(const std::string& s, const std::string& name, Args& args) {
  if (name == "startswith" || name == "endswith") {
    std::optional<Value> affix = Arg(args, 0, "prefix");
    if (!affix.has_value()) affix = Arg(args, 0, "suffix");
    if (!affix.has_value()) return Bad(absl::StrCat(name, ": missing argument"));
    ABSL_ASSIGN_OR_RETURN(bool hit, AffixMatch(s, *affix, name == "startswith"));
    return Value::Bool(hit);
  }
  if (name == "split") {
    std::optional<Value> maxsplit = Arg(args, 1, "maxsplit");
    return Split(s, Arg(args, 0, "sep"), maxsplit.has_value() ? maxsplit->as_int() : -1);
  }
  if (name == "strip") return Value::String(Strip(s, Arg(args, 0, "chars"), true, true));
  if (name == "lstrip") return Value::String(Strip(s, Arg(args, 0, "chars"), true, false));
  if (name == "rstrip") return Value::String(Strip(s, Arg(args, 0, "chars"), false, true));
  if (name == "upper") return Value::String(MapCase(s, true));
  if (name == "lower") return Value::String(MapCase(s, false));
  if (name == "capitalize") return Value::String(Capitalize(s));
  if (name == "title") return Value::String(Title(s));
  if (name == "replace") {
    ABSL_ASSIGN_OR_RETURN(std::string old, StringArg(args, 0, "old", "replace"));
    ABSL_ASSIGN_OR_RETURN(std::string replacement, StringArg(args, 1, "new", "replace"));
    std::optional<Value> count = Arg(args, 2, "count");
    ABSL_ASSIGN_OR_RETURN(std::string out,
                          Replace(s, old, replacement, count.has_value() ? count->as_int() : -1));
    return Value::String(std::move(out));
  }
  if (name == "find" || name == "count") {
    ABSL_ASSIGN_OR_RETURN(std::string sub, StringArg(args, 0, "sub", name.c_str()));
    if (name == "find") {
      const size_t hit = s.find(sub);
      if (hit == std::string::npos) return Value::Int(-1);
      return Value::Int(static_cast<int64_t>(CodePointCount(s.substr(0, hit))));
    }
    if (sub.empty()) return Value::Int(static_cast<int64_t>(CodePointCount(s) + 1));
    int64_t n = 0;
    for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
    return Value::Int(n);
  }
  if (name == "join") {
    std::optional<Value> items = Arg(args, 0, "iterable");
    if (!items.has_value()) return Bad("join: missing argument");
    ABSL_ASSIGN_OR_RETURN(List list, Iterate(*items));
    std::string out;
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) return Bad("join: sequence item is not a string");
      if (i > 0) out += s;
      out += list[i].as_string();
      if (static_cast<int64_t>(out.size()) > kMaxValueBytes) return TooLarge("join");
    }
    return Value::String(std::move(out));
  }
  return Bad(absl::StrCat("str has no method '", name, "'"));
}

bool IsStringMethod(const std::string& name) {
  static const char* const kNames[] = {"startswith", "endswith", "split", "strip",      "lstrip",
                                       "rstrip",     "upper",    "lower", "capitalize", "title",
                                       "replace",    "find",     "count", "join"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

absl::StatusOr<Value> DictMethod(const Value& dict, const std::string& name, Args& args) {
  if (name == "items") return ItemsOf(dict);
  if (name == "keys" || name == "values") {
    List out;
    for (const auto& [k, v] : dict.dict().items)
      out.push_back(name == "keys" ? Value::String(k) : v);
    return Value::MakeList(std::move(out));
  }
  if (name == "get") {
    std::optional<Value> key = Arg(args, 0, "key");
    if (!key.has_value() || !key->is_string()) return Value::None();
    const Value* found = dict.dict().Find(key->as_string());
    if (found != nullptr) return *found;
    std::optional<Value> fallback = Arg(args, 1, "default");
    return fallback.has_value() ? *fallback : Value::None();
  }
  return Bad(absl::StrCat("dict has no method '", name, "'"));
}

// Python's slice.indices for a sequence of `length`.
absl::Status SliceIndices(const Value& start_v, const Value& stop_v, const Value& step_v,
                          int64_t length, int64_t* start, int64_t* stop, int64_t* step) {
  const auto present = [](const Value& v) { return !v.is_undefined() && !v.is_none(); };
  *step = present(step_v) ? step_v.as_int() : 1;
  if (*step == 0) return Bad("slice step cannot be zero");
  *step = std::clamp(*step, -(length + 1), length + 1);
  const int64_t lower = *step < 0 ? -1 : 0;
  const int64_t upper = *step < 0 ? length - 1 : length;
  const auto clamp = [&](const Value& v, int64_t fallback) {
    if (!present(v)) return fallback;
    int64_t x = v.as_int();
    if (x < 0) {
      x += length;
      return x < lower ? lower : x;
    }
    return x > upper ? upper : x;
  };
  *start = clamp(start_v, *step < 0 ? upper : lower);
  *stop = clamp(stop_v, *step < 0 ? lower : upper);
  return absl::OkStatus();
}

absl::StatusOr<Value> ToJson(const Value& value, Args& args) {
  JsonFormat format;
  std::optional<Value> indent = Arg(args, 0, "indent");
  if (indent.has_value() && !indent->is_none()) {
    if (indent->is_string()) {
      format.indent_string = indent->as_string();
    } else {
      format.indent = indent->as_int();
    }
  }
  for (auto& [key, v] : args.keyword) {
    if (key == "sort_keys") format.sort_keys = v.Truthy();
    if (key == "ensure_ascii") format.ensure_ascii = v.Truthy();
    if (key == "separators" && v.is_list() && v.list().size() == 2) {
      format.separators = std::make_pair(v.list()[0].Str(), v.list()[1].Str());
    }
  }
  ABSL_ASSIGN_OR_RETURN(std::string text, PythonJsonDumps(value, format));
  return Value::String(std::move(text));
}

absl::StatusOr<Value> ToInt(const Value& value, const Value& fallback) {
  switch (value.kind()) {
    case Value::Kind::kBool:
    case Value::Kind::kInt:
      return Value::Int(value.as_int());
    case Value::Kind::kFloat:
      if (!std::isfinite(value.as_float())) return fallback;
      {
        ABSL_ASSIGN_OR_RETURN(int64_t i, FloatToInt(value.as_float()));
        return Value::Int(i);
      }
    case Value::Kind::kString: {
      int64_t i = 0;
      if (absl::SimpleAtoi(value.as_string(), &i)) return Value::Int(i);
      double f = 0;
      if (absl::SimpleAtod(value.as_string(), &f) && std::isfinite(f)) {
        ABSL_ASSIGN_OR_RETURN(int64_t i, FloatToInt(f));
        return Value::Int(i);
      }
      return fallback;
    }
    default:
      return fallback;
  }
}

// Attribute of each item for map/selectattr/join(attribute=...): dotted paths allowed.
absl::StatusOr<Value> AttributePath(const Value& item, const std::string& path) {
  Value current = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    int64_t index = 0;
    if (current.is_list() && absl::SimpleAtoi(part, &index)) {
      ABSL_ASSIGN_OR_RETURN(current, GetItem(current, Value::Int(index)));
    } else if (current.is_undefined()) {
      return current;
    } else {
      ABSL_ASSIGN_OR_RETURN(current, GetAttribute(current, part));
    }
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

absl::StatusOr<Value> SelectOrReject(const Value& value, Args& args, bool by_attribute,
                                     bool select) {
  ABSL_ASSIGN_OR_RETURN(List items, Iterate(value));
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (args.positional.empty() || !args.positional[0].is_string())
      return Bad("selectattr: missing attribute name");
    attribute = args.positional[0].as_string();
    next = 1;
  }
  std::string test;
  Args test_args;
  if (next < args.positional.size()) {
    test = args.positional[next].Str();
    test_args.positional.assign(args.positional.begin() + next + 1, args.positional.end());
  }
  List out;
  for (const Value& item : items) {
    Value subject = item;
    if (by_attribute) {
      ABSL_ASSIGN_OR_RETURN(subject, AttributePath(item, attribute));
    }
    bool keep = subject.Truthy();
    if (!test.empty()) {
      ABSL_ASSIGN_OR_RETURN(keep, ApplyTest(test, subject, test_args));
    }
    if (keep == select) out.push_back(item);
  }
  return Value::MakeList(std::move(out));
}

}  // namespace

size_t CodePointCount(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

absl::StatusOr<List> Iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return List();
    case Value::Kind::kList:
      return value.list();
    case Value::Kind::kDict: {
      List keys;
      for (const auto& [k, v] : value.dict().items) keys.push_back(Value::String(k));
      return keys;
    }
    case Value::Kind::kString: {
      List chars;
      CodePoints cp = Decode(value.as_string());
      if (TooManyValues(cp.cps.size())) return TooLarge("iterating a string by character");
      for (size_t i = 0; i < cp.cps.size(); ++i) {
        chars.push_back(Value::String(
            value.as_string().substr(cp.offsets[i], cp.offsets[i + 1] - cp.offsets[i])));
      }
      return chars;
    }
    default:
      return Bad(absl::StrCat("'", value.TypeName(), "' object is not iterable"));
  }
}

absl::StatusOr<Value> GetAttribute(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined:
      return Bad(absl::StrCat("cannot read attribute '", name, "' of an undefined value"));
    case Value::Kind::kDict: {
      if (!obj.is_namespace() &&
          (name == "items" || name == "keys" || name == "values" || name == "get")) {
        return Value::MakeFunction([obj, name](Args& args) { return DictMethod(obj, name, args); });
      }
      const Value* found = obj.dict().Find(name);
      return found != nullptr ? *found : Value();
    }
    case Value::Kind::kString:
      if (IsStringMethod(name)) {
        const std::string s = obj.as_string();
        return Value::MakeFunction([s, name](Args& args) { return StringMethod(s, name, args); });
      }
      return Value();
    default:
      return Value();
  }
}

absl::StatusOr<Value> GetItem(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined:
      return Bad(absl::StrCat("cannot index an undefined value with ", key.Repr()));
    case Value::Kind::kDict: {
      if (!key.is_string()) return Value();
      const Value* found = obj.dict().Find(key.as_string());
      return found != nullptr ? *found : Value();
    }
    case Value::Kind::kList:
    case Value::Kind::kString: {
      if (key.kind() != Value::Kind::kInt && key.kind() != Value::Kind::kBool) {
        if (obj.is_string() && key.is_string()) return GetAttribute(obj, key.as_string());
        return Value();
      }
      if (obj.is_list()) {
        const int64_t n = static_cast<int64_t>(obj.list().size());
        int64_t i = key.as_int();
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value();
        return obj.list()[i];
      }
      CodePoints cp = Decode(obj.as_string());
      const int64_t n = static_cast<int64_t>(cp.cps.size());
      int64_t i = key.as_int();
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value();
      return Value::String(
          obj.as_string().substr(cp.offsets[i], cp.offsets[i + 1] - cp.offsets[i]));
    }
    default:
      return Value();
  }
}

absl::StatusOr<Value> GetSlice(const Value& obj, const Value& start_v, const Value& stop_v,
                               const Value& step_v) {
  if (!obj.is_list() && !obj.is_string()) {
    return Bad(absl::StrCat("cannot slice a value of type ", obj.TypeName()));
  }
  CodePoints cp;
  int64_t length = 0;
  if (obj.is_list()) {
    length = static_cast<int64_t>(obj.list().size());
  } else {
    cp = Decode(obj.as_string());
    length = static_cast<int64_t>(cp.cps.size());
  }
  int64_t start = 0, stop = 0, step = 1;
  ABSL_RETURN_IF_ERROR(SliceIndices(start_v, stop_v, step_v, length, &start, &stop, &step));
  List items;
  std::string text;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (obj.is_list()) {
      items.push_back(obj.list()[i]);
    } else {
      text += obj.as_string().substr(cp.offsets[i], cp.offsets[i + 1] - cp.offsets[i]);
    }
  }
  return obj.is_list() ? Value::MakeList(std::move(items)) : Value::String(std::move(text));
}

absl::StatusOr<Value> ApplyFilter(const std::string& name, const Value& value, Args& args) {
  if (name == "length" || name == "count") {
    switch (value.kind()) {
      case Value::Kind::kUndefined:
        return Value::Int(0);
      case Value::Kind::kString:
        return Value::Int(static_cast<int64_t>(CodePointCount(value.as_string())));
      case Value::Kind::kList:
        return Value::Int(static_cast<int64_t>(value.list().size()));
      case Value::Kind::kDict:
        return Value::Int(static_cast<int64_t>(value.dict().items.size()));
      default:
        return Bad(absl::StrCat("object of type '", value.TypeName(), "' has no len()"));
    }
  }
  if (name == "string") return Value::String(value.Str());
  if (name == "safe") return value;
  if (name == "tojson") return ToJson(value, args);
  if (name == "trim") {
    std::optional<Value> chars = Arg(args, 0, "chars");
    return Value::String(Strip(value.Str(), chars, true, true));
  }
  if (name == "upper") return Value::String(MapCase(value.Str(), true));
  if (name == "lower") return Value::String(MapCase(value.Str(), false));
  if (name == "capitalize") return Value::String(Capitalize(value.Str()));
  if (name == "title") return Value::String(Title(value.Str()));
  if (name == "items") {
    if (value.is_undefined()) return Value::MakeList({});
    if (!value.is_dict()) return Bad("items: can only get item pairs from a mapping");
    return ItemsOf(value);
  }
  if (name == "default" || name == "d") {
    std::optional<Value> fallback = Arg(args, 0, "default_value");
    std::optional<Value> boolean = Arg(args, 1, "boolean");
    const bool use_fallback =
        value.is_undefined() || (boolean.has_value() && boolean->Truthy() && !value.Truthy());
    if (!use_fallback) return value;
    return fallback.has_value() ? *fallback : Value::String("");
  }
  if (name == "join") {
    std::optional<Value> sep = Arg(args, 0, "d");
    std::optional<Value> attribute = Arg(args, 1, "attribute");
    ABSL_ASSIGN_OR_RETURN(List items, Iterate(value));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0 && sep.has_value()) out += sep->Str();
      Value item = items[i];
      if (attribute.has_value()) {
        ABSL_ASSIGN_OR_RETURN(item, AttributePath(item, attribute->Str()));
      }
      out += item.Str();
      if (static_cast<int64_t>(out.size()) > kMaxValueBytes) return TooLarge("join");
    }
    return Value::String(std::move(out));
  }
  if (name == "first" || name == "last") {
    ABSL_ASSIGN_OR_RETURN(List items, Iterate(value));
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") {
    ABSL_ASSIGN_OR_RETURN(List items, Iterate(value));
    return Value::MakeList(std::move(items));
  }
  if (name == "reverse") {
    if (value.is_string()) return GetSlice(value, Value(), Value(), Value::Int(-1));
    ABSL_ASSIGN_OR_RETURN(List items, Iterate(value));
    std::reverse(items.begin(), items.end());
    return Value::MakeList(std::move(items));
  }
  if (name == "int") {
    std::optional<Value> fallback = Arg(args, 0, "default");
    return ToInt(value, fallback.has_value() ? *fallback : Value::Int(0));
  }
  if (name == "float") {
    if (value.is_number()) return Value::Float(value.as_float());
    double f = 0;
    if (value.is_string() && absl::SimpleAtod(value.as_string(), &f)) return Value::Float(f);
    std::optional<Value> fallback = Arg(args, 0, "default");
    return fallback.has_value() ? *fallback : Value::Float(0);
  }
  if (name == "abs") {
    if (value.kind() == Value::Kind::kFloat) return Value::Float(std::fabs(value.as_float()));
    if (value.is_number()) {
      if (value.as_int() == INT64_MIN) return Bad("abs: integer overflow (64-bit integers)");
      return Value::Int(std::llabs(value.as_int()));
    }
    return Bad("abs: not a number");
  }
  if (name == "replace") {
    ABSL_ASSIGN_OR_RETURN(std::string old, StringArg(args, 0, "old", "replace"));
    ABSL_ASSIGN_OR_RETURN(std::string replacement, StringArg(args, 1, "new", "replace"));
    std::optional<Value> count = Arg(args, 2, "count");
    ABSL_ASSIGN_OR_RETURN(std::string out,
                          Replace(value.Str(), old, replacement,
                                  count.has_value() && !count->is_none() ? count->as_int() : -1));
    return Value::String(std::move(out));
  }
  if (name == "map") {
    ABSL_ASSIGN_OR_RETURN(List items, Iterate(value));
    std::optional<Value> attribute = Arg(args, 99, "attribute");
    List out;
    for (const Value& item : items) {
      if (attribute.has_value()) {
        ABSL_ASSIGN_OR_RETURN(Value mapped, AttributePath(item, attribute->Str()));
        if (mapped.is_undefined()) {
          std::optional<Value> fallback = Arg(args, 99, "default");
          if (fallback.has_value()) mapped = *fallback;
        }
        out.push_back(mapped);
      } else {
        if (args.positional.empty()) return Bad("map: give a filter name or attribute=");
        Args rest;
        rest.positional.assign(args.positional.begin() + 1, args.positional.end());
        ABSL_ASSIGN_OR_RETURN(Value mapped, ApplyFilter(args.positional[0].Str(), item, rest));
        out.push_back(mapped);
      }
    }
    return Value::MakeList(std::move(out));
  }
  if (name == "select") return SelectOrReject(value, args, false, true);
  if (name == "reject") return SelectOrReject(value, args, false, false);
  if (name == "selectattr") return SelectOrReject(value, args, true, true);
  if (name == "rejectattr") return SelectOrReject(value, args, true, false);
  return Bad(absl::StrCat("unknown filter '", name, "'"));
}

absl::StatusOr<bool> ApplyTest(const std::string& name, const Value& v, Args& args) {
  using K = Value::Kind;
  const auto other = [&]() -> absl::StatusOr<Value> {
    if (args.positional.empty()) return Bad(absl::StrCat("test '", name, "' needs an argument"));
    return args.positional[0];
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind() == K::kInt;
  if (name == "float") return v.kind() == K::kFloat;
  if (name == "boolean") return v.kind() == K::kBool;
  if (name == "true") return v.kind() == K::kBool && v.as_bool();
  if (name == "false") return v.kind() == K::kBool && !v.as_bool();
  if (name == "mapping") return v.is_dict() && !v.is_namespace();
  if (name == "iterable")
    return v.is_list() || v.is_string() || (v.is_dict() && !v.is_namespace()) || v.is_undefined();
  if (name == "sequence")
    return v.is_list() || v.is_string() || (v.is_dict() && !v.is_namespace()) || v.is_undefined();
  if (name == "callable") return v.is_function();
  if (name == "lower") return v.is_string() && MapCase(v.as_string(), false) == v.as_string();
  if (name == "upper") return v.is_string() && MapCase(v.as_string(), true) == v.as_string();
  if (name == "even" || name == "odd") {
    if (!v.is_number()) return Bad(absl::StrCat("test '", name, "' needs a number"));
    return (v.as_int() % 2 == 0) == (name == "even");
  }
  if (name == "divisibleby") {
    ABSL_ASSIGN_OR_RETURN(Value d, other());
    if (d.as_int() == 0) return Bad("divisibleby 0");
    return v.as_int() % d.as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==" || name == "sameas") {
    ABSL_ASSIGN_OR_RETURN(Value o, other());
    return v.Equals(o) && (name != "sameas" || v.kind() == o.kind());
  }
  if (name == "ne" || name == "!=") {
    ABSL_ASSIGN_OR_RETURN(Value o, other());
    return !v.Equals(o);
  }
  if (name == "in") {
    ABSL_ASSIGN_OR_RETURN(Value o, other());
    if (o.is_string())
      return v.is_string() && o.as_string().find(v.as_string()) != std::string::npos;
    if (o.is_dict()) return v.is_string() && o.dict().Find(v.as_string()) != nullptr;
    ABSL_ASSIGN_OR_RETURN(List items, Iterate(o));
    for (const Value& item : items) {
      if (item.Equals(v)) return true;
    }
    return false;
  }
  return Bad(absl::StrCat("unknown test '", name, "'"));
}

Value MakeGlobalFunction(const std::string& name) {
  if (name == "namespace" || name == "dict") {
    const bool is_namespace = name == "namespace";
    return Value::MakeFunction([is_namespace](Args& args) -> absl::StatusOr<Value> {
      Value result = Value::MakeDict(is_namespace);
      for (const Value& p : args.positional) {
        if (!p.is_dict()) return Bad("namespace()/dict(): positional argument must be a mapping");
        for (const auto& [k, v] : p.dict().items) result.dict().Set(k, v);
      }
      for (auto& [k, v] : args.keyword) result.dict().Set(k, v);
      return result;
    });
  }
  if (name == "range") {
    return Value::MakeFunction([](Args& args) -> absl::StatusOr<Value> {
      int64_t start = 0, stop = 0, step = 1;
      const auto& p = args.positional;
      if (p.size() == 1) {
        stop = p[0].as_int();
      } else if (p.size() == 2 || p.size() == 3) {
        start = p[0].as_int();
        stop = p[1].as_int();
        if (p.size() == 3) step = p[2].as_int();
      } else {
        return Bad("range() takes 1 to 3 arguments");
      }
      if (step == 0) return Bad("range() step must not be zero");
      const __int128 span = step > 0 ? __int128{stop} - start : __int128{start} - stop;
      const __int128 stride = step > 0 ? __int128{step} : -__int128{step};
      const __int128 count = span <= 0 ? 0 : (span + stride - 1) / stride;
      if (count > kMaxRangeItems)
        return Bad(absl::StrCat("range() is too long (limit ", kMaxRangeItems, " items)"));
      List out;
      out.reserve(static_cast<size_t>(count));
      for (int64_t k = 0; k < static_cast<int64_t>(count); ++k)
        out.push_back(Value::Int(start + k * step));
      return Value::MakeList(std::move(out));
    });
  }
  if (name == "raise_exception") {
    return Value::MakeFunction([](Args& args) -> absl::StatusOr<Value> {
      const std::string message =
          args.positional.empty() ? std::string() : args.positional[0].Str();
      return absl::InvalidArgumentError(
          absl::StrCat("chat template raised an exception: ", message));
    });
  }
  if (name == "strftime_now") {
    return Value::MakeFunction([](Args& args) -> absl::StatusOr<Value> {
      if (args.positional.empty() || !args.positional[0].is_string())
        return Bad("strftime_now(format)");
      const std::time_t now = std::time(nullptr);
      std::tm local{};
      localtime_r(&now, &local);
      char buffer[256];
      const size_t n =
          std::strftime(buffer, sizeof(buffer), args.positional[0].as_string().c_str(), &local);
      return Value::String(std::string(buffer, n));
    });
  }
  return Value();
}

}  // namespace twinspan::jinja
