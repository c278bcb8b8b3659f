// The calibration token rows twinspan-quantize runs through the model to measure each linear's
// input Hessian: consecutive slices of a text file under the model's own tokenizer, and seeded
// random token rows (about 15% of the rows, as exllamav3's mix gives random ids 20 of its 135
// parts; all of them without a file).
#ifndef TWINSPAN_TOOLS_QUANTIZE_CALIBRATION_H_
#define TWINSPAN_TOOLS_QUANTIZE_CALIBRATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tokenizer/tokenizer.h"

namespace twinspan::quantize {

struct Calibration {
  std::vector<std::vector<int32_t>> rows;  // rows x cols token ids.
  int64_t text_rows = 0;
  int64_t random_rows = 0;
  std::string description;  // One line for the progress output.
};

struct CalibrationSpec {
  std::string text_file;                            // Empty: random rows only.
  const tokenizer::Tokenizer* tokenizer = nullptr;  // REQUIRES: set when text_file is.
  int64_t vocab = 0;                                // Random ids are uniform in [0, vocab).
  int64_t rows = 0;
  int64_t cols = 0;
  uint64_t seed = 0;
};

// NotFound naming a missing file; InvalidArgument when it is not UTF-8 or holds fewer than `cols`
// tokens, or vocab < 1. When the text fills fewer rows than its share, random rows make up the
// rest (said in the description).
absl::StatusOr<Calibration> BuildCalibration(const CalibrationSpec& spec);

}  // namespace twinspan::quantize

#endif  // TWINSPAN_TOOLS_QUANTIZE_CALIBRATION_H_
