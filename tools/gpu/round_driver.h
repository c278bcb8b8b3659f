// One stream's speculative round, step by step, over a TargetModel and a Drafter on any backends
// (DESIGN.md "One round"): the pieces twinspan_round_bench times. Verify runs
// [pending, drafts...] padded to the asked rows with the drafts repeated (random weights accept
// nothing, yet the 27B round verifies 16 rows), or with RoundOptions::tree_nodes the drafter's
// best-first tree (its first rows - 1 drafts) as one tree forward; it selects greedily on the
// target's backend (TopK with k = 1, one download of the ids), commits the path greedy acceptance
// walks, and hands the kept rows' taps to the drafter through the host or, on one backend, in
// place (a tree's path gathered there first).
#ifndef TWINSPAN_TOOLS_GPU_ROUND_DRIVER_H_
#define TWINSPAN_TOOLS_GPU_ROUND_DRIVER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "kernels/backend/backend.h"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"

namespace twinspan::gpu {

struct RoundOptions {
  int64_t prompt = 300;  // random prompt tokens prefilled
  int64_t block = 0;     // draft block size; 0: the drafter's
  int64_t keep = 0;      // rows each Commit keeps; 0: as greedy acceptance says
  uint32_t seed = 1;     // of the prompt
  // The verify's taps stay in the target's backend (ForwardRequest::taps_out) and the drafter
  // copies them there (Drafter::AppendTapsInBackend). REQUIRES: both models on one backend.
  bool device_taps = false;
  // > 0: the drafter proposes trees of this many drafts and rounds verify them as trees.
  int64_t tree_nodes = 0;
};

// Most rows a verify takes (a tree of 63 drafts and its root).
inline constexpr int64_t kMaxRoundRows = 64;

// Not thread-safe. The models must outlive it.
class RoundDriver {
 public:
  RoundDriver(const target::TargetModel& target, const drafter::Drafter& drafter,
              const RoundOptions& options)
      : target_(target), drafter_(drafter), options_(options) {}

  // Prefills the prompt on the target, appends its taps to a fresh drafter stream and drafts the
  // first block. Errors of the models; InvalidArgument for a prompt below 1.
  absl::Status Prefill();
  // Forwards a window of `rows` rows (1..kMaxRoundRows) with the drafter's taps when `taps`, and
  // selects every row's argmax on the target's backend. A tree window takes the tree's first
  // rows - 1 drafts (InvalidArgument when it has fewer). REQUIRES: Prefill done, nothing pending.
  absl::Status Verify(int64_t rows, bool taps);
  // Commits the rows greedy acceptance keeps (or options.keep: a tree's first-child path of that
  // many rows); the last kept row's argmax becomes the pending token. With `synchronize`, waits
  // for the target's backend.
  absl::Status Commit(bool synchronize);
  // Commits nothing (after a Verify that only measures).
  absl::Status Discard() { return target_.Commit(*state_, 0); }
  // Appends the kept rows' taps and drafts the next block. REQUIRES: Commit after a tapped Verify.
  absl::Status AppendAndDraft();
  // Appends one tap row (the last tapped Verify's first, else the prompt's last) and drafts a
  // block (the draft alone).
  absl::Status AppendOneAndDraft();

  int64_t block() const { return block_; }
  int64_t target_length() const { return state_->length(); }
  int64_t drafter_length() const { return stream_->context_length(); }
  int64_t last_keep() const { return keep_; }
  const std::vector<int32_t>& proposals() const { return proposals_; }
  const std::vector<int32_t>& argmax() const { return argmax_; }

 private:
  absl::Status Draft();
  int64_t TapWidth() const { return drafter_.config().num_taps() * drafter_.config().hidden_size; }

  const target::TargetModel& target_;
  const drafter::Drafter& drafter_;
  const RoundOptions options_;
  std::unique_ptr<target::SequenceState> state_;
  std::unique_ptr<drafter::DraftStream> stream_;
  std::unique_ptr<backend::Buffer> logits_, top_values_, top_ids_, taps_out_;  // target's backend
  std::unique_ptr<backend::Buffer> kept_taps_;  // A tree's kept path's taps, back to back.
  bool taps_in_backend_ = false;                // The last Verify's taps are in taps_out_.
  int32_t pending_ = 0;
  int64_t block_ = 0, keep_ = 1;
  std::vector<int32_t> proposals_, tree_parents_, window_, argmax_;
  std::vector<int32_t> window_parents_;  // The last Verify's tree; empty for a chain.
  std::vector<int64_t> kept_rows_;       // The last Commit's path.
  std::vector<float> taps_, tap_row_;
};

}  // namespace twinspan::gpu

#endif  // TWINSPAN_TOOLS_GPU_ROUND_DRIVER_H_
