// Per-sequence state of a target model: the committed length, the rows of the last forward that
// await Commit, and each layer's cache (KV for attention layers, conv window + recurrent state with
// per-row snapshots for Gated DeltaNet layers).
#ifndef TWINSPAN_SERVICES_TARGET_SEQUENCE_STATE_H_
#define TWINSPAN_SERVICES_TARGET_SEQUENCE_STATE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/cpu/kv_cache.h"

namespace twinspan::target {

// A Gated DeltaNet layer's recurrent state, fp32. The family chooses the layouts; this holds the
// live state plus one snapshot per row of the pending forward so Commit(n) can restore the state
// after row n - 1 (equal to serial decoding's state, bit for bit).
struct RecurrentState {
  std::vector<float> conv;        // Live conv window (e.g. [channels, kernel - 1], oldest first).
  std::vector<float> ssm;         // Live recurrent state (e.g. [v_heads, k_dim, v_dim]).
  std::vector<float> conv_rows;   // [rows of the pending forward, conv.size()] snapshots.
  std::vector<float> ssm_rows;    // [rows of the pending forward, ssm.size()] snapshots.
  std::vector<float> conv_start;  // The live state before the pending forward, for Commit(0).
  std::vector<float> ssm_start;

  // Zeroed state of the given sizes, no snapshots.
  static RecurrentState Zeros(size_t conv_size, size_t ssm_size);

  // Saves the live state as it is before a forward (Commit(0) restores it).
  void SaveStart();
  void RestoreStart();
  // Copies the live state into snapshot `row`, growing the snapshot storage as needed.
  void SaveRow(int64_t row);
  // Makes snapshot `row` the live state. REQUIRES: SaveRow(row) ran since the last forward began.
  void RestoreRow(int64_t row);
};

// One layer's cache: `kv` for attention layers, `recurrent` for Gated DeltaNet layers.
struct LayerState {
  std::unique_ptr<cpu::KvCache> kv;
  std::unique_ptr<RecurrentState> recurrent;
};

// Owned by one stream; not thread-safe (one forward at a time per sequence). Movable.
class SequenceState {
 public:
  // `capacity` positions; `layers` from the family (one entry per decoder layer).
  SequenceState(int64_t capacity, std::vector<LayerState> layers)
      : capacity_(capacity), layers_(std::move(layers)) {}

  SequenceState(const SequenceState&) = delete;
  SequenceState& operator=(const SequenceState&) = delete;

  // Positions committed so far: the next forward's first row is at position length().
  int64_t length() const { return length_; }
  // Rows run by the last forward and not yet committed (0 when none).
  int64_t pending() const { return pending_; }
  int64_t capacity() const { return capacity_; }

  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  LayerState& layer(int64_t i) { return layers_[i]; }
  const LayerState& layer(int64_t i) const { return layers_[i]; }

  // For families. BeginForward: FailedPrecondition when rows are pending; ResourceExhausted naming
  // the context when length() + rows exceeds capacity(); InvalidArgument for rows < 1.
  absl::Status BeginForward(int64_t rows);
  // Keeps the first n_keep pending rows (attention KV past them becomes scratch).
  // InvalidArgument when n_keep is outside [0, pending()]. Recurrent layers are the family's job.
  absl::Status CommitRows(int64_t n_keep);

 private:
  int64_t capacity_;
  int64_t length_ = 0;
  int64_t pending_ = 0;
  std::vector<LayerState> layers_;
};

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_SEQUENCE_STATE_H_
