// Per-sequence state of a target model, in the model's backend memory: the committed length, the
// rows of the last forward that await Commit, and each layer's cache (a KV cache for attention
// layers; the conv window and recurrent state, with what rollback needs, for Gated DeltaNet).
#ifndef TWINSPAN_SERVICES_TARGET_SEQUENCE_STATE_H_
#define TWINSPAN_SERVICES_TARGET_SEQUENCE_STATE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "kernels/backend/backend.h"

namespace twinspan::target {

// A Gated DeltaNet layer's recurrent state (fp32, backend memory) and what Commit needs to roll it
// back. A forward reads the live state and writes its end state to the other buffer of each pair,
// so the live one stays the start state until Commit: keeping every row makes the end state live,
// keeping fewer replays them from the start, and nothing is ever copied. The forward's per-row
// inputs (the family chooses their layout) are kept for that replay.
// Not thread-safe; its owner serializes the backend calls.
class RecurrentState {
 public:
  // Zeroed live state of conv_floats and ssm_floats, nothing pending. Errors from the backend
  // (ResourceExhausted).
  static absl::StatusOr<std::unique_ptr<RecurrentState>> Create(backend::Backend& backend,
                                                                int64_t conv_floats,
                                                                int64_t ssm_floats);

  backend::Buffer& conv() { return *conv_[live_]; }  // Live conv window.
  backend::Buffer& ssm() { return *ssm_[live_]; }    // Live recurrent state.
  const backend::Buffer& conv() const { return *conv_[live_]; }
  const backend::Buffer& ssm() const { return *ssm_[live_]; }
  // Where a forward writes its end state.
  backend::Buffer& end_conv() { return *conv_[1 - live_]; }
  backend::Buffer& end_ssm() { return *ssm_[1 - live_]; }

  // Before a forward of `rows` rows (a tree's when `tree`: it writes no end state): makes room for
  // `replay_floats` floats of replay inputs, returning where they go. Backend errors.
  absl::StatusOr<float*> BeginForward(backend::Backend& backend, int64_t rows,
                                      int64_t replay_floats, bool tree = false);
  // Rows of the pending forward (0: none is pending) and its replay inputs.
  int64_t pending_rows() const { return pending_rows_; }
  // The pending forward was a tree: its end-state buffers hold nothing.
  bool pending_tree() const { return pending_tree_; }
  const float* replay() const { return replay_->floats(); }
  // The pending forward kept every row: its end state becomes live.
  void KeepEndState() { live_ = 1 - live_; }
  // Forgets the pending forward; its replay storage is kept for the next one.
  void EndForward() { pending_rows_ = 0; }

 private:
  RecurrentState() = default;

  std::unique_ptr<backend::Buffer> conv_[2], ssm_[2];
  int live_ = 0;
  std::unique_ptr<backend::Buffer> replay_;  // Grows to the largest forward seen.
  int64_t pending_rows_ = 0;
  bool pending_tree_ = false;
};

// One layer's cache: `kv` for attention layers, `recurrent` for Gated DeltaNet layers.
struct LayerState {
  std::unique_ptr<backend::KvCacheHandle> kv;
  std::unique_ptr<RecurrentState> recurrent;
};

// Owned by one stream; not thread-safe (one forward at a time per sequence).
class SequenceState {
 public:
  // `capacity` positions; `layers` from the family (one entry per decoder layer). `owner_mu`, when
  // given, is the owning model's lock on its backend: held while the layers' backend memory is
  // freed, so a state may be destroyed on any thread. It must outlive the state.
  SequenceState(int64_t capacity, std::vector<LayerState> layers, absl::Mutex* owner_mu = nullptr)
      : capacity_(capacity), layers_(std::move(layers)), owner_mu_(owner_mu) {}
  ~SequenceState();

  SequenceState(const SequenceState&) = delete;
  SequenceState& operator=(const SequenceState&) = delete;

  // Positions committed so far: the next forward's first row is at position length().
  int64_t length() const { return length_; }
  // Rows run by the last forward and not yet committed (0 when none).
  int64_t pending() const { return pending_; }
  int64_t capacity() const { return capacity_; }
  // True when the model holding `mu` made this state.
  bool OwnedBy(const absl::Mutex* mu) const { return owner_mu_ == mu; }

  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  LayerState& layer(int64_t i) { return layers_[i]; }
  const LayerState& layer(int64_t i) const { return layers_[i]; }

  // The pending forward's parents when it was a tree (kernels/cpu/tree_rows.h); empty for a chain.
  const std::vector<int32_t>& pending_parents() const { return pending_parents_; }

  // For families. CheckForward: FailedPrecondition when rows are pending; ResourceExhausted naming
  // the context when length() + rows exceeds capacity(); InvalidArgument for rows < 1.
  // BeginForward: the same checks, then marks the rows pending (a tree's with its parents).
  absl::Status CheckForward(int64_t rows) const;
  absl::Status BeginForward(int64_t rows, absl::Span<const int32_t> parents = {});
  // InvalidArgument unless `path` is a path of the pending forward: empty, 0..n-1 of a chain, or
  // from a tree's root down its parents.
  absl::Status CheckPath(absl::Span<const int64_t> path) const;
  // Keeps the first n_keep pending rows (attention KV past them becomes scratch).
  // InvalidArgument when n_keep is outside [0, pending()]. Recurrent layers are the family's job.
  absl::Status CommitRows(int64_t n_keep);
  // Marks the first `length` positions committed: a prefix whose caches were restored from the
  // prefix cache. FailedPrecondition unless the state is empty; ResourceExhausted naming the
  // context when length exceeds capacity(); InvalidArgument for length < 0.
  absl::Status Resume(int64_t length);

 private:
  int64_t capacity_;
  int64_t length_ = 0;
  int64_t pending_ = 0;
  std::vector<int32_t> pending_parents_;
  std::vector<LayerState> layers_;
  absl::Mutex* owner_mu_;
};

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_SEQUENCE_STATE_H_
