// The Gated DeltaNet sublayer of Qwen3.5 (HF Qwen3_5GatedDeltaNet), run row by row as decoding
// does, with the per-row inputs kept so Commit can replay the kept rows from the pre-forward state.
#ifndef TWINSPAN_SERVICES_TARGET_QWEN3_5_GDN_BLOCK_H_
#define TWINSPAN_SERVICES_TARGET_QWEN3_5_GDN_BLOCK_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/backend/backend.h"
#include "kernels/cpu/gated_delta_net.h"
#include "kernels/cpu/linear.h"
#include "services/target/layer_rows.h"
#include "services/target/sequence_state.h"

namespace twinspan::target {

struct GdnBlockShape {
  int64_t hidden = 0;
  cpu::GatedDeltaNetDims dims;  // Key/value heads and widths.
  int64_t conv_kernel = 0;      // linear_conv_kernel_dim.
  float eps = 1e-6f;            // The gated norm's epsilon (rms_norm_eps).

  int64_t conv_channels() const { return dims.qkv_width(); }
  int64_t value_width() const { return dims.v_heads * dims.v_dim; }
  // Sizes of RecurrentState::conv ([conv_kernel - 1, channels]) and ::ssm ([v_heads, k, v]).
  int64_t conv_state_size() const { return (conv_kernel - 1) * conv_channels(); }
  int64_t ssm_state_size() const { return dims.state_size(); }
  // Replay inputs per row: its conv input, g and beta.
  int64_t replay_floats_per_row() const { return conv_channels() + 2 * dims.v_heads; }
};

// As loaded (host memory).
struct GdnBlockWeights {
  cpu::LinearWeight in_proj_qkv;  // [2 * k_heads * k_dim + v_heads * v_dim, hidden]
  cpu::LinearWeight in_proj_z;    // [v_heads * v_dim, hidden]
  cpu::LinearWeight in_proj_a;    // [v_heads, hidden]
  cpu::LinearWeight in_proj_b;    // [v_heads, hidden]
  std::vector<float> conv;        // [channels, conv_kernel] (HF conv1d.weight [C, 1, K])
  std::vector<float> a_log;       // [v_heads]
  std::vector<float> dt_bias;     // [v_heads]
  std::vector<float> norm;        // [v_dim], used as stored (this norm is not zero-centred)
  cpu::LinearWeight out_proj;     // [hidden, v_heads * v_dim]
};

// The same weights in a backend's memory; in_proj_ab is in_proj_a's rows then in_proj_b's, so one
// launch projects both.
struct GdnBlockHandles {
  std::unique_ptr<backend::LinearHandle> in_proj_qkv, in_proj_z, in_proj_ab, out_proj;
  std::unique_ptr<backend::Buffer> conv, a_log, dt_bias, norm;
};

// InvalidArgument unless in_proj_a and in_proj_b are dense with the same inputs; backend errors
// (ResourceExhausted).
absl::StatusOr<GdnBlockHandles> UploadGdnBlock(backend::Backend& backend,
                                               const GdnBlockWeights& weights);

// A zeroed RecurrentState of the block's sizes.
absl::StatusOr<std::unique_ptr<RecurrentState>> NewGdnState(backend::Backend& backend,
                                                            const GdnBlockShape& shape);

// out[rows, hidden] = the block applied to the normed input x[rows, hidden] (backend memory); for
// each segment s, writes states[s]->recurrent's state after the segment's rows to its end-state
// buffers (the live state stays the start until GdnBlockCommit; a tree segment, each row along
// its own path, writes none) and keeps each row's replay inputs ([rows, channels] conv input,
// then [rows, v_heads] g, then [rows, v_heads] beta).
// InvalidArgument when a state's sizes disagree with `shape`; op errors.
absl::Status GdnBlockForward(backend::Backend& backend, const GdnBlockShape& shape,
                             const GdnBlockHandles& weights, const float* x, const LayerRows& rows,
                             absl::Span<LayerState* const> states, float* out);

// Leaves `state` as serial decoding of the first n_keep of the last forward's `pending` rows
// would: the forward's end state for n_keep == pending, the start for 0, else the start replayed
// through the kept rows with the same ops (bit-identical). Forgets the pending forward. Commit(0)
// with nothing pending (a forward that failed before reaching this layer) changes nothing.
// InvalidArgument when n_keep is outside [0, pending] or the pending rows are not `pending`.
absl::Status GdnBlockCommit(backend::Backend& backend, const GdnBlockShape& shape,
                            const GdnBlockHandles& weights, RecurrentState& state, int64_t n_keep,
                            int64_t pending);

// The same keeping the rows of `path` (SequenceState::CheckPath's): the start replayed through
// them, gathered first unless they are 0..n-1. A tree forward always replays.
absl::Status GdnBlockCommit(backend::Backend& backend, const GdnBlockShape& shape,
                            const GdnBlockHandles& weights, RecurrentState& state,
                            absl::Span<const int64_t> path, int64_t pending);

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_QWEN3_5_GDN_BLOCK_H_
