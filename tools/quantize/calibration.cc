#include "tools/quantize/calibration.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "common/sampler/philox.h"
#include "common/status.h"

namespace twinspan::quantize {
namespace {

// exllamav3's mix: 20 of 135 parts are uniformly random token rows.
constexpr int64_t kRandomParts = 20, kAllParts = 135;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrFormat("calibration file %s: cannot open", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<Calibration> BuildCalibration(const CalibrationSpec& spec) {
  if (spec.vocab < 1 || spec.rows < 1 || spec.cols < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("calibration of %d rows x %d tokens over a vocabulary of %d", spec.rows,
                        spec.cols, spec.vocab));
  }
  Calibration cal;
  std::string note;
  if (!spec.text_file.empty()) {
    ABSL_ASSIGN_OR_RETURN(const std::string text, ReadFile(spec.text_file));
    absl::StatusOr<std::vector<int32_t>> ids = spec.tokenizer->Encode(text);
    if (!ids.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("calibration file %s: %s", spec.text_file, ids.status().message()));
    }
    const int64_t available = static_cast<int64_t>(ids->size()) / spec.cols;
    if (available == 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("calibration file %s holds %d tokens, fewer than one row of %d",
                          spec.text_file, ids->size(), spec.cols));
    }
    const int64_t random_share =
        spec.rows >= 2 ? std::max<int64_t>(1, spec.rows * kRandomParts / kAllParts) : 0;
    cal.text_rows = std::min(spec.rows - random_share, available);
    if (cal.text_rows < spec.rows - random_share) {
      note = absl::StrFormat(" (the text fills only %d rows; random rows make up the rest)",
                             cal.text_rows);
    }
    for (int64_t r = 0; r < cal.text_rows; ++r) {
      cal.rows.emplace_back(ids->begin() + r * spec.cols, ids->begin() + (r + 1) * spec.cols);
    }
  }
  cal.random_rows = spec.rows - cal.text_rows;
  const sampler::PhiloxKey key = {static_cast<uint32_t>(spec.seed),
                                  static_cast<uint32_t>(spec.seed >> 32)};
  for (int64_t r = 0; r < cal.random_rows; ++r) {
    std::vector<int32_t> row(static_cast<size_t>(spec.cols));
    for (int64_t c = 0; c < spec.cols; ++c) {
      const sampler::PhiloxCounter out = sampler::Philox4x32(
          {static_cast<uint32_t>(c), static_cast<uint32_t>(r), 0x63616c69u, 0}, key);
      row[c] = static_cast<int32_t>(out[0] % static_cast<uint64_t>(spec.vocab));
    }
    cal.rows.push_back(std::move(row));
  }
  cal.description =
      spec.text_file.empty()
          ? absl::StrFormat(
                "calibration: %d rows x %d tokens, all seeded random token ids (no "
                "--calibration file)",
                spec.rows, spec.cols)
          : absl::StrFormat(
                "calibration: %d rows x %d tokens, %d from %s and %d of seeded random "
                "token ids%s",
                spec.rows, spec.cols, cal.text_rows, spec.text_file, cal.random_rows, note);
  return cal;
}

}  // namespace twinspan::quantize
