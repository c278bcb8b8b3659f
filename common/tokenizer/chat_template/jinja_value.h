// Values of the Jinja subset: Python's None, bool, int, float, str, list and dict
// (insertion-ordered, string keys), Jinja's Undefined, namespaces and callables, with Python's
// printing rules.
#ifndef TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_VALUE_H_
#define TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_VALUE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace twinspan::jinja {

class Value;
using List = std::vector<Value>;
// The interpreter refuses values whose memory (bytes()) exceeds this, and printing stops past it.
inline constexpr int64_t kMaxValueBytes = int64_t{64} << 20;
// The interpreter refuses lists and dicts nested deeper than this: printing and freeing recurse.
inline constexpr int kMaxValueDepth = 128;
// range() longer than this is refused, as in Jinja2's sandbox (MAX_RANGE).
inline constexpr int64_t kMaxRangeItems = 100000;
struct Dict;
// Positional and keyword arguments of a call.
struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};
using Function = std::function<absl::StatusOr<Value>(Args&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };

  Value() = default;  // Undefined
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double f);
  static Value String(std::string s);
  static Value MakeList(List items);
  // A tuple: a list that prints as Python's (a, b) (items() pairs, tuple literals).
  static Value MakeTuple(List items);
  static Value MakeDict(bool is_namespace = false);
  static Value MakeFunction(Function fn);
  // Converts JSON (ordered) into values; integers stay int, other numbers float.
  // Errors: InvalidArgument for JSON nested deeper than kMaxValueDepth.
  static absl::StatusOr<Value> FromJson(const nlohmann::ordered_json& json);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const {
    return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool;
  }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kList && tuple_; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_function() const { return kind_ == Kind::kFunction; }
  bool is_namespace() const;
  // Approximate memory in bytes, counting a shared list or dict once per reference (what
  // printing or copying it costs); saturates far above kMaxValueBytes.
  int64_t bytes() const;
  // Nesting of lists and dicts: 0 for scalars.
  int depth() const;
  // Whether this value is or holds a namespace (namespaces are the only mutable values).
  bool holds_namespace() const;

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  double as_float() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(as_int()); }
  const std::string& as_string() const { return s_; }
  List& list() const { return *list_; }
  Dict& dict() const { return *dict_; }
  const Function& function() const { return *fn_; }

  // Python truthiness (Undefined is false).
  bool Truthy() const;
  // Python ==, with Jinja's Undefined equal only to Undefined.
  bool Equals(const Value& other) const;
  // str(value) as Jinja prints it ({{ }}): None -> "None", True -> "True", Undefined -> "".
  std::string Str() const;
  // repr(value) as Python writes list and dict members.
  std::string Repr() const;
  // Python type name, for error messages.
  std::string TypeName() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  bool tuple_ = false;
  bool holds_namespace_ = false;  // lists only; dicts keep theirs in Dict
  int depth_ = 0;                 // lists only
  int64_t bytes_ = 0;             // scalars, strings and lists
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Function> fn_;
};

// An insertion-ordered dict with string keys (JSON objects, dict literals, namespaces).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;
  // Value::bytes(), depth() and holds_namespace() of the dict, kept up to date by Set.
  int64_t bytes = 0;
  int depth = 1;
  bool holds_namespace = false;
  const Value* Find(const std::string& key) const;
  void Set(const std::string& key, Value value);
};

// Python's repr of a float (shortest round-trip digits, "1.0", "1e-05", "inf", "nan").
std::string PythonFloatRepr(double f);
// Python's repr of a str (quotes and escapes as Python chooses).
std::string PythonStringRepr(const std::string& s);

// json.dumps(value, ensure_ascii=False, indent=indent, separators=..., sort_keys=...) as Python
// writes it. Errors: InvalidArgument for values JSON cannot hold (Undefined, functions).
struct JsonFormat {
  std::optional<int64_t> indent;
  std::optional<std::string> indent_string;  // indent given as a string
  std::optional<std::pair<std::string, std::string>> separators;
  bool sort_keys = false;
  bool ensure_ascii = false;
};
absl::StatusOr<std::string> PythonJsonDumps(const Value& value, const JsonFormat& format);

}  // namespace twinspan::jinja

#endif  // TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_VALUE_H_
