#include "services/target/qwen3_5_gdn_block.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace twinspan::target {
namespace {

constexpr size_t kFloat = sizeof(float);

absl::Status CheckStateSizes(const GdnBlockShape& shape, const RecurrentState& state) {
  if (state.conv().bytes() != static_cast<size_t>(shape.conv_state_size()) * kFloat ||
      state.ssm().bytes() != static_cast<size_t>(shape.ssm_state_size()) * kFloat) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Gated DeltaNet state has conv %d / ssm %d floats, the layer needs %d / %d",
                        state.conv().bytes() / kFloat, state.ssm().bytes() / kFloat,
                        shape.conv_state_size(), shape.ssm_state_size()));
  }
  return absl::OkStatus();
}

// Conv then recurrence over `rows` rows from the live state, which they advance in place, or
// whose successor they write to the end-state buffers (a forward: the live state stays the start
// state until Commit); core: [rows, v_heads * v_dim].
absl::Status RunRecurrence(backend::Backend& be, const GdnBlockShape& shape,
                           const GdnBlockHandles& w, const float* conv_in, const float* g,
                           const float* beta, int64_t rows, RecurrentState& state, bool to_end,
                           float* conv_out, float* core) {
  float* conv_end = to_end ? state.end_conv().floats() : state.conv().floats();
  float* ssm_end = to_end ? state.end_ssm().floats() : state.ssm().floats();
  ABSL_RETURN_IF_ERROR(be.CausalConv1d(conv_in, rows, shape.conv_channels(), w.conv->floats(),
                                       shape.conv_kernel, state.conv().floats(), conv_end,
                                       conv_out));
  return be.GatedDeltaNet(conv_out, g, beta, rows, shape.dims, state.ssm().floats(), ssm_end, core);
}

// The same over a tree's rows, each along its own path from the live state, which stays as it is
// (a tree has no one end state; its commit replays the kept path).
absl::Status RunTreeRecurrence(backend::Backend& be, const GdnBlockShape& shape,
                               const GdnBlockHandles& w, const float* conv_in, const float* g,
                               const float* beta, absl::Span<const int32_t> parents,
                               const RecurrentState& state, float* conv_out, float* core) {
  ABSL_RETURN_IF_ERROR(be.CausalConv1dTree(conv_in, parents, shape.conv_channels(),
                                           w.conv->floats(), shape.conv_kernel,
                                           state.conv().floats(), conv_out));
  return be.GatedDeltaNetTree(conv_out, g, beta, parents, shape.dims, state.ssm().floats(), core);
}

// in_proj_a's rows, then in_proj_b's: one weight whose outputs are each the same dot product.
absl::StatusOr<cpu::LinearWeight> StackRows(const cpu::LinearWeight& a,
                                            const cpu::LinearWeight& b) {
  if (a.empty() || b.empty() || a.is_exl3() || b.is_exl3() || a.is_q4() || b.is_q4() ||
      a.in_features() != b.in_features()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Gated DeltaNet in_proj_a [%d, %d] and in_proj_b [%d, %d] must be dense, of one width",
        a.out_features(), a.in_features(), b.out_features(), b.in_features()));
  }
  const int64_t k = a.in_features();
  std::vector<float> values;
  values.reserve(static_cast<size_t>((a.out_features() + b.out_features()) * k));
  for (const cpu::LinearWeight* w : {&a, &b}) {
    for (int64_t j = 0; j < w->out_features(); ++j) {
      values.insert(values.end(), w->dense_row(j), w->dense_row(j) + k);
    }
  }
  return cpu::LinearWeight::Dense(a.out_features() + b.out_features(), k, std::move(values));
}

}  // namespace

absl::StatusOr<GdnBlockHandles> UploadGdnBlock(backend::Backend& backend,
                                               const GdnBlockWeights& w) {
  GdnBlockHandles h;
  ABSL_ASSIGN_OR_RETURN(h.in_proj_qkv, backend.UploadLinear(w.in_proj_qkv));
  ABSL_ASSIGN_OR_RETURN(h.in_proj_z, backend.UploadLinear(w.in_proj_z));
  ABSL_ASSIGN_OR_RETURN(const cpu::LinearWeight ab, StackRows(w.in_proj_a, w.in_proj_b));
  ABSL_ASSIGN_OR_RETURN(h.in_proj_ab, backend.UploadLinear(ab));
  ABSL_ASSIGN_OR_RETURN(h.out_proj, backend.UploadLinear(w.out_proj));
  ABSL_ASSIGN_OR_RETURN(h.conv, backend.UploadFloats(w.conv));
  ABSL_ASSIGN_OR_RETURN(h.a_log, backend.UploadFloats(w.a_log));
  ABSL_ASSIGN_OR_RETURN(h.dt_bias, backend.UploadFloats(w.dt_bias));
  ABSL_ASSIGN_OR_RETURN(h.norm, backend.UploadFloats(w.norm));
  return h;
}

absl::StatusOr<std::unique_ptr<RecurrentState>> NewGdnState(backend::Backend& backend,
                                                            const GdnBlockShape& shape) {
  return RecurrentState::Create(backend, shape.conv_state_size(), shape.ssm_state_size());
}

absl::Status GdnBlockForward(backend::Backend& be, const GdnBlockShape& shape,
                             const GdnBlockHandles& w, const float* x, const LayerRows& rows,
                             absl::Span<LayerState* const> states, float* out) {
  for (LayerState* state : states) ABSL_RETURN_IF_ERROR(CheckStateSizes(shape, *state->recurrent));
  const int64_t n = rows.rows, channels = shape.conv_channels(), v_heads = shape.dims.v_heads;
  const int64_t value_width = shape.value_width();
  // One sequence: the conv's input, g and beta go straight into its replay storage, in the layout
  // a commit replays from, instead of being copied there (3 small copies a layer).
  const bool direct = rows.segments.size() == 1 && rows.segments[0].rows == n;
  float* replay = nullptr;
  std::unique_ptr<backend::Buffer> scratch;  // Several sequences: copied to each replay below.
  if (direct) {
    ABSL_ASSIGN_OR_RETURN(
        replay, states[0]->recurrent->BeginForward(be, n, n * shape.replay_floats_per_row(),
                                                   !rows.segments[0].parents.empty()));
  } else {
    ABSL_ASSIGN_OR_RETURN(scratch, be.AllocateFloats(n * (channels + 2 * v_heads)));
  }
  float* qkv = direct ? replay : scratch->floats();
  float* g = qkv + n * channels;
  float* beta = g + n * v_heads;
  ABSL_ASSIGN_OR_RETURN(auto z, be.AllocateFloats(n * value_width));
  ABSL_ASSIGN_OR_RETURN(auto ab, be.AllocateFloats(n * 2 * v_heads));  // Row t: a, then b.
  ABSL_ASSIGN_OR_RETURN(auto conv_out, be.AllocateFloats(n * channels));
  ABSL_ASSIGN_OR_RETURN(auto core, be.AllocateFloats(n * value_width));
  const backend::LinearOutput in_proj[] = {{w.in_proj_qkv.get(), qkv, channels},
                                           {w.in_proj_z.get(), z->floats(), value_width},
                                           {w.in_proj_ab.get(), ab->floats(), 2 * v_heads}};
  ABSL_RETURN_IF_ERROR(be.Linears(x, shape.hidden, n, in_proj));
  ABSL_RETURN_IF_ERROR(be.GatedDeltaNetGates(ab->floats(), ab->floats() + v_heads, 2 * v_heads, n,
                                             v_heads, w.a_log->floats(), w.dt_bias->floats(), g,
                                             beta));
  for (size_t s = 0; s < rows.segments.size(); ++s) {  // Each sequence from its own state.
    const RowSegment& seg = rows.segments[s];
    const int64_t r0 = seg.first_row, m = seg.rows;
    RecurrentState& state = *states[s]->recurrent;
    const float* seg_qkv = qkv + r0 * channels;
    const float* seg_g = g + r0 * v_heads;
    const float* seg_beta = beta + r0 * v_heads;
    if (!direct) {
      ABSL_ASSIGN_OR_RETURN(
          float* saved,
          state.BeginForward(be, m, m * shape.replay_floats_per_row(), !seg.parents.empty()));
      ABSL_RETURN_IF_ERROR(be.Copy(saved, seg_qkv, m * channels * kFloat));
      ABSL_RETURN_IF_ERROR(be.Copy(saved + m * channels, seg_g, m * v_heads * kFloat));
      ABSL_RETURN_IF_ERROR(
          be.Copy(saved + m * (channels + v_heads), seg_beta, m * v_heads * kFloat));
    }
    float* seg_conv_out = conv_out->floats() + r0 * channels;
    float* seg_core = core->floats() + r0 * value_width;
    ABSL_RETURN_IF_ERROR(seg.parents.empty()
                             ? RunRecurrence(be, shape, w, seg_qkv, seg_g, seg_beta, m, state,
                                             /*to_end=*/true, seg_conv_out, seg_core)
                             : RunTreeRecurrence(be, shape, w, seg_qkv, seg_g, seg_beta,
                                                 seg.parents, state, seg_conv_out, seg_core));
  }
  ABSL_RETURN_IF_ERROR(be.GatedRmsNorm(core->floats(), z->floats(), n * v_heads, shape.dims.v_dim,
                                       w.norm->floats(), shape.eps, core->floats()));
  return be.Linear(core->floats(), value_width, n, *w.out_proj, out, shape.hidden);
}

absl::Status GdnBlockCommit(backend::Backend& be, const GdnBlockShape& shape,
                            const GdnBlockHandles& w, RecurrentState& state,
                            absl::Span<const int64_t> path, int64_t pending) {
  const int64_t n_keep = static_cast<int64_t>(path.size());
  if (n_keep == 0 && state.pending_rows() == 0) {
    return absl::OkStatus();  // A forward that failed before this layer: nothing to undo.
  }
  if (n_keep > pending || state.pending_rows() != pending) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Gated DeltaNet commit of %d rows of %d pending, with %d rows saved",
                        n_keep, pending, state.pending_rows()));
  }
  bool prefix = true;
  for (int64_t i = 0; i < n_keep; ++i) prefix = prefix && path[i] == i;
  absl::Status status = absl::OkStatus();
  if (n_keep == pending && prefix && !state.pending_tree()) {
    state.KeepEndState();
  } else if (n_keep > 0) {  // The live state is still the start: replay the kept rows on it.
    const int64_t channels = shape.conv_channels(), v_heads = shape.dims.v_heads;
    const float* conv_in = state.replay();
    const float* g = conv_in + pending * channels;
    const float* beta = g + pending * v_heads;
    // One buffer for the path's gathered inputs (a tree), the conv output and the (unused) core
    // output: the commit is host-bound.
    const int64_t gathered = prefix ? 0 : n_keep * (channels + 2 * v_heads);
    absl::StatusOr<std::unique_ptr<backend::Buffer>> scratch =
        be.AllocateFloats(gathered + n_keep * (channels + shape.value_width()));
    status = scratch.status();
    float* conv_out = scratch.ok() ? (*scratch)->floats() + gathered : nullptr;
    if (status.ok() && !prefix) {  // The kept path's inputs, back to back.
      float* to = (*scratch)->floats();
      status = be.GatherRows(conv_in, channels, path, channels, to, channels);
      if (status.ok())
        status = be.GatherRows(g, v_heads, path, v_heads, to + n_keep * channels, v_heads);
      if (status.ok()) {
        status = be.GatherRows(beta, v_heads, path, v_heads, to + n_keep * (channels + v_heads),
                               v_heads);
      }
      conv_in = to;
      g = to + n_keep * channels;
      beta = g + n_keep * v_heads;
    }
    if (status.ok()) {
      status = RunRecurrence(be, shape, w, conv_in, g, beta, n_keep, state, /*to_end=*/false,
                             conv_out, conv_out + n_keep * channels);
    }
  }
  state.EndForward();  // Nothing pending now, whatever happened.
  return status;
}

absl::Status GdnBlockCommit(backend::Backend& be, const GdnBlockShape& shape,
                            const GdnBlockHandles& w, RecurrentState& state, int64_t n_keep,
                            int64_t pending) {
  if (n_keep < 0 || n_keep > pending) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Gated DeltaNet commit of %d rows of %d pending", n_keep, pending));
  }
  std::vector<int64_t> path(n_keep);
  for (int64_t i = 0; i < n_keep; ++i) path[i] = i;
  return GdnBlockCommit(be, shape, w, state, path, pending);
}

}  // namespace twinspan::target
