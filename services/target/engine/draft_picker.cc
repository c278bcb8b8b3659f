#include "services/target/engine/draft_picker.h"

#include <algorithm>

namespace twinspan::engine {
namespace {

// Evidence weighs as this many tokens before a stream has its own; recent rounds count more
// (each round scales the old counts by kDecay) so a stream that moves from copying text to
// writing new text changes its choice within a few rounds.
constexpr double kPrior = 4.0;
constexpr double kDecay = 0.9;
// Before any evidence: text that repeats n tokens of its context tends to go on repeating it, so
// a copy starts slightly ahead of the drafter; a stream's own rounds soon outweigh both.
constexpr double kPriorRate[kDraftSources] = {0.7, 0.8};

}  // namespace

const char* DraftSourceName(DraftSource source) {
  return source == DraftSource::kContextCopy ? "context_copy" : "drafter";
}

double DraftPicker::MatchProbability(DraftSource source) const {
  const Counts& c = counts_[static_cast<int>(source)];
  return (c.matched + kPrior * kPriorRate[static_cast<int>(source)]) /
         (c.matched + c.mismatched + kPrior);
}

double DraftPicker::ExpectedAccepted(DraftSource source, int64_t k) const {
  const double p = MatchProbability(source);
  double expected = 0, term = 1;
  for (int64_t i = 0; i < k; ++i) {
    term *= p;
    expected += term;
  }
  return expected;
}

DraftSource DraftPicker::Pick(int64_t drafter_tokens, int64_t copy_tokens) const {
  if (copy_tokens <= 0) return DraftSource::kDrafter;
  return ExpectedAccepted(DraftSource::kContextCopy, copy_tokens) >
                 ExpectedAccepted(DraftSource::kDrafter, drafter_tokens)
             ? DraftSource::kContextCopy
             : DraftSource::kDrafter;
}

void DraftPicker::Learn(DraftSource source, absl::Span<const uint32_t> proposal,
                        absl::Span<const uint32_t> emitted) {
  if (proposal.empty()) return;
  Counts& c = counts_[static_cast<int>(source)];
  c.matched *= kDecay;
  c.mismatched *= kDecay;
  const size_t seen = std::min(proposal.size(), emitted.size());
  size_t matched = 0;
  while (matched < seen && proposal[matched] == emitted[matched]) ++matched;
  c.matched += static_cast<double>(matched);
  // A mismatch is seen only inside what the target emitted; past it, nothing is known.
  if (matched < seen) c.mismatched += 1;
}

}  // namespace twinspan::engine
