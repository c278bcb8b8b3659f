// How many of a stream's proposals a verify round checks. Drafts only change speed, so a window
// never changes a token: it trades the tokens a round can gain against what its verify costs.
// Where extra verify rows cost little (a GPU) every proposal is worth checking; on a CPU a 16-row
// verify of the demo pair costs about 2.5 plain steps (demo_round_bench), so a stream whose drafts
// keep failing early verifies fewer of them.
#ifndef TWINSPAN_SERVICES_TARGET_ENGINE_DRAFT_WINDOW_H_
#define TWINSPAN_SERVICES_TARGET_ENGINE_DRAFT_WINDOW_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace twinspan::engine {

enum class DraftWindowMode {
  kAll,       // Every proposal, up to max_drafts.
  kAdaptive,  // Per stream, from its recent acceptance (DraftWindow).
};

struct DraftWindowOptions {
  DraftWindowMode mode = DraftWindowMode::kAll;
  int max_drafts = 0;  // At most this many drafts a round; 0: as many as the drafter sent.
};

// "all", "adaptive", or a count N >= 1 (all proposals, at most N). InvalidArgument naming
// --draft-window and its values for anything else.
absl::StatusOr<DraftWindowOptions> ParseDraftWindow(absl::string_view text);

// "all", "adaptive" or N: what ParseDraftWindow reads back.
std::string DraftWindowName(const DraftWindowOptions& options);

// One stream's window. An exponentially weighted mean of the drafts its rounds accepted (weight
// kWeight on the newest; a round that accepted its whole window counts kFullBonus more, since
// its drafts may have gone on matching) sizes the next window as kScale * mean + kMargin.
// Depends only on the stream's own accept counts, so a repeat of a request sees the same
// windows. Not thread-safe: the engine thread owns it.
class DraftWindow {
 public:
  explicit DraftWindow(const DraftWindowOptions& options) : options_(options) {}

  // Drafts to verify this round out of `proposals` sent: in [0, proposals].
  int Size(int proposals) const;
  // The round verified `verified` drafts and accepted the first `accepted` of them.
  void Record(int verified, int accepted);

  static constexpr double kWeight = 0.3;
  static constexpr double kFullBonus = 2.0;
  static constexpr double kScale = 2.0;
  static constexpr double kMargin = 2.0;
  static constexpr double kStartMean = 4.0;  // Before any round: a window of 10.

 private:
  DraftWindowOptions options_;
  double mean_accepted_ = kStartMean;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_TARGET_ENGINE_DRAFT_WINDOW_H_
