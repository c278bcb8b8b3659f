#include "common/tokenizer/chat_template/jinja_template.h"

#include <cmath>
#include <unordered_map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/tokenizer/chat_template/jinja_builtins.h"
#include "common/tokenizer/chat_template/jinja_parser.h"

namespace twinspan::jinja {
namespace {

using Scope = std::unordered_map<std::string, Value>;

// Macro calls nested deeper than this are refused (a template calling itself forever).
constexpr int kMaxCallDepth = 64;
// Rendered output larger than this is refused (a loop that never ends).
constexpr size_t kMaxOutputBytes = 64u << 20;
// Blocks and expressions evaluated inside one another (macros included) deeper than this are
// refused: the interpreter recurses, and the stack is finite.
constexpr int kMaxNesting = 256;
// A value built by an operator, call or filter costs one step per this many bytes.
constexpr int64_t kBytesPerStep = 64;

class Interpreter {
 public:
  Interpreter(std::shared_ptr<Scope> root, int64_t max_steps)
      : max_steps_(max_steps), steps_left_(max_steps) {
    scopes_.push_back(std::move(root));
  }

  absl::Status Exec(const Body& body, std::string* out) {
    ABSL_RETURN_IF_ERROR(CheckNesting(body.empty() ? 0 : body.front()->line));
    ++nesting_;
    absl::Status status;
    for (const NodePtr& node : body) {
      status = ExecNode(*node, out);
      if (!status.ok() || flow_ != Flow::kNormal) break;
    }
    --nesting_;
    return status;
  }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  absl::Status Fail(int line, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat("chat template line ", line, ": ", what));
  }
  absl::Status AtLine(int line, const absl::Status& status) const {
    if (status.ok() || absl::StartsWith(status.message(), "chat template")) return status;
    return absl::Status(status.code(),
                        absl::StrCat("chat template line ", line, ": ", status.message()));
  }

  // Counts work against the render's budget: a template that loops forever fails, naming it.
  absl::Status Step(int line, int64_t units = 1) {
    steps_left_ -= units;
    if (steps_left_ >= 0) return absl::OkStatus();
    return Fail(line, absl::StrCat("rendering exceeded its limit of ", max_steps_,
                                   " steps (max_render_steps): a loop that never ends?"));
  }

  // Exec and Eval recurse into each other; one more level must fit under kMaxNesting.
  absl::Status CheckNesting(int line) const {
    if (nesting_ < kMaxNesting) return absl::OkStatus();
    return Fail(line,
                absl::StrCat("blocks and expressions nested deeper than ", kMaxNesting, " levels"));
  }

  // Every value an expression yields passes here: none may outgrow the memory or nesting bounds.
  absl::Status CheckValue(const Value& v, int line) const {
    if (v.bytes() > kMaxValueBytes) {
      return Fail(line, absl::StrCat("a value larger than the limit of ", kMaxValueBytes,
                                     " bytes (about ", v.bytes(), ")"));
    }
    if (v.depth() > kMaxValueDepth) {
      return Fail(line,
                  absl::StrCat("lists and dicts nested deeper than ", kMaxValueDepth, " levels"));
    }
    return absl::OkStatus();
  }

  Value Lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = (*it)->find(name);
      if (found != (*it)->end()) return found->second;
    }
    return MakeGlobalFunction(name);
  }

  absl::Status ExecNode(const Node& node, std::string* out) {
    ABSL_RETURN_IF_ERROR(Step(node.line));
    switch (node.kind) {
      case Node::Kind::kText:
        out->append(node.text);
        break;
      case Node::Kind::kOutput: {
        ABSL_ASSIGN_OR_RETURN(Value v, Eval(*node.expr));
        out->append(v.Str());
        break;
      }
      case Node::Kind::kIf: {
        for (const auto& [cond, body] : node.branches) {
          ABSL_ASSIGN_OR_RETURN(Value c, Eval(*cond));
          if (c.Truthy()) return Exec(body, out);
        }
        return Exec(node.else_body, out);
      }
      case Node::Kind::kFor:
        return ExecFor(node, out);
      case Node::Kind::kSet: {
        ABSL_ASSIGN_OR_RETURN(Value v, Eval(*node.expr));
        if (node.attr.empty()) {
          (*scopes_.back())[node.targets[0]] = std::move(v);
        } else {
          Value target = Lookup(node.targets[0]);
          if (!target.is_namespace()) {
            return Fail(node.line, absl::StrCat("cannot assign attribute on '", node.targets[0],
                                                "': it is not a namespace()"));
          }
          // Namespaces are the only mutable values: holding none keeps values acyclic.
          if (v.holds_namespace()) {
            return Fail(node.line, absl::StrCat("cannot store a namespace in '", node.targets[0],
                                                ".", node.attr, "'"));
          }
          target.dict().Set(node.attr, std::move(v));
        }
        break;
      }
      case Node::Kind::kSetBlock: {
        std::string captured;
        ABSL_RETURN_IF_ERROR(Exec(node.body, &captured));
        (*scopes_.back())[node.targets[0]] = Value::String(std::move(captured));
        break;
      }
      case Node::Kind::kMacro:
        (*scopes_.back())[node.text] = MakeMacro(node);
        break;
      case Node::Kind::kBreak:
      case Node::Kind::kContinue:
        if (loop_depth_ == 0) return Fail(node.line, "break/continue outside a loop");
        flow_ = node.kind == Node::Kind::kBreak ? Flow::kBreak : Flow::kContinue;
        break;
      case Node::Kind::kBlock:
        return Exec(node.body, out);
    }
    if (out->size() > kMaxOutputBytes) return Fail(node.line, "rendered output exceeds 64 MiB");
    return absl::OkStatus();
  }

  absl::Status ExecFor(const Node& node, std::string* out) {
    ABSL_ASSIGN_OR_RETURN(Value iterable, Eval(*node.expr));
    // Lists are immutable: loop over the shared items rather than a copy.
    List copied;
    if (!iterable.is_list()) {
      absl::StatusOr<List> listed = Iterate(iterable);
      if (!listed.ok()) return AtLine(node.line, listed.status());
      copied = *std::move(listed);
    }
    const List* items_ptr = iterable.is_list() ? &iterable.list() : &copied;
    scopes_.push_back(std::make_shared<Scope>());
    const auto pop = [this]() { scopes_.pop_back(); };
    const auto bind = [&](const Value& item) -> absl::Status {
      Scope& scope = *scopes_.back();
      if (node.targets.size() == 1) {
        scope[node.targets[0]] = item;
        return absl::OkStatus();
      }
      absl::StatusOr<List> parts = Iterate(item);
      if (!parts.ok() || parts->size() != node.targets.size()) {
        return Fail(node.line, absl::StrCat("cannot unpack ", item.Repr(), " into ",
                                            node.targets.size(), " names"));
      }
      for (size_t k = 0; k < node.targets.size(); ++k) scope[node.targets[k]] = (*parts)[k];
      return absl::OkStatus();
    };
    if (node.filter) {
      List kept;
      for (const Value& item : *items_ptr) {
        absl::Status status = bind(item);
        if (!status.ok()) {
          pop();
          return status;
        }
        absl::StatusOr<Value> keep = Eval(*node.filter);
        if (!keep.ok()) {
          pop();
          return keep.status();
        }
        if (keep->Truthy()) kept.push_back(item);
      }
      copied = std::move(kept);
      items_ptr = &copied;
    }
    const List& items = *items_ptr;
    ++loop_depth_;
    absl::Status status;
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n && status.ok(); ++i) {
      status = Step(node.line);
      if (!status.ok()) break;
      scopes_.back() = std::make_shared<Scope>();
      Value loop = Value::MakeDict();
      Dict& d = loop.dict();
      d.Set("index0", Value::Int(i));
      d.Set("index", Value::Int(i + 1));
      d.Set("revindex0", Value::Int(n - i - 1));
      d.Set("revindex", Value::Int(n - i));
      d.Set("first", Value::Bool(i == 0));
      d.Set("last", Value::Bool(i == n - 1));
      d.Set("length", Value::Int(n));
      d.Set("depth", Value::Int(1));
      d.Set("depth0", Value::Int(0));
      d.Set("previtem", i > 0 ? items[i - 1] : Value());
      d.Set("nextitem", i + 1 < n ? items[i + 1] : Value());
      d.Set("cycle", Value::MakeFunction([i](Args& args) -> absl::StatusOr<Value> {
              if (args.positional.empty())
                return absl::InvalidArgumentError("loop.cycle needs arguments");
              return args.positional[i % args.positional.size()];
            }));
      (*scopes_.back())["loop"] = loop;
      status = bind(items[i]);
      if (status.ok()) status = Exec(node.body, out);
      if (flow_ == Flow::kBreak) {
        flow_ = Flow::kNormal;
        break;
      }
      flow_ = Flow::kNormal;
    }
    --loop_depth_;
    pop();
    if (!status.ok()) return status;
    if (n == 0) return Exec(node.else_body, out);
    return absl::OkStatus();
  }

  Value MakeMacro(const Node& node) {
    const Node* macro = &node;
    return Value::MakeFunction([this, macro](Args& args) -> absl::StatusOr<Value> {
      if (call_depth_ >= kMaxCallDepth) return Fail(macro->line, "macro calls nested too deeply");
      if (args.positional.size() > macro->params.size()) {
        return Fail(macro->line, absl::StrCat("macro '", macro->text, "' takes at most ",
                                              macro->params.size(), " arguments"));
      }
      std::vector<std::shared_ptr<Scope>> saved = std::move(scopes_);
      scopes_ = {saved.front(), std::make_shared<Scope>()};
      const int saved_loops = loop_depth_;
      loop_depth_ = 0;
      ++call_depth_;
      absl::Status status;
      for (size_t k = 0; k < macro->params.size() && status.ok(); ++k) {
        const auto& [param, fallback] = macro->params[k];
        Value v;
        bool given = false;
        if (k < args.positional.size()) {
          v = args.positional[k];
          given = true;
        }
        for (auto& [key, kv] : args.keyword) {
          if (key == param) {
            v = kv;
            given = true;
          }
        }
        if (!given && fallback) {
          absl::StatusOr<Value> d = Eval(*fallback);
          if (!d.ok()) {
            status = d.status();
            break;
          }
          v = *d;
        }
        (*scopes_.back())[param] = v;
      }
      std::string rendered;
      if (status.ok()) status = Exec(macro->body, &rendered);
      flow_ = Flow::kNormal;
      --call_depth_;
      loop_depth_ = saved_loops;
      scopes_ = std::move(saved);
      if (!status.ok()) return status;
      return Value::String(std::move(rendered));
    });
  }

  absl::StatusOr<Args> EvalArgs(const Expr& e, size_t first) {
    Args args;
    for (size_t k = first; k < e.args.size(); ++k) {
      ABSL_ASSIGN_OR_RETURN(Value v, Eval(*e.args[k]));
      args.positional.push_back(std::move(v));
    }
    for (const auto& [key, expr] : e.kwargs) {
      ABSL_ASSIGN_OR_RETURN(Value v, Eval(*expr));
      args.keyword.emplace_back(key, std::move(v));
    }
    return args;
  }

  absl::StatusOr<Value> Eval(const Expr& e) {
    ABSL_RETURN_IF_ERROR(CheckNesting(e.line));
    ABSL_RETURN_IF_ERROR(Step(e.line));
    ++nesting_;
    absl::StatusOr<Value> v = EvalInner(e);
    --nesting_;
    if (!v.ok()) return AtLine(e.line, v.status());
    // Building costs its size; looking a list up does not, copying a string does.
    const bool built = e.kind != Expr::Kind::kName && e.kind != Expr::Kind::kAttr &&
                       e.kind != Expr::Kind::kItem && e.kind != Expr::Kind::kLiteral;
    if (built || v->is_string()) ABSL_RETURN_IF_ERROR(Step(e.line, v->bytes() / kBytesPerStep));
    ABSL_RETURN_IF_ERROR(CheckValue(*v, e.line));
    return v;
  }

  absl::StatusOr<Value> EvalInner(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.value;
      case Expr::Kind::kName:
        return Lookup(e.name);
      case Expr::Kind::kAttr: {
        ABSL_ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0]));
        if (obj.is_undefined())
          return Fail(e.line, absl::StrCat("cannot read '.", e.name, "' of an undefined value"));
        return GetAttribute(obj, e.name);
      }
      case Expr::Kind::kItem: {
        ABSL_ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0]));
        ABSL_ASSIGN_OR_RETURN(Value key, Eval(*e.args[1]));
        return GetItem(obj, key);
      }
      case Expr::Kind::kSlice: {
        ABSL_ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0]));
        Value parts[3];
        for (int k = 0; k < 3; ++k) {
          if (e.args[k + 1]) {
            ABSL_ASSIGN_OR_RETURN(parts[k], Eval(*e.args[k + 1]));
          }
        }
        return GetSlice(obj, parts[0], parts[1], parts[2]);
      }
      case Expr::Kind::kCall: {
        ABSL_ASSIGN_OR_RETURN(Value callee, Eval(*e.args[0]));
        if (!callee.is_function()) {
          const std::string& what = e.args[0]->name;
          return Fail(e.line,
                      absl::StrCat("'", what, "' is not callable (", callee.TypeName(), ")"));
        }
        ABSL_ASSIGN_OR_RETURN(Args args, EvalArgs(e, 1));
        return callee.function()(args);
      }
      case Expr::Kind::kFilter: {
        ABSL_ASSIGN_OR_RETURN(Value value, Eval(*e.args[0]));
        ABSL_ASSIGN_OR_RETURN(Args args, EvalArgs(e, 1));
        return ApplyFilter(e.name, value, args);
      }
      case Expr::Kind::kTest: {
        ABSL_ASSIGN_OR_RETURN(Value value, Eval(*e.args[0]));
        ABSL_ASSIGN_OR_RETURN(Args args, EvalArgs(e, 1));
        ABSL_ASSIGN_OR_RETURN(bool result, ApplyTest(e.name, value, args));
        return Value::Bool(result != e.negated);
      }
      case Expr::Kind::kUnary: {
        ABSL_ASSIGN_OR_RETURN(Value v, Eval(*e.args[0]));
        if (e.name == "not") return Value::Bool(!v.Truthy());
        if (!v.is_number())
          return Fail(e.line, absl::StrCat("bad operand type for unary ", e.name, ": '",
                                           v.TypeName(), "'"));
        if (e.name == "+") return v.kind() == Value::Kind::kFloat ? v : Value::Int(v.as_int());
        if (v.kind() == Value::Kind::kFloat) return Value::Float(-v.as_float());
        int64_t negated = 0;
        if (__builtin_sub_overflow(int64_t{0}, v.as_int(), &negated)) return Overflow(e.line);
        return Value::Int(negated);
      }
      case Expr::Kind::kBinary:
        return EvalBinary(e);
      case Expr::Kind::kCond: {
        ABSL_ASSIGN_OR_RETURN(Value c, Eval(*e.args[0]));
        if (c.Truthy()) return Eval(*e.args[1]);
        if (e.args[2]) return Eval(*e.args[2]);
        return Value();
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        List items;
        for (const ExprPtr& item : e.args) {
          ABSL_ASSIGN_OR_RETURN(Value v, Eval(*item));
          items.push_back(std::move(v));
        }
        return e.kind == Expr::Kind::kTuple ? Value::MakeTuple(std::move(items))
                                            : Value::MakeList(std::move(items));
      }
      case Expr::Kind::kDict: {
        Value d = Value::MakeDict();
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          ABSL_ASSIGN_OR_RETURN(Value key, Eval(*e.args[k]));
          ABSL_ASSIGN_OR_RETURN(Value v, Eval(*e.args[k + 1]));
          if (!key.is_string()) return Fail(e.line, "dict literal keys must be strings");
          d.dict().Set(key.as_string(), std::move(v));
        }
        return d;
      }
    }
    return Fail(e.line, "unknown expression");
  }

  absl::StatusOr<Value> EvalBinary(const Expr& e) {
    const std::string& op = e.name;
    ABSL_ASSIGN_OR_RETURN(Value a, Eval(*e.args[0]));
    if (op == "and") return a.Truthy() ? Eval(*e.args[1]) : a;
    if (op == "or") return a.Truthy() ? a : Eval(*e.args[1]);
    ABSL_ASSIGN_OR_RETURN(Value b, Eval(*e.args[1]));
    if (op == "==") return Value::Bool(a.Equals(b));
    if (op == "!=") return Value::Bool(!a.Equals(b));
    if (op == "~") {
      std::string joined = a.Str();
      if (static_cast<int64_t>(joined.size()) > kMaxValueBytes) return TooLarge(e.line, op);
      const std::string right = b.Str();
      if (static_cast<int64_t>(joined.size() + right.size()) > kMaxValueBytes)
        return TooLarge(e.line, op);
      return Value::String(joined + right);
    }
    if (op == "in" || op == "not in") {
      Args args;
      args.positional.push_back(b);
      if (b.is_none()) return Fail(e.line, "argument of type 'NoneType' is not iterable");
      ABSL_ASSIGN_OR_RETURN(bool found, ApplyTest("in", a, args));
      return Value::Bool(found == (op == "in"));
    }
    const auto type_error = [&]() {
      return Fail(e.line, absl::StrCat("unsupported operand types for ", op, ": '", a.TypeName(),
                                       "' and '", b.TypeName(), "'"));
    };
    if (a.is_undefined() || b.is_undefined()) {
      return Fail(e.line, absl::StrCat("undefined value used with operator ", op));
    }
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      int cmp = 0;
      if (a.is_number() && b.is_number()) {
        const double x = a.as_float(), y = b.as_float();
        cmp = x < y ? -1 : (x > y ? 1 : 0);
      } else if (a.is_string() && b.is_string()) {
        cmp = a.as_string().compare(b.as_string());
      } else {
        return type_error();
      }
      if (op == "<") return Value::Bool(cmp < 0);
      if (op == ">") return Value::Bool(cmp > 0);
      if (op == "<=") return Value::Bool(cmp <= 0);
      return Value::Bool(cmp >= 0);
    }
    if (op == "+") {
      if (a.bytes() + b.bytes() > kMaxValueBytes) return TooLarge(e.line, op);
      if (a.is_string() && b.is_string()) return Value::String(a.as_string() + b.as_string());
      if (a.is_list() && b.is_list()) {
        List items = a.list();
        items.insert(items.end(), b.list().begin(), b.list().end());
        return Value::MakeList(std::move(items));
      }
    }
    if (op == "*" &&
        ((a.is_string() || a.is_list()) && b.is_number() && b.kind() != Value::Kind::kFloat)) {
      const int64_t times = b.as_int();
      const int64_t unit = a.is_string() ? static_cast<int64_t>(a.as_string().size()) : a.bytes();
      if (times > 0 && unit > kMaxValueBytes / times) return TooLarge(e.line, op);
      if (a.is_string()) {
        std::string out;
        for (int64_t k = 0; unit > 0 && k < times; ++k) out += a.as_string();
        return Value::String(std::move(out));
      }
      List items;
      for (int64_t k = 0; k < times; ++k)
        items.insert(items.end(), a.list().begin(), a.list().end());
      return Value::MakeList(std::move(items));
    }
    if (!a.is_number() || !b.is_number()) return type_error();
    const bool floats = a.kind() == Value::Kind::kFloat || b.kind() == Value::Kind::kFloat;
    if (op == "/") {
      if (b.as_float() == 0) return Fail(e.line, "division by zero");
      return Value::Float(a.as_float() / b.as_float());
    }
    if (op == "**") {
      if (!floats && b.as_int() >= 0) {
        // Square and multiply: overflow is caught, however large the exponent.
        int64_t r = 1, base = a.as_int();
        for (int64_t k = b.as_int(); k > 0; k >>= 1) {
          if ((k & 1) != 0 && __builtin_mul_overflow(r, base, &r)) return Overflow(e.line);
          if (k > 1 && __builtin_mul_overflow(base, base, &base)) return Overflow(e.line);
        }
        return Value::Int(r);
      }
      return Value::Float(std::pow(a.as_float(), b.as_float()));
    }
    if (floats) {
      const double x = a.as_float(), y = b.as_float();
      if (op == "+") return Value::Float(x + y);
      if (op == "-") return Value::Float(x - y);
      if (op == "*") return Value::Float(x * y);
      if (y == 0) return Fail(e.line, "division by zero");
      if (op == "//") return Value::Float(std::floor(x / y));
      if (op == "%") return Value::Float(x - std::floor(x / y) * y);
    } else {
      const int64_t x = a.as_int(), y = b.as_int();
      int64_t r = 0;
      bool overflow = false;
      if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
      if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
      if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
      if (overflow) return Overflow(e.line);
      if (op == "+" || op == "-" || op == "*") return Value::Int(r);
      if (y == 0) return Fail(e.line, "division by zero");
      if (x == INT64_MIN && y == -1) {
        if (op == "%") return Value::Int(0);
        return Overflow(e.line);
      }
      int64_t q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
      if (op == "//") return Value::Int(q);
      if (op == "%") return Value::Int(x - q * y);
    }
    return type_error();
  }

  absl::Status Overflow(int line) const {
    return Fail(line, "integer overflow (the template's integers are 64-bit)");
  }
  absl::Status TooLarge(int line, const std::string& op) const {
    return Fail(line, absl::StrCat("the result of '", op, "' would be larger than the limit of ",
                                   kMaxValueBytes, " bytes"));
  }

  const int64_t max_steps_;
  int64_t steps_left_;
  int nesting_ = 0;
  std::vector<std::shared_ptr<Scope>> scopes_;
  Flow flow_ = Flow::kNormal;
  int loop_depth_ = 0;
  int call_depth_ = 0;
};

}  // namespace

absl::StatusOr<Template> Template::Parse(std::string_view source) {
  ABSL_ASSIGN_OR_RETURN(Body body, jinja::Parse(source));
  Template t;
  t.body_ = std::make_shared<const Body>(std::move(body));
  return t;
}

absl::StatusOr<std::string> Template::Render(
    const std::vector<std::pair<std::string, Value>>& variables, int64_t max_steps) const {
  auto root = std::make_shared<Scope>();
  for (const auto& [name, value] : variables) (*root)[name] = value;
  Interpreter interpreter(std::move(root), max_steps);
  std::string out;
  ABSL_RETURN_IF_ERROR(interpreter.Exec(*body_, &out));
  return out;
}

}  // namespace twinspan::jinja
