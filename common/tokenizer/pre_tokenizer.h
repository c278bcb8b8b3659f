// The tokenizer.json "pre_tokenizer": Split (regex or literal, every split behaviour, invert) and
// ByteLevel (optional prefix space and GPT-2 regex), alone or in a "Sequence" that ends in
// ByteLevel. The byte-to-character mapping of ByteLevel is left to the BPE model, which works on
// bytes.
#ifndef TWINSPAN_COMMON_TOKENIZER_PRE_TOKENIZER_H_
#define TWINSPAN_COMMON_TOKENIZER_PRE_TOKENIZER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/tokenizer/regex.h"
#include "nlohmann/json_fwd.hpp"

namespace twinspan::tokenizer {

// How a Split keeps its matches (Hugging Face SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// Receives each pre-tokenized piece, in order. The view is valid only during the call.
using PieceVisitor = absl::FunctionRef<void(std::string_view)>;

// Immutable and thread-safe after construction.
class PreTokenizer {
 public:
  // Parses the "pre_tokenizer" value. Errors: InvalidArgument for unsupported types, a missing or
  // misplaced ByteLevel (it must come last, once), or a pattern that does not compile.
  static absl::StatusOr<PreTokenizer> FromJson(const nlohmann::json& config);

  // Splits `text` into pieces and hands each to `visit` as soon as it is known (no intermediate
  // arrays, so long texts stream through the cache). REQUIRES: text is valid UTF-8.
  // Errors: ResourceExhausted from the regex engine.
  absl::Status Split(std::string_view text, PieceVisitor visit) const;

 private:
  struct Step {
    enum class Kind { kSplit, kByteLevel } kind;
    std::unique_ptr<Regex> regex;  // null for ByteLevel without use_regex
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
    bool add_prefix_space = false;
  };
  static absl::Status AddSteps(const nlohmann::json& config, std::vector<Step>* steps);
  absl::Status ApplyStep(size_t index, std::string_view piece, PieceVisitor visit) const;

  std::vector<Step> steps_;
};

// Splits `text` by the regex matches `spans` (sorted, non-overlapping) with the given behaviour, as
// Hugging Face's NormalizedString::split does; empty pieces are dropped. Exposed for tests.
std::vector<std::string_view> SplitByMatches(std::string_view text,
                                             const std::vector<MatchSpan>& spans,
                                             SplitBehavior behavior, bool invert);

}  // namespace twinspan::tokenizer

#endif  // TWINSPAN_COMMON_TOKENIZER_PRE_TOKENIZER_H_
