// The tokenizer.json "pre_tokenizer": Split (regex or literal, every split behaviour, invert) and
// ByteLevel (optional prefix space and GPT-2 regex), alone or in a "Sequence" that ends in
// ByteLevel. The byte-to-character mapping of ByteLevel is left to the BPE model, which works on
// bytes.
#ifndef TWINSPAN_COMMON_TOKENIZER_PRE_TOKENIZER_H_
#define TWINSPAN_COMMON_TOKENIZER_PRE_TOKENIZER_H_

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/tokenizer/regex.h"
#include "nlohmann/json.hpp"

namespace twinspan::tokenizer {

// How a Split keeps its matches (Hugging Face SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// Pieces produced by pre-tokenization: views into the input or into `storage` (for pieces that
// gained a prefix space). Reuse one instance per call.
struct Pieces {
  std::vector<std::string_view> views;
  std::deque<std::string> storage;
  void clear() {
    views.clear();
    storage.clear();
  }
};

// Immutable and thread-safe after construction.
class PreTokenizer {
 public:
  // Parses the "pre_tokenizer" value. Errors: InvalidArgument for unsupported types, a missing or
  // misplaced ByteLevel (it must come last, once), or a pattern that does not compile.
  static absl::StatusOr<PreTokenizer> FromJson(const nlohmann::json& config);

  // Splits `text` into pieces, appended to `pieces`. REQUIRES: text is valid UTF-8 and outlives
  // the views. Errors: ResourceExhausted from the regex engine.
  absl::Status Split(std::string_view text, Pieces* pieces) const;

 private:
  struct Step {
    enum class Kind { kSplit, kByteLevel } kind;
    std::unique_ptr<Regex> regex;  // null for ByteLevel without use_regex
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
    bool add_prefix_space = false;
  };
  static absl::Status AddSteps(const nlohmann::json& config, std::vector<Step>* steps);
  absl::Status ApplyStep(const Step& step, std::string_view piece, Pieces* out) const;

  std::vector<Step> steps_;
};

// Splits `text` by the regex matches `spans` (sorted, non-overlapping) with the given behaviour, as
// Hugging Face's NormalizedString::split does; empty pieces are dropped. Exposed for tests.
std::vector<std::string_view> SplitByMatches(std::string_view text,
                                             const std::vector<MatchSpan>& spans,
                                             SplitBehavior behavior, bool invert);

}  // namespace twinspan::tokenizer

#endif  // TWINSPAN_COMMON_TOKENIZER_PRE_TOKENIZER_H_
