// The tokenizer.json "normalizer": Unicode normalization forms (NFC, NFD, NFKC, NFKD) through
// utf8proc, alone or in a "Sequence". Other normalizer types are refused.
#ifndef TWINSPAN_COMMON_TOKENIZER_NORMALIZER_H_
#define TWINSPAN_COMMON_TOKENIZER_NORMALIZER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace twinspan::tokenizer {

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

// Immutable and thread-safe after construction.
class Normalizer {
 public:
  // Parses the "normalizer" value (null means none).
  // Errors: InvalidArgument naming the unsupported type or malformed field.
  static absl::StatusOr<Normalizer> FromJson(const nlohmann::json& config);

  // True when Normalize never changes text.
  bool is_identity() const { return forms_.empty(); }

  // Writes the normalized `text` to `out`. REQUIRES: text is valid UTF-8.
  // Errors: Internal when utf8proc fails (out of memory).
  absl::Status Normalize(std::string_view text, std::string* out) const;

 private:
  std::vector<NormalForm> forms_;
};

}  // namespace twinspan::tokenizer

#endif  // TWINSPAN_COMMON_TOKENIZER_NORMALIZER_H_
