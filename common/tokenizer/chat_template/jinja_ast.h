// The syntax tree of the Jinja subset: expressions and statements.
#ifndef TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_AST_H_
#define TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_AST_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/tokenizer/chat_template/jinja_value.h"

namespace twinspan::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kAttr,     // args[0].name
    kItem,     // args[0][args[1]]
    kSlice,    // args[0][args[1]:args[2]:args[3]] (null parts allowed)
    kCall,     // args[0](args[1..], kwargs)
    kFilter,   // args[0] | name(args[1..], kwargs)
    kTest,     // args[0] is [not] name(args[1..])
    kUnary,    // name in {"not", "-", "+"}
    kBinary,   // args[0] name args[1]; name is an operator, "and", "or", "in", "not in"
    kCond,     // args[1] if args[0] else args[2] (args[2] may be null)
    kList,     // [args...]
    kTuple,    // (args...)
    kDict,     // {kwargs...} with keys as expressions in args (key, value pairs)
  };
  Kind kind = Kind::kLiteral;
  int line = 0;
  Value value;
  std::string name;
  bool negated = false;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;

  Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  // Frees the subtree without recursion: operator chains (a + b + c ...) can be very deep.
  ~Expr() {
    std::vector<ExprPtr> pending;
    const auto adopt = [&pending](Expr& e) {
      for (ExprPtr& a : e.args) pending.push_back(std::move(a));
      for (auto& kw : e.kwargs) pending.push_back(std::move(kw.second));
    };
    adopt(*this);
    while (!pending.empty()) {
      ExprPtr e = std::move(pending.back());
      pending.pop_back();
      if (e) adopt(*e);
    }
  }
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // branches, else_body
    kFor,       // targets in expr [if filter]: body, else_body
    kSet,       // targets[0] (or targets[0].attr) = expr
    kSetBlock,  // {% set targets[0] %} body {% endset %}
    kMacro,     // name(params) body
    kBreak,
    kContinue,
    kBlock,  // body rendered in place ({% generation %})
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<std::string> targets;
  std::string attr;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // default may be null
};

}  // namespace twinspan::jinja

#endif  // TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_AST_H_
