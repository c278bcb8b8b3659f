#include "common/tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace twinspan::tokenizer {
namespace {

// The GPT-2 pattern ByteLevel uses when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

absl::StatusOr<SplitBehavior> ParseBehavior(const nlohmann::json& value) {
  if (!value.is_string())
    return absl::InvalidArgumentError("tokenizer.json: Split without \"behavior\"");
  const std::string name = value.get<std::string>();
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return absl::InvalidArgumentError(
      absl::StrCat("tokenizer.json: unknown Split behavior \"", name, "\""));
}

bool BoolField(const nlohmann::json& config, const char* name, bool fallback) {
  if (!config.contains(name) || !config[name].is_boolean()) return fallback;
  return config[name].get<bool>();
}

struct Span {
  size_t begin;
  size_t end;
  bool is_match;
};

// Turns the stream of gap / match spans into pieces with Hugging Face's split behaviours, holding
// at most one pending span. Empty pieces are dropped. REQUIRES: `emit` outlives the merger.
class SpanMerger {
 public:
  SpanMerger(std::string_view text, SplitBehavior behavior, PieceVisitor emit)
      : text_(text), behavior_(behavior), emit_(emit) {}

  void Add(Span s) {
    switch (behavior_) {
      case SplitBehavior::kIsolated:
        Emit(s);
        return;
      case SplitBehavior::kRemoved:
        if (!s.is_match) Emit(s);
        return;
      case SplitBehavior::kMergedWithPrevious:
        if (s.is_match && !previous_match_ && has_pending_) {
          pending_.end = s.end;
        } else {
          Flush();
          Hold(s);
        }
        break;
      case SplitBehavior::kMergedWithNext:
        // A match joins the span after it when that span is not a match.
        if (has_pending_ && pending_.is_match && !s.is_match) {
          pending_.end = s.end;
          Flush();
        } else {
          Flush();
          if (s.is_match) {
            Hold(s);
          } else {
            Emit(s);
          }
        }
        break;
      case SplitBehavior::kContiguous:
        if (has_pending_ && s.is_match == previous_match_) {
          pending_.end = s.end;
        } else {
          Flush();
          Hold(s);
        }
        break;
    }
    previous_match_ = s.is_match;
  }

  void Finish() { Flush(); }

 private:
  void Emit(const Span& s) {
    if (s.end > s.begin) emit_(text_.substr(s.begin, s.end - s.begin));
  }
  void Hold(const Span& s) {
    pending_ = s;
    has_pending_ = true;
  }
  void Flush() {
    if (has_pending_) Emit(pending_);
    has_pending_ = false;
  }

  std::string_view text_;
  SplitBehavior behavior_;
  PieceVisitor emit_;
  Span pending_{0, 0, false};
  bool has_pending_ = false;
  bool previous_match_ = false;
};

}  // namespace

std::vector<std::string_view> SplitByMatches(std::string_view text,
                                             const std::vector<MatchSpan>& spans,
                                             SplitBehavior behavior, bool invert) {
  std::vector<std::string_view> pieces;
  const auto collect = [&pieces](std::string_view p) { pieces.push_back(p); };
  SpanMerger merger(text, behavior, collect);
  size_t previous = 0;
  for (const MatchSpan& m : spans) {
    if (m.first > previous) merger.Add({previous, m.first, invert});
    merger.Add({m.first, m.second, !invert});
    previous = m.second;
  }
  if (previous < text.size()) merger.Add({previous, text.size(), invert});
  merger.Finish();
  return pieces;
}

absl::Status PreTokenizer::AddSteps(const nlohmann::json& config, std::vector<Step>* steps) {
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string()) {
    return absl::InvalidArgumentError("tokenizer.json: pre_tokenizer without a string \"type\"");
  }
  const std::string type = config["type"].get<std::string>();
  if (type == "Sequence") {
    if (!config.contains("pretokenizers") || !config["pretokenizers"].is_array()) {
      return absl::InvalidArgumentError(
          "tokenizer.json: Sequence pre_tokenizer without \"pretokenizers\"");
    }
    for (const nlohmann::json& item : config["pretokenizers"]) {
      absl::Status status = AddSteps(item, steps);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  Step step;
  if (type == "Split") {
    step.kind = Step::Kind::kSplit;
    if (!config.contains("pattern") || !config["pattern"].is_object()) {
      return absl::InvalidArgumentError("tokenizer.json: Split pre_tokenizer without \"pattern\"");
    }
    const nlohmann::json& pattern = config["pattern"];
    absl::StatusOr<Regex> regex = absl::InvalidArgumentError(
        "tokenizer.json: Split pattern must have a string \"Regex\" or \"String\"");
    if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
      regex = Regex::Compile(pattern["Regex"].get<std::string>());
    } else if (pattern.contains("String") && pattern["String"].is_string()) {
      regex = Regex::CompileLiteral(pattern["String"].get<std::string>());
    }
    if (!regex.ok()) return regex.status();
    step.regex = std::make_unique<Regex>(*std::move(regex));
    absl::StatusOr<SplitBehavior> behavior =
        ParseBehavior(config.contains("behavior") ? config["behavior"] : nlohmann::json());
    if (!behavior.ok()) return behavior.status();
    step.behavior = *behavior;
    step.invert = BoolField(config, "invert", false);
  } else if (type == "ByteLevel") {
    step.kind = Step::Kind::kByteLevel;
    step.add_prefix_space = BoolField(config, "add_prefix_space", true);
    if (BoolField(config, "use_regex", true)) {
      absl::StatusOr<Regex> regex = Regex::Compile(kGpt2Pattern);
      if (!regex.ok()) return regex.status();
      step.regex = std::make_unique<Regex>(*std::move(regex));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("tokenizer.json: pre_tokenizer type \"", type,
                     "\" is not supported (supported: Split, ByteLevel, Sequence)"));
  }
  steps->push_back(std::move(step));
  return absl::OkStatus();
}

absl::StatusOr<PreTokenizer> PreTokenizer::FromJson(const nlohmann::json& config) {
  PreTokenizer pre;
  if (config.is_null()) {
    return absl::InvalidArgumentError(
        "tokenizer.json: no pre_tokenizer; only byte-level BPE (a ByteLevel pre_tokenizer) is "
        "supported");
  }
  absl::Status status = AddSteps(config, &pre.steps_);
  if (!status.ok()) return status;
  for (size_t i = 0; i < pre.steps_.size(); ++i) {
    const bool byte_level = pre.steps_[i].kind == Step::Kind::kByteLevel;
    if (byte_level != (i + 1 == pre.steps_.size())) {
      return absl::InvalidArgumentError(
          "tokenizer.json: the pre_tokenizer must end with exactly one ByteLevel step (byte-level "
          "BPE)");
    }
  }
  return pre;
}

absl::Status PreTokenizer::ApplyStep(size_t index, std::string_view piece,
                                     PieceVisitor visit) const {
  if (index == steps_.size()) {
    if (!piece.empty()) visit(piece);
    return absl::OkStatus();
  }
  const Step& step = steps_[index];
  std::string prefixed;
  if (step.kind == Step::Kind::kByteLevel && step.add_prefix_space &&
      (piece.empty() || piece.front() != ' ')) {
    prefixed = " " + std::string(piece);
    piece = prefixed;
  }
  if (step.regex == nullptr) return ApplyStep(index + 1, piece, visit);
  const SplitBehavior behavior =
      step.kind == Step::Kind::kByteLevel ? SplitBehavior::kIsolated : step.behavior;
  absl::Status status;
  const auto next_step = [&](std::string_view p) {
    if (status.ok()) status = ApplyStep(index + 1, p, visit);
  };
  SpanMerger merger(piece, behavior, next_step);
  size_t previous = 0;
  absl::Status regex_status = step.regex->ForEachMatch(piece, [&](size_t begin, size_t end) {
    if (begin > previous) merger.Add({previous, begin, step.invert});
    merger.Add({begin, end, !step.invert});
    previous = end;
  });
  if (previous < piece.size()) merger.Add({previous, piece.size(), step.invert});
  merger.Finish();
  if (!regex_status.ok()) return regex_status;
  return status;
}

absl::Status PreTokenizer::Split(std::string_view text, PieceVisitor visit) const {
  return ApplyStep(0, text, visit);
}

}  // namespace twinspan::tokenizer
