// Host side of GatedDeltaNetTree: validation, the depth-first schedule (which steps continue from
// the registers, which reload the start or a saved state, which save theirs), and the launch of
// the register or column tree kernel (chosen by shape, as GatedDeltaNet chooses).
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cpu/tree_rows.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gated_delta_net_tree.cuh"
#include "kernels/cuda/gated_delta_net_tree_kernel.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda {
namespace {

namespace gk = gdn_kernel;

bool Misaligned(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 != 0; }

// Rows with two or more children: their states are saved (slot = their rank among them).
std::vector<int16_t> SaveSlots(const int32_t* parents, int64_t rows, int64_t* slots) {
  std::vector<int> children(rows, 0);
  for (int64_t r = 1; r < rows; ++r) ++children[parents[r]];
  std::vector<int16_t> slot(rows, -1);
  *slots = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (children[r] > 1) slot[r] = static_cast<int16_t>((*slots)++);
  }
  return slot;
}

// Preorder, children in row order: each subtree's rows run back to back.
gk::TreeSchedule Schedule(const int32_t* parents, int64_t rows, float* saved) {
  int64_t slots = 0;
  const std::vector<int16_t> slot = SaveSlots(parents, rows, &slots);
  std::vector<std::vector<int64_t>> children(rows);
  for (int64_t r = 1; r < rows; ++r) children[parents[r]].push_back(r);
  gk::TreeSchedule s;
  s.saved = saved;
  std::vector<int64_t> stack = {0};
  int64_t step = 0, previous = -1;
  while (!stack.empty()) {
    const int64_t row = stack.back();
    stack.pop_back();
    const int64_t parent = parents[row];
    s.order.v[step] = static_cast<int16_t>(row);
    s.load.v[step] = parent < 0           ? gk::kFromStart
                     : parent == previous ? gk::kContinue
                                          : slot[parent];
    s.save.v[step] = slot[row];
    for (auto it = children[row].rbegin(); it != children[row].rend(); ++it) stack.push_back(*it);
    previous = row;
    ++step;
  }
  return s;
}

}  // namespace

size_t GatedDeltaNetTreeWorkspaceBytes(const int32_t* parents, int64_t rows,
                                       const cpu::GatedDeltaNetDims& dims) {
  int64_t slots = 0;
  SaveSlots(parents, rows, &slots);
  return static_cast<size_t>(slots * dims.state_size()) * sizeof(float);
}

absl::Status GatedDeltaNetTree(const Context& ctx, const float* qkv, const float* g,
                               const float* beta, const int32_t* parents, int64_t rows,
                               const cpu::GatedDeltaNetDims& dims, const float* state, float* out) {
  if (rows < 0 || dims.k_heads <= 0 || dims.v_heads <= 0 || dims.k_dim <= 0 || dims.v_dim <= 0 ||
      dims.v_heads % dims.k_heads != 0 || dims.k_dim > gk::kMaxColumnKDim || dims.v_heads > 65535) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GatedDeltaNetTree: rows %d, k_heads %d, v_heads %d, k_dim %d (at most %d), v_dim %d", rows,
        dims.k_heads, dims.v_heads, dims.k_dim, gk::kMaxColumnKDim, dims.v_dim));
  }
  ABSL_RETURN_IF_ERROR(cpu::CheckTreeParents("GatedDeltaNetTree", parents, rows));
  if (rows > gk::kMaxTreeRows) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GatedDeltaNetTree: a tree of %d rows exceeds the CUDA op's %d", rows, gk::kMaxTreeRows));
  }
  if (state == nullptr || qkv == nullptr || g == nullptr || beta == nullptr || out == nullptr) {
    return absl::InvalidArgumentError(
        "GatedDeltaNetTree: qkv, g, beta, state and out must be device pointers");
  }
  const bool registers = dims.v_dim % 4 == 0 && (dims.k_dim == 64 || dims.k_dim == 128);
  if (registers && (Misaligned(state) || Misaligned(qkv) || Misaligned(out))) {
    return absl::InvalidArgumentError(
        "GatedDeltaNetTree: for k_dim 64 or 128 and v_dim % 4 == 0, qkv, state and out must be "
        "16-byte aligned");
  }
  const size_t needed = GatedDeltaNetTreeWorkspaceBytes(parents, rows, dims);
  if (needed > 0 && (ctx.workspace == nullptr || ctx.workspace_bytes < needed ||
                     (registers && Misaligned(ctx.workspace)))) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "GatedDeltaNetTree: a workspace of %d bytes (16-byte aligned); the tree's branching rows "
        "need %d",
        ctx.workspace_bytes, needed));
  }
  gk::RecurrentParams p{};
  p.qkv = qkv;
  p.g = g;
  p.beta = beta;
  p.rows = rows;
  p.qkv_width = dims.qkv_width();
  p.k_heads = static_cast<int>(dims.k_heads);
  p.v_heads = static_cast<int>(dims.v_heads);
  p.k_dim = static_cast<int>(dims.k_dim);
  p.v_dim = static_cast<int>(dims.v_dim);
  p.q_scale = 1.0f / std::sqrt(static_cast<float>(dims.k_dim));  // As cpu::GatedDeltaNet.
  p.state_in = state;
  p.keep_rows = 0;
  p.state_out = nullptr;
  p.out = out;
  const gk::TreeSchedule schedule = Schedule(parents, rows, static_cast<float*>(ctx.workspace));
  const dim3 grid(static_cast<unsigned>((dims.v_dim + gk::kBlockColumns - 1) / gk::kBlockColumns),
                  static_cast<unsigned>(dims.v_heads));
  if (registers && dims.k_dim == 128) {
    LaunchPdl(&gk::RegisterTreeKernel<128>, grid, gk::kRegisterThreads, 0, ctx.stream, p, schedule);
  } else if (registers) {
    LaunchPdl(&gk::RegisterTreeKernel<64>, grid, gk::kRegisterThreads, 0, ctx.stream, p, schedule);
  } else {
    const size_t smem = static_cast<size_t>(dims.k_dim) * gk::kBlockColumns * sizeof(float);
    LaunchPdl(&gk::ColumnTreeKernel, grid, gk::kBlockColumns, smem, ctx.stream, p, schedule);
  }
  return LaunchStatus("GatedDeltaNetTree launch");
}

}  // namespace twinspan::cuda
