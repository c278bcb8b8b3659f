// Host side of GatedDeltaNet: the twin of cpu::GatedDeltaNet, one GatedDeltaNetKeep window that
// keeps every row.
#include "absl/strings/str_format.h"
#include "kernels/cuda/gated_delta_net.cuh"
#include "kernels/cuda/gated_delta_net_keep.cuh"

namespace twinspan::cuda {

absl::Status GatedDeltaNet(const Context& ctx, const float* qkv, const float* g, const float* beta,
                           int64_t rows, const cpu::GatedDeltaNetDims& dims, const float* state_in,
                           float* state_out, float* out) {
  if (rows < 0 || dims.k_heads <= 0 || dims.v_heads <= 0 || dims.k_dim <= 0 || dims.v_dim <= 0 ||
      dims.v_heads % dims.k_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GatedDeltaNet: rows %d, k_heads %d, v_heads %d, k_dim %d, v_dim %d", rows,
                        dims.k_heads, dims.v_heads, dims.k_dim, dims.v_dim));
  }
  if (state_in == nullptr || state_out == nullptr || (rows > 0 && out == nullptr)) {
    return absl::InvalidArgumentError(
        "GatedDeltaNet: state_in, state_out and out must be device pointers");
  }
  GatedDeltaNetWindow window;
  window.qkv = qkv;
  window.g = g;
  window.beta = beta;
  window.rows = rows;
  window.state_in = state_in;
  window.keep_rows = rows;
  window.state_out = state_out;
  window.out = out;
  return GatedDeltaNetKeep(ctx, window, dims);
}

}  // namespace twinspan::cuda
