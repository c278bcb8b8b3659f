#include "common/tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

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

}  // namespace

std::vector<std::string_view> SplitByMatches(std::string_view text,
                                             const std::vector<MatchSpan>& spans,
                                             SplitBehavior behavior, bool invert) {
  std::vector<Span> all;
  size_t previous = 0;
  for (const MatchSpan& m : spans) {
    if (m.first > previous) all.push_back({previous, m.first, invert});
    all.push_back({m.first, m.second, !invert});
    previous = m.second;
  }
  if (previous < text.size()) all.push_back({previous, text.size(), invert});

  std::vector<Span> merged;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      merged = std::move(all);
      break;
    case SplitBehavior::kRemoved:
      for (const Span& s : all) {
        if (!s.is_match) merged.push_back(s);
      }
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Span& s : all) {
        if (s.is_match && !previous_match && !merged.empty()) {
          merged.back().end = s.end;
        } else {
          merged.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = all.rbegin(); it != all.rend(); ++it) {
        if (it->is_match && !previous_match && !merged.empty()) {
          merged.back().begin = it->begin;
        } else {
          merged.push_back(*it);
        }
        previous_match = it->is_match;
      }
      std::reverse(merged.begin(), merged.end());
      break;
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Span& s : all) {
        if (s.is_match == previous_match && !merged.empty()) {
          merged.back().end = s.end;
        } else {
          merged.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    }
  }
  std::vector<std::string_view> pieces;
  for (const Span& s : merged) {
    if (s.end > s.begin) pieces.push_back(text.substr(s.begin, s.end - s.begin));
  }
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

absl::Status PreTokenizer::ApplyStep(const Step& step, std::string_view piece, Pieces* out) const {
  if (step.kind == Step::Kind::kByteLevel && step.add_prefix_space &&
      (piece.empty() || piece.front() != ' ')) {
    out->storage.push_back(" " + std::string(piece));
    piece = out->storage.back();
  }
  if (step.regex == nullptr) {
    if (!piece.empty()) out->views.push_back(piece);
    return absl::OkStatus();
  }
  std::vector<MatchSpan> matches;
  absl::Status status = step.regex->FindAll(piece, &matches);
  if (!status.ok()) return status;
  const SplitBehavior behavior =
      step.kind == Step::Kind::kByteLevel ? SplitBehavior::kIsolated : step.behavior;
  for (std::string_view p : SplitByMatches(piece, matches, behavior, step.invert)) {
    out->views.push_back(p);
  }
  return absl::OkStatus();
}

absl::Status PreTokenizer::Split(std::string_view text, Pieces* pieces) const {
  const size_t first = pieces->views.size();
  pieces->views.push_back(text);
  for (const Step& step : steps_) {
    std::vector<std::string_view> current(pieces->views.begin() + first, pieces->views.end());
    pieces->views.resize(first);
    for (std::string_view piece : current) {
      absl::Status status = ApplyStep(step, piece, pieces);
      if (!status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

}  // namespace twinspan::tokenizer
