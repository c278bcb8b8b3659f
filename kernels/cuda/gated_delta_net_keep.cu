// Host side of GatedDeltaNetKeep (and so of GatedDeltaNet): validation, the choice between the
// register and the column kernel (by shape only, so the bits never depend on the row count), and
// the launch. Device code: gated_delta_net_kernel.cuh.
#include <cmath>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cpu/state_overlap.h"
#include "kernels/cuda/gated_delta_net_keep.cuh"
#include "kernels/cuda/gated_delta_net_kernel.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda {
namespace {

namespace gk = gdn_kernel;

bool Misaligned(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 != 0; }

absl::Status CheckDims(const cpu::GatedDeltaNetDims& d, int64_t rows) {
  if (rows < 0 || d.k_heads <= 0 || d.v_heads <= 0 || d.k_dim <= 0 || d.v_dim <= 0 ||
      d.v_heads % d.k_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GatedDeltaNetKeep: rows %d, k_heads %d, v_heads %d, k_dim %d, v_dim %d",
                        rows, d.k_heads, d.v_heads, d.k_dim, d.v_dim));
  }
  if (d.k_dim > gk::kMaxColumnKDim || d.v_heads > 65535 || d.v_dim > (1 << 24)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GatedDeltaNetKeep: k_dim %d (at most %d), v_heads %d (at most 65535) or v_dim %d too "
        "large for the CUDA op",
        d.k_dim, gk::kMaxColumnKDim, d.v_heads, d.v_dim));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status GatedDeltaNetKeep(const Context& ctx, const GatedDeltaNetWindow& w,
                               const cpu::GatedDeltaNetDims& dims) {
  ABSL_RETURN_IF_ERROR(CheckDims(dims, w.rows));
  if (w.keep_rows < 0 || w.keep_rows > w.rows) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GatedDeltaNetKeep: keep_rows %d is outside [0, rows = %d]", w.keep_rows, w.rows));
  }
  if (w.state_in == nullptr || (w.rows > 0 && (!w.qkv || !w.g || !w.beta))) {
    return absl::InvalidArgumentError(
        "GatedDeltaNetKeep: state_in, and qkv, g and beta for rows > 0, must be device pointers");
  }
  // The register kernel moves float4s; which kernel runs depends on the shape only.
  const bool registers = dims.v_dim % 4 == 0 && (dims.k_dim == 64 || dims.k_dim == 128);
  if (registers && (Misaligned(w.state_in) || Misaligned(w.state_out) || Misaligned(w.qkv) ||
                    Misaligned(w.out))) {
    return absl::InvalidArgumentError(
        "GatedDeltaNetKeep: for k_dim 64 or 128 and v_dim % 4 == 0, qkv, state_in, state_out and "
        "out must be 16-byte aligned");
  }
  const int64_t state_floats = dims.state_size();
  if (w.state_out != nullptr && cpu::StatesPartlyOverlap(w.state_in, w.state_out, state_floats)) {
    return absl::InvalidArgumentError(
        "GatedDeltaNetKeep: state_out overlaps state_in without being equal to it");
  }
  // In place with keep_rows 0 the state stays as it is: skip writing it back.
  float* state_out = w.state_out == w.state_in && w.keep_rows == 0 ? nullptr : w.state_out;
  const bool computes_out = w.out != nullptr && w.rows > 0;
  if (state_out == nullptr && !computes_out) return absl::OkStatus();

  gk::RecurrentParams p{};
  p.qkv = w.qkv;
  p.g = w.g;
  p.beta = w.beta;
  p.rows = w.rows;
  p.qkv_width = dims.qkv_width();
  p.k_heads = static_cast<int>(dims.k_heads);
  p.v_heads = static_cast<int>(dims.v_heads);
  p.k_dim = static_cast<int>(dims.k_dim);
  p.v_dim = static_cast<int>(dims.v_dim);
  p.q_scale = 1.0f / std::sqrt(static_cast<float>(dims.k_dim));  // As cpu::GatedDeltaNet.
  p.state_in = w.state_in;
  p.keep_rows = w.keep_rows;
  p.state_out = state_out;
  p.out = w.out;

  const dim3 grid(static_cast<unsigned>((dims.v_dim + gk::kBlockColumns - 1) / gk::kBlockColumns),
                  static_cast<unsigned>(dims.v_heads));
  if (registers && dims.k_dim == 128) {
    LaunchPdl(&gk::RegisterKernel<128>, grid, gk::kRegisterThreads, 0, ctx.stream, p);
  } else if (registers) {
    LaunchPdl(&gk::RegisterKernel<64>, grid, gk::kRegisterThreads, 0, ctx.stream, p);
  } else {
    const size_t smem = static_cast<size_t>(dims.k_dim) * gk::kBlockColumns * sizeof(float);
    LaunchPdl(&gk::ColumnKernel, grid, gk::kBlockColumns, smem, ctx.stream, p);
  }
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    return absl::InternalError(
        absl::StrFormat("GatedDeltaNetKeep: launch failed: %s", cudaGetErrorString(e)));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
