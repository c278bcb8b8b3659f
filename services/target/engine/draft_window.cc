#include "services/target/engine/draft_window.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace twinspan::engine {

absl::StatusOr<DraftWindowOptions> ParseDraftWindow(absl::string_view text) {
  DraftWindowOptions options;
  if (text == "all") return options;
  if (text == "adaptive") {
    options.mode = DraftWindowMode::kAdaptive;
    return options;
  }
  int n = 0;
  if (absl::SimpleAtoi(text, &n) && n >= 1) {
    options.max_drafts = n;
    return options;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--draft-window \"", text, "\": expected all, adaptive or a count >= 1"));
}

std::string DraftWindowName(const DraftWindowOptions& options) {
  if (options.mode == DraftWindowMode::kAdaptive) return "adaptive";
  return options.max_drafts > 0 ? absl::StrCat(options.max_drafts) : "all";
}

int DraftWindow::Size(int proposals) const {
  int size = proposals;
  if (options_.max_drafts > 0) size = std::min(size, options_.max_drafts);
  if (options_.mode == DraftWindowMode::kAdaptive) {
    const int wanted = static_cast<int>(std::ceil(kScale * mean_accepted_ + kMargin));
    size = std::min(size, std::max(1, wanted));
  }
  return std::max(0, size);
}

void DraftWindow::Record(int verified, int accepted) {
  if (verified <= 0) return;  // No drafts this round: nothing learned.
  const double seen = accepted >= verified ? accepted + kFullBonus : accepted;
  mean_accepted_ = (1.0 - kWeight) * mean_accepted_ + kWeight * seen;
}

}  // namespace twinspan::engine
