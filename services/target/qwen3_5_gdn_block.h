// The Gated DeltaNet sublayer of Qwen3.5 (HF Qwen3_5GatedDeltaNet), run row by row as decoding
// does, with the per-row inputs kept so Commit can replay the kept rows from the pre-forward state.
#ifndef TWINSPAN_SERVICES_TARGET_QWEN3_5_GDN_BLOCK_H_
#define TWINSPAN_SERVICES_TARGET_QWEN3_5_GDN_BLOCK_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/gated_delta_net.h"
#include "kernels/cpu/linear.h"
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
};

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

// A zeroed RecurrentState of the block's sizes.
RecurrentState NewGdnState(const GdnBlockShape& shape);

// out[rows, hidden] = the block applied to the normed input x[rows, hidden], advancing `state` by
// the rows. Saves the pre-forward state (SaveStart) and, for GdnReplay, each row's conv input in
// state.conv_rows ([rows, channels]) and its g and beta in state.ssm_rows ([g rows x v_heads |
// beta rows x v_heads]). InvalidArgument when state's sizes disagree with `shape`; op errors.
absl::Status GdnBlockForward(const cpu::Context& ctx, const GdnBlockShape& shape,
                             const GdnBlockWeights& weights, const float* x, int64_t rows,
                             RecurrentState& state, float* out);

// Leaves `state` as serial decoding of the first n_keep of the last forward's `pending` rows
// would: unchanged for n_keep == pending, the saved start for 0, else the start replayed through
// the kept rows with the same ops (bit-identical). Clears the saved rows. Commit(0) with no saved
// rows (a forward that failed before reaching this layer) changes nothing. InvalidArgument when
// n_keep is outside [0, pending] or the saved rows do not cover the pending rows.
absl::Status GdnBlockCommit(const cpu::Context& ctx, const GdnBlockShape& shape,
                            const GdnBlockWeights& weights, RecurrentState& state, int64_t n_keep,
                            int64_t pending);

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_QWEN3_5_GDN_BLOCK_H_
