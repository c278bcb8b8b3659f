#include "services/target/qwen3_5_gdn_block.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cpu/causal_conv1d.h"
#include "kernels/cpu/gated_rms_norm.h"

namespace twinspan::target {
namespace {

absl::Status CheckStateSizes(const GdnBlockShape& shape, const RecurrentState& state) {
  if (static_cast<int64_t>(state.conv.size()) != shape.conv_state_size() ||
      static_cast<int64_t>(state.ssm.size()) != shape.ssm_state_size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Gated DeltaNet state has conv %d / ssm %d floats, the layer needs %d / %d",
        state.conv.size(), state.ssm.size(), shape.conv_state_size(), shape.ssm_state_size()));
  }
  return absl::OkStatus();
}

// Conv then recurrence over `rows` rows from the live state; `core` gets [rows, v_heads * v_dim].
absl::Status RunRecurrence(const cpu::Context& ctx, const GdnBlockShape& shape,
                           const GdnBlockWeights& weights, const float* conv_in, const float* g,
                           const float* beta, int64_t rows, RecurrentState& state,
                           std::vector<float>& core) {
  std::vector<float> conv_out(rows * shape.conv_channels());
  ABSL_RETURN_IF_ERROR(cpu::CausalConv1d(ctx, conv_in, rows, shape.conv_channels(),
                                         weights.conv.data(), shape.conv_kernel, state.conv.data(),
                                         conv_out.data()));
  core.resize(rows * shape.value_width());
  return cpu::GatedDeltaNet(ctx, conv_out.data(), g, beta, rows, shape.dims, state.ssm.data(),
                            core.data());
}

}  // namespace

RecurrentState NewGdnState(const GdnBlockShape& shape) {
  return RecurrentState::Zeros(shape.conv_state_size(), shape.ssm_state_size());
}

absl::Status GdnBlockForward(const cpu::Context& ctx, const GdnBlockShape& shape,
                             const GdnBlockWeights& weights, const float* x, int64_t rows,
                             RecurrentState& state, float* out) {
  ABSL_RETURN_IF_ERROR(CheckStateSizes(shape, state));
  const int64_t channels = shape.conv_channels();
  const int64_t v_heads = shape.dims.v_heads;
  state.SaveStart();
  // The replay inputs: conv input per row, then g and beta per row.
  state.conv_rows.resize(rows * channels);
  state.ssm_rows.resize(2 * rows * v_heads);
  float* g = state.ssm_rows.data();
  float* beta = g + rows * v_heads;
  std::vector<float> z(rows * shape.value_width()), a(rows * v_heads), b(rows * v_heads);
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx, x, rows, weights.in_proj_qkv, state.conv_rows.data()));
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx, x, rows, weights.in_proj_z, z.data()));
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx, x, rows, weights.in_proj_a, a.data()));
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx, x, rows, weights.in_proj_b, b.data()));
  ABSL_RETURN_IF_ERROR(cpu::GatedDeltaNetGates(ctx, a.data(), b.data(), rows, v_heads,
                                               weights.a_log.data(), weights.dt_bias.data(), g,
                                               beta));
  std::vector<float> core;
  ABSL_RETURN_IF_ERROR(
      RunRecurrence(ctx, shape, weights, state.conv_rows.data(), g, beta, rows, state, core));
  ABSL_RETURN_IF_ERROR(cpu::GatedRmsNorm(ctx, core.data(), z.data(), rows * v_heads,
                                         shape.dims.v_dim, weights.norm.data(), shape.eps,
                                         core.data()));
  return cpu::Linear(ctx, core.data(), rows, weights.out_proj, out);
}

absl::Status GdnBlockCommit(const cpu::Context& ctx, const GdnBlockShape& shape,
                            const GdnBlockWeights& weights, RecurrentState& state, int64_t n_keep,
                            int64_t pending) {
  const int64_t channels = shape.conv_channels();
  const int64_t v_heads = shape.dims.v_heads;
  if (n_keep == 0 && state.conv_rows.empty() && state.ssm_rows.empty()) {
    return absl::OkStatus();  // A forward that failed before this layer: nothing to undo.
  }
  if (n_keep < 0 || n_keep > pending ||
      static_cast<int64_t>(state.conv_rows.size()) != pending * channels ||
      static_cast<int64_t>(state.ssm_rows.size()) != 2 * pending * v_heads) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Gated DeltaNet commit of %d rows of %d pending, with %d conv and %d gate floats saved",
        n_keep, pending, state.conv_rows.size(), state.ssm_rows.size()));
  }
  absl::Status status = absl::OkStatus();
  if (n_keep < pending) {
    state.RestoreStart();
    if (n_keep > 0) {
      const float* g = state.ssm_rows.data();
      const float* beta = g + pending * v_heads;
      std::vector<float> core;
      status =
          RunRecurrence(ctx, shape, weights, state.conv_rows.data(), g, beta, n_keep, state, core);
    }
  }
  // Empty replay rows mark "no forward pending" for the next commit.
  state.conv_rows.clear();
  state.ssm_rows.clear();
  return status;
}

}  // namespace twinspan::target
