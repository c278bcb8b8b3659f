#include "services/structured/json_schema_regex.h"

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace twinspan::structured {
namespace {

using Json = nlohmann::ordered_json;

// Optional whitespace between JSON tokens (see the header).
constexpr char kWs[] = R"((?: |\n[ \t]{0,20})?)";
// One character of a JSON string: printable ASCII but '"' and '\', a UTF-8 sequence (its
// well-formedness is Utf8Prefix's job), or an escape.
constexpr char kStringChar[] =
    R"((?:[\x20\x21\x23-\x5b\x5d-\x7f]|[\xc0-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|)"
    R"([\xf0-\xf7][\x80-\xbf]{3}|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}))";
constexpr char kInteger[] = R"(-?(?:0|[1-9][0-9]{0,15}))";
constexpr char kNumber[] = R"(-?(?:0|[1-9][0-9]{0,15})(?:\.[0-9]{1,16})?(?:[eE][-+]?[0-9]{1,3})?)";
constexpr int kMaxDepth = 32;
constexpr int64_t kMaxRepeat = 65535;  // PCRE2's largest {m,n}

const std::set<std::string>& Annotations() {
  static const auto* kSet = new std::set<std::string>{"title",
                                                      "description",
                                                      "default",
                                                      "examples",
                                                      "$schema",
                                                      "$id",
                                                      "$comment",
                                                      "strict",
                                                      "$defs",
                                                      "definitions",
                                                      "additionalProperties",
                                                      "readOnly",
                                                      "writeOnly",
                                                      "deprecated"};
  return *kSet;
}

class Translator {
 public:
  explicit Translator(const Json& root) : root_(root) {}

  absl::StatusOr<std::string> Translate() {
    absl::StatusOr<std::string> body = Value(root_, "", 0);
    if (!body.ok()) return body.status();
    // Named groups for $ref targets and the generic value go in one DEFINE block up front.
    std::string defines;
    if (any_used_) {
      absl::StrAppend(&defines, "(?<any>", kWs, "(?:", StringPattern(0, -1), "|", kNumber,
                      "|true|false|null|\\[", kWs, "(?:(?&any)(?:,(?&any))*)?\\]|\\{", kWs,
                      "(?:", StringPattern(0, -1), kWs, ":(?&any)(?:,", kWs, StringPattern(0, -1),
                      kWs, ":(?&any))*)?\\})", kWs, ")");
    }
    for (const auto& [ref, def] : defs_) absl::StrAppend(&defines, def);
    if (defines.empty()) return body;
    return absl::StrCat("(?(DEFINE)", defines, ")", *body);
  }

 private:
  static absl::Status Bad(const std::string& pointer, const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("json_schema at ", pointer.empty() ? "/" : pointer, ": ", what));
  }

  static std::string StringPattern(int64_t min, int64_t max) {
    if (min == 0 && max < 0) return absl::StrCat("\"", kStringChar, "*\"");
    return absl::StrCat("\"", kStringChar, "{", min, ",", max < 0 ? "" : absl::StrCat(max), "}\"");
  }

  absl::StatusOr<int64_t> Count(const Json& schema, const char* key, const std::string& pointer,
                                int64_t fallback) {
    auto it = schema.find(key);
    if (it == schema.end()) return fallback;
    if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0)) {
      return Bad(pointer, absl::StrCat(key, " must be a non-negative integer"));
    }
    const int64_t v = it->get<int64_t>();
    if (v > kMaxRepeat) return Bad(pointer, absl::StrCat(key, " ", v, " is over ", kMaxRepeat));
    return v;
  }

  absl::StatusOr<std::string> Value(const Json& schema, const std::string& pointer, int depth) {
    if (depth > kMaxDepth) {
      return absl::ResourceExhaustedError(
          absl::StrCat("json_schema at ", pointer, ": nested deeper than ", kMaxDepth, " levels"));
    }
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) return Bad(pointer, "the schema false accepts nothing");
      any_used_ = true;
      return std::string("(?&any)");
    }
    if (!schema.is_object()) return Bad(pointer, "a schema must be an object or a boolean");
    for (const auto& [key, value] : schema.items()) {
      static const std::set<std::string> kKnown = {
          "type",     "enum",      "const",     "properties", "required", "items", "minItems",
          "maxItems", "minLength", "maxLength", "anyOf",      "oneOf",    "$ref"};
      if (kKnown.count(key) == 0 && Annotations().count(key) == 0) {
        return Bad(pointer, absl::StrCat("keyword \"", key, "\" is not supported"));
      }
    }
    if (auto it = schema.find("$ref"); it != schema.end()) return Ref(*it, pointer, depth);
    if (auto it = schema.find("const"); it != schema.end()) return RegexLiteral(it->dump());
    if (auto it = schema.find("enum"); it != schema.end()) {
      if (!it->is_array() || it->empty()) return Bad(pointer, "enum must be a non-empty array");
      std::vector<std::string> options;
      for (const Json& v : *it) options.push_back(RegexLiteral(v.dump()));
      return absl::StrCat("(?:", absl::StrJoin(options, "|"), ")");
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      auto it = schema.find(key);
      if (it == schema.end()) continue;
      if (!it->is_array() || it->empty()) {
        return Bad(pointer, absl::StrCat(key, " must be a non-empty array"));
      }
      std::vector<std::string> options;
      for (size_t i = 0; i < it->size(); ++i) {
        absl::StatusOr<std::string> option =
            Value((*it)[i], absl::StrCat(pointer, "/", key, "/", i), depth + 1);
        if (!option.ok()) return option.status();
        options.push_back(*std::move(option));
      }
      return absl::StrCat("(?:", absl::StrJoin(options, "|"), ")");
    }
    auto type = schema.find("type");
    if (type == schema.end()) {
      if (schema.contains("properties")) return Typed(schema, "object", pointer, depth);
      if (schema.contains("items")) return Typed(schema, "array", pointer, depth);
      any_used_ = true;
      return std::string("(?&any)");
    }
    if (type->is_string()) return Typed(schema, type->get<std::string>(), pointer, depth);
    if (!type->is_array() || type->empty()) {
      return Bad(pointer, "type must be a string or a non-empty array of strings");
    }
    std::vector<std::string> options;
    for (const Json& t : *type) {
      if (!t.is_string()) return Bad(pointer, "type must be a string or an array of strings");
      absl::StatusOr<std::string> option = Typed(schema, t.get<std::string>(), pointer, depth);
      if (!option.ok()) return option.status();
      options.push_back(*std::move(option));
    }
    return absl::StrCat("(?:", absl::StrJoin(options, "|"), ")");
  }

  absl::StatusOr<std::string> Typed(const Json& schema, const std::string& type,
                                    const std::string& pointer, int depth) {
    if (type == "string") {
      absl::StatusOr<int64_t> min = Count(schema, "minLength", pointer, 0);
      absl::StatusOr<int64_t> max = Count(schema, "maxLength", pointer, -1);
      if (!min.ok()) return min.status();
      if (!max.ok()) return max.status();
      if (*max >= 0 && *max < *min) return Bad(pointer, "maxLength is below minLength");
      return StringPattern(*min, *max);
    }
    if (type == "integer") return std::string(kInteger);
    if (type == "number") return std::string(kNumber);
    if (type == "boolean") return std::string("(?:true|false)");
    if (type == "null") return std::string("null");
    if (type == "object") return Object(schema, pointer, depth);
    if (type == "array") return Array(schema, pointer, depth);
    return Bad(pointer, absl::StrCat("type \"", type, "\" is not a JSON Schema type"));
  }

  absl::StatusOr<std::string> Object(const Json& schema, const std::string& pointer, int depth) {
    auto props = schema.find("properties");
    if (props == schema.end()) {
      any_used_ = true;
      return absl::StrCat("\\{", kWs, "(?:", StringPattern(0, -1), kWs, ":(?&any)(?:,", kWs,
                          StringPattern(0, -1), kWs, ":(?&any))*)?\\}");
    }
    if (!props->is_object()) return Bad(pointer, "properties must be an object");
    std::set<std::string> required;
    if (auto req = schema.find("required"); req != schema.end()) {
      if (!req->is_array()) return Bad(pointer, "required must be an array of names");
      for (const Json& name : *req) {
        if (!name.is_string() || !props->contains(name.get<std::string>())) {
          return Bad(pointer, absl::StrCat("required names ", name.dump(),
                                           ", which is not among the properties"));
        }
        required.insert(name.get<std::string>());
      }
    }
    // Members in the schema's order; an optional one may be left out.
    std::vector<std::pair<std::string, bool>> members;  // pattern, required
    for (const auto& [name, sub] : props->items()) {
      absl::StatusOr<std::string> value =
          Value(sub, absl::StrCat(pointer, "/properties/", name), depth + 1);
      if (!value.ok()) return value.status();
      members.emplace_back(
          absl::StrCat(kWs, RegexLiteral(Json(name).dump()), kWs, ":", kWs, *value, kWs),
          required.count(name) > 0);
    }
    std::string body;
    size_t first_required = members.size();
    for (size_t i = 0; i < members.size(); ++i) {
      if (members[i].second) {
        first_required = i;
        break;
      }
    }
    if (first_required < members.size()) {
      // Optional members before the first required one each end with a comma; later ones start
      // with one.
      for (size_t i = 0; i < first_required; ++i) {
        absl::StrAppend(&body, "(?:", members[i].first, ",)?");
      }
      absl::StrAppend(&body, members[first_required].first);
      for (size_t i = first_required + 1; i < members.size(); ++i) {
        absl::StrAppend(&body, members[i].second ? "" : "(?:", ",", members[i].first,
                        members[i].second ? "" : ")?");
      }
    } else if (!members.empty()) {
      // All optional: choose the first member present, then each later one may follow.
      std::vector<std::string> starts;
      for (size_t i = 0; i < members.size(); ++i) {
        std::string start = members[i].first;
        for (size_t j = i + 1; j < members.size(); ++j) {
          absl::StrAppend(&start, "(?:,", members[j].first, ")?");
        }
        starts.push_back(std::move(start));
      }
      body = absl::StrCat("(?:", absl::StrJoin(starts, "|"), ")?");
    }
    return absl::StrCat("\\{", body, kWs, "\\}");
  }

  absl::StatusOr<std::string> Array(const Json& schema, const std::string& pointer, int depth) {
    std::string item;
    if (auto items = schema.find("items"); items != schema.end()) {
      absl::StatusOr<std::string> v = Value(*items, absl::StrCat(pointer, "/items"), depth + 1);
      if (!v.ok()) return v.status();
      item = *std::move(v);
    } else {
      any_used_ = true;
      item = "(?&any)";
    }
    absl::StatusOr<int64_t> min = Count(schema, "minItems", pointer, 0);
    absl::StatusOr<int64_t> max = Count(schema, "maxItems", pointer, -1);
    if (!min.ok()) return min.status();
    if (!max.ok()) return max.status();
    if (*max >= 0 && *max < *min) return Bad(pointer, "maxItems is below minItems");
    const std::string element = absl::StrCat(kWs, item, kWs);
    if (*max == 0) return absl::StrCat("\\[", kWs, "\\]");
    const std::string more = absl::StrCat("(?:,", element, "){", *min > 0 ? *min - 1 : 0, ",",
                                          *max < 0 ? std::string() : absl::StrCat(*max - 1), "}");
    const std::string elements = absl::StrCat(element, more);
    return absl::StrCat("\\[", *min == 0 ? absl::StrCat("(?:", elements, "|", kWs, ")") : elements,
                        "\\]");
  }

  absl::StatusOr<std::string> Ref(const Json& ref, const std::string& pointer, int depth) {
    if (!ref.is_string()) return Bad(pointer, "$ref must be a string");
    const std::string target = ref.get<std::string>();
    std::string section, name;
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      if (target.rfind(prefix, 0) == 0) {
        section = std::string(prefix).substr(2, std::string(prefix).size() - 3);
        name = target.substr(std::string(prefix).size());
      }
    }
    if (section.empty() || name.empty()) {
      return Bad(pointer,
                 absl::StrCat("$ref \"", target,
                              "\": only #/$defs/NAME and #/definitions/NAME are supported"));
    }
    auto found = names_.find(target);
    if (found != names_.end()) return absl::StrCat("(?&", found->second, ")");
    auto defs = root_.find(section);
    if (defs == root_.end() || !defs->is_object() || !defs->contains(name)) {
      return Bad(pointer, absl::StrCat("$ref \"", target, "\" names no definition"));
    }
    const std::string group = absl::StrCat("d", names_.size());
    names_[target] = group;  // before translating it, so a recursive $ref finds it
    absl::StatusOr<std::string> body = Value((*defs)[name], target.substr(1), depth + 1);
    if (!body.ok()) return body.status();
    defs_[target] = absl::StrCat("(?<", group, ">", *body, ")");
    return absl::StrCat("(?&", group, ")");
  }

  const Json& root_;
  bool any_used_ = false;
  std::map<std::string, std::string> names_;  // $ref -> group name
  std::map<std::string, std::string> defs_;   // $ref -> "(?<name>...)"
};

}  // namespace

std::string RegexLiteral(std::string_view bytes) {
  std::string out;
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    if ((b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || b == ' ' ||
        b == '_' || b == '"' || b == ':' || b == ',' || b == '-' || b == '\'' || b == '@' ||
        b == '/' || b == '!' || b == '%' || b == '&' || b == '=' || b == ';' || b == '<' ||
        b == '>' || b == '~' || b == '`') {
      out.push_back(c);
    } else if (b > 0x20 && b < 0x7f) {  // a metacharacter: \ . ^ $ | ? * + ( ) [ ] { } #
      out.push_back('\\');
      out.push_back(c);
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", b);
    }
  }
  return out;
}

absl::StatusOr<std::string> JsonSchemaToRegex(std::string_view schema_json) {
  const Json schema = Json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) {
    return absl::InvalidArgumentError("json_schema: not valid JSON");
  }
  return Translator(schema).Translate();
}

}  // namespace twinspan::structured
