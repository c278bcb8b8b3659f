#include "common/tokenizer/chat_template/jinja_parser.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/tokenizer/chat_template/jinja_lexer.h"

namespace twinspan::jinja {
namespace {

using Kind = Token::Kind;

// Deeper recursion is refused (each bracket level costs about three); the stack is finite.
constexpr int kMaxParseNesting = 256;

ExprPtr MakeExpr(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  absl::StatusOr<Body> ParseTemplate() {
    std::string end;
    ABSL_ASSIGN_OR_RETURN(Body body, ParseBody({}, &end));
    return body;
  }

 private:
  const Token& Peek(size_t k = 0) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  bool IsOp(std::string_view op, size_t k = 0) const {
    return Peek(k).kind == Kind::kOp && Peek(k).text == op;
  }
  bool IsName(std::string_view name, size_t k = 0) const {
    return Peek(k).kind == Kind::kName && Peek(k).text == name;
  }
  absl::Status Fail(const std::string& what) const {
    std::string near = Peek().text.empty() ? "end of tag" : Peek().text;
    return absl::InvalidArgumentError(
        absl::StrCat("chat template line ", Peek().line, ": ", what, " (near \"", near, "\")"));
  }
  absl::Status ExpectOp(const std::string& op) {
    if (!IsOp(op)) return Fail(absl::StrCat("expected '", op, "'"));
    ++i_;
    return absl::OkStatus();
  }
  absl::Status ExpectKind(Kind kind, const std::string& what) {
    if (Peek().kind != kind) return Fail(absl::StrCat("expected ", what));
    ++i_;
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> ExpectName() {
    if (Peek().kind != Kind::kName) return Fail("expected a name");
    return t_[i_++].text;
  }

  // Parses nodes until a block tag whose keyword is in `ends`; leaves i_ after that keyword.
  absl::StatusOr<Body> ParseBody(const std::set<std::string>& ends, std::string* found) {
    const Nesting nesting(&depth_);
    ABSL_RETURN_IF_ERROR(CheckNesting());
    Body body;
    while (true) {
      const Token& tok = Peek();
      if (tok.kind == Kind::kEof) {
        if (!ends.empty()) return Fail(absl::StrCat("missing {% ", *ends.rbegin(), " %}"));
        return body;
      }
      if (tok.kind == Kind::kText) {
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kText;
        node->text = tok.text;
        node->line = tok.line;
        body.push_back(std::move(node));
        ++i_;
        continue;
      }
      if (tok.kind == Kind::kVarBegin) {
        ++i_;
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kOutput;
        node->line = tok.line;
        ABSL_ASSIGN_OR_RETURN(node->expr, ParseExpression(true));
        ABSL_RETURN_IF_ERROR(ExpectKind(Kind::kVarEnd, "'}}'"));
        body.push_back(std::move(node));
        continue;
      }
      if (tok.kind != Kind::kBlockBegin) return Fail("unexpected token");
      ++i_;
      if (Peek().kind != Kind::kName) return Fail("expected a statement keyword");
      const std::string keyword = Peek().text;
      if (ends.count(keyword)) {
        ++i_;
        *found = keyword;
        return body;
      }
      ABSL_ASSIGN_OR_RETURN(NodePtr node, ParseStatement());
      body.push_back(std::move(node));
    }
  }

  absl::StatusOr<NodePtr> ParseStatement() {
    const Token& tok = Peek();
    const std::string keyword = tok.text;
    ++i_;
    auto node = std::make_unique<Node>();
    node->line = tok.line;
    std::string end;
    if (keyword == "if") {
      node->kind = Node::Kind::kIf;
      ABSL_ASSIGN_OR_RETURN(ExprPtr cond, ParseExpression(true));
      ABSL_RETURN_IF_ERROR(ExpectKind(Kind::kBlockEnd, "'%}'"));
      while (true) {
        ABSL_ASSIGN_OR_RETURN(Body body, ParseBody({"elif", "else", "endif"}, &end));
        node->branches.emplace_back(std::move(cond), std::move(body));
        if (end == "elif") {
          ABSL_ASSIGN_OR_RETURN(cond, ParseExpression(true));
          ABSL_RETURN_IF_ERROR(ExpectKind(Kind::kBlockEnd, "'%}'"));
          continue;
        }
        if (end == "else") {
          ABSL_RETURN_IF_ERROR(ExpectKind(Kind::kBlockEnd, "'%}'"));
          ABSL_ASSIGN_OR_RETURN(node->else_body, ParseBody({"endif"}, &end));
        }
        break;
      }
    } else if (keyword == "for") {
      node->kind = Node::Kind::kFor;
      ABSL_ASSIGN_OR_RETURN(std::string target, ExpectName());
      node->targets.push_back(target);
      while (IsOp(",")) {
        ++i_;
        ABSL_ASSIGN_OR_RETURN(target, ExpectName());
        node->targets.push_back(target);
      }
      if (!IsName("in")) return Fail("expected 'in'");
      ++i_;
      ABSL_ASSIGN_OR_RETURN(node->expr, ParseExpression(false));
      if (IsName("if")) {
        ++i_;
        ABSL_ASSIGN_OR_RETURN(node->filter, ParseExpression(false));
      }
      if (IsName("recursive")) return Fail("recursive loops are not supported");
      ABSL_RETURN_IF_ERROR(ExpectKind(Kind::kBlockEnd, "'%}'"));
      ABSL_ASSIGN_OR_RETURN(node->body, ParseBody({"else", "endfor"}, &end));
      if (end == "else") {
        ABSL_RETURN_IF_ERROR(ExpectKind(Kind::kBlockEnd, "'%}'"));
        ABSL_ASSIGN_OR_RETURN(node->else_body, ParseBody({"endfor"}, &end));
      }
    } else if (keyword == "set") {
      ABSL_ASSIGN_OR_RETURN(std::string target, ExpectName());
      node->targets.push_back(target);
      if (IsOp(".")) {
        ++i_;
        ABSL_ASSIGN_OR_RETURN(node->attr, ExpectName());
      }
      if (Peek().kind == Kind::kBlockEnd && node->attr.empty()) {
        ++i_;
        node->kind = Node::Kind::kSetBlock;
        ABSL_ASSIGN_OR_RETURN(node->body, ParseBody({"endset"}, &end));
      } else {
        node->kind = Node::Kind::kSet;
        if (IsOp(",")) return Fail("tuple assignment in set is not supported");
        ABSL_RETURN_IF_ERROR(ExpectOp("="));
        ABSL_ASSIGN_OR_RETURN(node->expr, ParseTupleOrExpression());
      }
    } else if (keyword == "macro") {
      node->kind = Node::Kind::kMacro;
      ABSL_ASSIGN_OR_RETURN(node->text, ExpectName());
      ABSL_RETURN_IF_ERROR(ExpectOp("("));
      while (!IsOp(")")) {
        ABSL_ASSIGN_OR_RETURN(std::string param, ExpectName());
        ExprPtr fallback;
        if (IsOp("=")) {
          ++i_;
          ABSL_ASSIGN_OR_RETURN(fallback, ParseExpression(true));
        }
        node->params.emplace_back(param, std::move(fallback));
        if (!IsOp(",")) break;
        ++i_;
      }
      ABSL_RETURN_IF_ERROR(ExpectOp(")"));
      ABSL_RETURN_IF_ERROR(ExpectKind(Kind::kBlockEnd, "'%}'"));
      ABSL_ASSIGN_OR_RETURN(node->body, ParseBody({"endmacro"}, &end));
    } else if (keyword == "break" || keyword == "continue") {
      node->kind = keyword == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
    } else if (keyword == "generation") {
      node->kind = Node::Kind::kBlock;
      ABSL_RETURN_IF_ERROR(ExpectKind(Kind::kBlockEnd, "'%}'"));
      ABSL_ASSIGN_OR_RETURN(node->body, ParseBody({"endgeneration"}, &end));
    } else {
      --i_;
      return Fail(absl::StrCat("the {% ", keyword, " %} tag is not supported here"));
    }
    if (node->kind != Node::Kind::kIf && node->kind != Node::Kind::kFor &&
        node->kind != Node::Kind::kSetBlock && node->kind != Node::Kind::kMacro &&
        node->kind != Node::Kind::kBlock) {
      ABSL_RETURN_IF_ERROR(ExpectKind(Kind::kBlockEnd, "'%}'"));
    } else {
      ABSL_RETURN_IF_ERROR(ExpectKind(Kind::kBlockEnd, "'%}' after the end tag"));
    }
    return node;
  }

  // `a, b` without parentheses makes a tuple (as in {% set x = 1, 2 %}).
  absl::StatusOr<ExprPtr> ParseTupleOrExpression() {
    const int line = Peek().line;
    ABSL_ASSIGN_OR_RETURN(ExprPtr first, ParseExpression(true));
    if (!IsOp(",")) return first;
    ExprPtr tuple = MakeExpr(Expr::Kind::kTuple, line);
    tuple->args.push_back(std::move(first));
    while (IsOp(",")) {
      ++i_;
      if (Peek().kind == Kind::kBlockEnd) break;
      ABSL_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(true));
      tuple->args.push_back(std::move(item));
    }
    return tuple;
  }

  absl::StatusOr<ExprPtr> ParseExpression(bool with_condition) {
    const Nesting nesting(&depth_);
    ABSL_RETURN_IF_ERROR(CheckNesting());
    if (!with_condition) return ParseOr();
    const int line = Peek().line;
    ABSL_ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
    while (IsName("if")) {
      ++i_;
      ExprPtr cond_expr = MakeExpr(Expr::Kind::kCond, line);
      ABSL_ASSIGN_OR_RETURN(ExprPtr cond, ParseOr());
      ExprPtr otherwise;
      if (IsName("else")) {
        ++i_;
        ABSL_ASSIGN_OR_RETURN(otherwise, ParseExpression(true));
      }
      cond_expr->args.push_back(std::move(cond));
      cond_expr->args.push_back(std::move(expr));
      cond_expr->args.push_back(std::move(otherwise));
      expr = std::move(cond_expr);
    }
    return expr;
  }

  absl::StatusOr<ExprPtr> Binary(std::string op, ExprPtr left, ExprPtr right) {
    ExprPtr e = MakeExpr(Expr::Kind::kBinary, left->line);
    e->name = std::move(op);
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return e;
  }

  absl::StatusOr<ExprPtr> ParseOr() {
    ABSL_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
    while (IsName("or")) {
      ++i_;
      ABSL_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
      ABSL_ASSIGN_OR_RETURN(left, Binary("or", std::move(left), std::move(right)));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParseAnd() {
    ABSL_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
    while (IsName("and")) {
      ++i_;
      ABSL_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
      ABSL_ASSIGN_OR_RETURN(left, Binary("and", std::move(left), std::move(right)));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParseNot() {
    const Nesting nesting(&depth_);
    ABSL_RETURN_IF_ERROR(CheckNesting());
    if (IsName("not")) {
      const int line = Peek().line;
      ++i_;
      ExprPtr e = MakeExpr(Expr::Kind::kUnary, line);
      e->name = "not";
      ABSL_ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
      e->args.push_back(std::move(operand));
      return e;
    }
    return ParseCompare();
  }

  absl::StatusOr<ExprPtr> ParseCompare() {
    ABSL_ASSIGN_OR_RETURN(ExprPtr left, ParseMath1());
    while (true) {
      std::string op;
      if (Peek().kind == Kind::kOp &&
          (Peek().text == "==" || Peek().text == "!=" || Peek().text == "<" || Peek().text == ">" ||
           Peek().text == "<=" || Peek().text == ">=")) {
        op = Peek().text;
        ++i_;
      } else if (IsName("in")) {
        op = "in";
        ++i_;
      } else if (IsName("not") && IsName("in", 1)) {
        op = "not in";
        i_ += 2;
      } else {
        return left;
      }
      ABSL_ASSIGN_OR_RETURN(ExprPtr right, ParseMath1());
      ABSL_ASSIGN_OR_RETURN(left, Binary(op, std::move(left), std::move(right)));
    }
  }

  absl::StatusOr<ExprPtr> ParseMath1() {
    ABSL_ASSIGN_OR_RETURN(ExprPtr left, ParseConcat());
    while (IsOp("+") || IsOp("-")) {
      const std::string op = t_[i_++].text;
      ABSL_ASSIGN_OR_RETURN(ExprPtr right, ParseConcat());
      ABSL_ASSIGN_OR_RETURN(left, Binary(op, std::move(left), std::move(right)));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParseConcat() {
    ABSL_ASSIGN_OR_RETURN(ExprPtr left, ParseMath2());
    while (IsOp("~")) {
      ++i_;
      ABSL_ASSIGN_OR_RETURN(ExprPtr right, ParseMath2());
      ABSL_ASSIGN_OR_RETURN(left, Binary("~", std::move(left), std::move(right)));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParseMath2() {
    ABSL_ASSIGN_OR_RETURN(ExprPtr left, ParsePow());
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const std::string op = t_[i_++].text;
      ABSL_ASSIGN_OR_RETURN(ExprPtr right, ParsePow());
      ABSL_ASSIGN_OR_RETURN(left, Binary(op, std::move(left), std::move(right)));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParsePow() {
    ABSL_ASSIGN_OR_RETURN(ExprPtr left, ParseUnary(true));
    while (IsOp("**")) {
      ++i_;
      ABSL_ASSIGN_OR_RETURN(ExprPtr right, ParseUnary(true));
      ABSL_ASSIGN_OR_RETURN(left, Binary("**", std::move(left), std::move(right)));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParseUnary(bool with_filter) {
    const Nesting nesting(&depth_);
    ABSL_RETURN_IF_ERROR(CheckNesting());
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      node = MakeExpr(Expr::Kind::kUnary, Peek().line);
      node->name = t_[i_++].text;
      ABSL_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
      node->args.push_back(std::move(operand));
    } else {
      ABSL_ASSIGN_OR_RETURN(node, ParsePrimary());
    }
    ABSL_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
    if (with_filter) return ParseFilterExpr(std::move(node));
    return node;
  }

  absl::StatusOr<ExprPtr> ParsePrimary() {
    const Token& tok = Peek();
    ExprPtr e = MakeExpr(Expr::Kind::kLiteral, tok.line);
    switch (tok.kind) {
      case Kind::kName:
        ++i_;
        if (tok.text == "true" || tok.text == "True") {
          e->value = Value::Bool(true);
        } else if (tok.text == "false" || tok.text == "False") {
          e->value = Value::Bool(false);
        } else if (tok.text == "none" || tok.text == "None") {
          e->value = Value::None();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = tok.text;
        }
        return e;
      case Kind::kString: {
        std::string s;
        while (Peek().kind == Kind::kString) s += t_[i_++].text;
        e->value = Value::String(std::move(s));
        return e;
      }
      case Kind::kInt:
        ++i_;
        e->value = Value::Int(tok.int_value);
        return e;
      case Kind::kFloat:
        ++i_;
        e->value = Value::Float(tok.float_value);
        return e;
      case Kind::kOp:
        if (tok.text == "(") {
          ++i_;
          e->kind = Expr::Kind::kTuple;
          bool trailing_comma = false;
          while (!IsOp(")")) {
            ABSL_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(true));
            e->args.push_back(std::move(item));
            trailing_comma = false;
            if (!IsOp(",")) break;
            ++i_;
            trailing_comma = true;
          }
          ABSL_RETURN_IF_ERROR(ExpectOp(")"));
          if (e->args.size() == 1 && !trailing_comma) return std::move(e->args[0]);
          return e;
        }
        if (tok.text == "[") {
          ++i_;
          e->kind = Expr::Kind::kList;
          while (!IsOp("]")) {
            ABSL_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(true));
            e->args.push_back(std::move(item));
            if (!IsOp(",")) break;
            ++i_;
          }
          ABSL_RETURN_IF_ERROR(ExpectOp("]"));
          return e;
        }
        if (tok.text == "{") {
          ++i_;
          e->kind = Expr::Kind::kDict;
          while (!IsOp("}")) {
            ABSL_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression(true));
            ABSL_RETURN_IF_ERROR(ExpectOp(":"));
            ABSL_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
            e->args.push_back(std::move(key));
            e->args.push_back(std::move(value));
            if (!IsOp(",")) break;
            ++i_;
          }
          ABSL_RETURN_IF_ERROR(ExpectOp("}"));
          return e;
        }
        break;
      default:
        break;
    }
    return Fail("expected an expression");
  }

  absl::Status ParseCallArgs(Expr* call) {
    ABSL_RETURN_IF_ERROR(ExpectOp("("));
    while (!IsOp(")")) {
      if (Peek().kind == Kind::kName && IsOp("=", 1)) {
        std::string key = t_[i_].text;
        i_ += 2;
        ABSL_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
        call->kwargs.emplace_back(std::move(key), std::move(value));
      } else {
        if (!call->kwargs.empty()) return Fail("positional argument after keyword argument");
        ABSL_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
        call->args.push_back(std::move(value));
      }
      if (!IsOp(",")) break;
      ++i_;
    }
    return ExpectOp(")");
  }

  absl::StatusOr<ExprPtr> ParsePostfix(ExprPtr node) {
    while (true) {
      const int line = Peek().line;
      if (IsOp(".")) {
        ++i_;
        if (Peek().kind == Kind::kInt) {
          ExprPtr item = MakeExpr(Expr::Kind::kItem, line);
          ExprPtr index = MakeExpr(Expr::Kind::kLiteral, line);
          index->value = Value::Int(t_[i_++].int_value);
          item->args.push_back(std::move(node));
          item->args.push_back(std::move(index));
          node = std::move(item);
          continue;
        }
        ABSL_ASSIGN_OR_RETURN(std::string name, ExpectName());
        ExprPtr attr = MakeExpr(Expr::Kind::kAttr, line);
        attr->name = std::move(name);
        attr->args.push_back(std::move(node));
        node = std::move(attr);
      } else if (IsOp("[")) {
        ++i_;
        ExprPtr parts[3];
        bool is_slice = false;
        if (!IsOp(":")) {
          ABSL_ASSIGN_OR_RETURN(parts[0], ParseExpression(true));
        }
        if (IsOp(":")) {
          is_slice = true;
          ++i_;
          if (!IsOp(":") && !IsOp("]")) {
            ABSL_ASSIGN_OR_RETURN(parts[1], ParseExpression(true));
          }
          if (IsOp(":")) {
            ++i_;
            if (!IsOp("]")) {
              ABSL_ASSIGN_OR_RETURN(parts[2], ParseExpression(true));
            }
          }
        }
        ABSL_RETURN_IF_ERROR(ExpectOp("]"));
        ExprPtr sub = MakeExpr(is_slice ? Expr::Kind::kSlice : Expr::Kind::kItem, line);
        sub->args.push_back(std::move(node));
        sub->args.push_back(std::move(parts[0]));
        if (is_slice) {
          sub->args.push_back(std::move(parts[1]));
          sub->args.push_back(std::move(parts[2]));
        }
        node = std::move(sub);
      } else if (IsOp("(")) {
        ExprPtr call = MakeExpr(Expr::Kind::kCall, line);
        call->args.push_back(std::move(node));
        ABSL_RETURN_IF_ERROR(ParseCallArgs(call.get()));
        node = std::move(call);
      } else {
        return node;
      }
    }
  }

  absl::StatusOr<ExprPtr> ParseFilterExpr(ExprPtr node) {
    while (true) {
      const int line = Peek().line;
      if (IsOp("|")) {
        ++i_;
        ABSL_ASSIGN_OR_RETURN(std::string name, ExpectName());
        while (IsOp(".")) {
          ++i_;
          ABSL_ASSIGN_OR_RETURN(std::string part, ExpectName());
          name += "." + part;
        }
        ExprPtr filter = MakeExpr(Expr::Kind::kFilter, line);
        filter->name = std::move(name);
        filter->args.push_back(std::move(node));
        if (IsOp("(")) ABSL_RETURN_IF_ERROR(ParseCallArgs(filter.get()));
        node = std::move(filter);
      } else if (IsName("is")) {
        ++i_;
        ExprPtr test = MakeExpr(Expr::Kind::kTest, line);
        if (IsName("not")) {
          ++i_;
          test->negated = true;
        }
        ABSL_ASSIGN_OR_RETURN(test->name, ExpectName());
        test->args.push_back(std::move(node));
        if (IsOp("(")) {
          ABSL_RETURN_IF_ERROR(ParseCallArgs(test.get()));
        } else if ((Peek().kind == Kind::kName || Peek().kind == Kind::kString ||
                    Peek().kind == Kind::kInt || Peek().kind == Kind::kFloat || IsOp("[") ||
                    IsOp("{")) &&
                   !IsName("else") && !IsName("or") && !IsName("and")) {
          ABSL_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
          ABSL_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
          test->args.push_back(std::move(arg));
        }
        node = std::move(test);
      } else if (IsOp("(")) {
        ExprPtr call = MakeExpr(Expr::Kind::kCall, line);
        call->args.push_back(std::move(node));
        ABSL_RETURN_IF_ERROR(ParseCallArgs(call.get()));
        node = std::move(call);
      } else {
        return node;
      }
    }
  }

  // Counts the parser's recursion (nested brackets, unary operators, blocks) for CheckNesting().
  class Nesting {
   public:
    explicit Nesting(int* depth) : depth_(depth) { ++*depth_; }
    ~Nesting() { --*depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    int* depth_;
  };
  absl::Status CheckNesting() const {
    if (depth_ <= kMaxParseNesting) return absl::OkStatus();
    return Fail(absl::StrCat("nested deeper than ", kMaxParseNesting, " levels"));
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

absl::StatusOr<Body> Parse(std::string_view source) {
  ABSL_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(source));
  Parser parser(std::move(tokens));
  return parser.ParseTemplate();
}

}  // namespace twinspan::jinja
