#include "kernels/cpu/trellis_encode.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/exl3/codebook.h"
#include "common/exl3/tile_decode.h"
#include "kernels/cpu/trellis_step.h"

namespace twinspan::cpu {
namespace {

constexpr int kPositions = exl3::kTileWeights;
constexpr float kInf = std::numeric_limits<float>::infinity();
// Pass 1's positions, centred on the ring's wrap: all 256 as exllamav3 runs them. (Measured on
// Gaussian tiles, 128 would save a quarter of the work for +0.2% MSE at K = 4, +0.6% at K = 2.)
constexpr int kFirstPass = kPositions;

std::vector<float> CodebookTable(exl3::Codebook codebook) {
  std::vector<float> table(size_t{1} << exl3::kStateBits);
  for (uint32_t s = 0; s < table.size(); ++s) {
    switch (codebook) {
      case exl3::Codebook::k3Inst:
        table[s] = exl3::CodebookValue<exl3::Codebook::k3Inst>(s);
        break;
      case exl3::Codebook::kMcg:
        table[s] = exl3::CodebookValue<exl3::Codebook::kMcg>(s);
        break;
      case exl3::Codebook::kMul1:
        table[s] = exl3::CodebookValue<exl3::Codebook::kMul1>(s);
        break;
    }
  }
  return table;
}

// Walks the kept cost rows back from out-edge `edge` after step `first` down to step `last`,
// recomputing each step's best k exactly as the forward did; writes the states when `states` is
// set. Returns the edge entering step `last`. Step i encodes position (i + roll) mod 256.
int Traceback(const trellis::StepShape& shape, const float* values, const float* target,
              const float* history, int roll, int edge, int first, int last, uint16_t* states) {
  for (int i = first; i >= last; --i) {
    const int p = (i + roll) & (kPositions - 1);
    const float* prev = history + static_cast<size_t>(i) * shape.row_floats;
    float best = kInf;
    int best_state = edge;
    for (int k = 0; k < shape.codes; ++k) {
      const int s = (k << shape.state_shift) | edge;
      const float d = values[s] - target[p];
      const float c = std::fma(d, d, prev[shape.Index(s >> shape.bits)]);
      if (c < best) {
        best = c;
        best_state = s;
      }
    }
    if (states != nullptr) states[p] = static_cast<uint16_t>(best_state);
    edge = best_state >> shape.bits;
  }
  return edge;
}

// `lanes` tiles (1 or 2) through both passes together; history[t] holds 257 cost rows of
// shape.row_floats floats for tile t.
void EncodeTiles(const trellis::StepShape& shape, const trellis::Step& step,
                 const trellis::StepTables& tables, int lanes, const float* const* targets,
                 float* const* history, uint16_t* const* states, float* const* values) {
  const size_t row = static_cast<size_t>(shape.row_floats);
  const trellis::StepFn fn = lanes == 2 ? step.pair : step.one;
  float x[2];
  const float* prev[2];
  float* next[2];
  const auto run_pass = [&](int roll, int steps) {
    for (int i = 0; i < steps; ++i) {
      for (int t = 0; t < lanes; ++t) {
        x[t] = targets[t][(i + roll) % kPositions];
        prev[t] = history[t] + i * row;
        next[t] = history[t] + (i + 1) * row;
      }
      fn(tables, x, prev, next);
    }
  };
  // Pass 1: every start allowed, over kFirstPass positions centred on the ring's wrap.
  for (int t = 0; t < lanes; ++t) std::fill(history[t], history[t] + row, 0.0f);
  run_pass(kPositions - kFirstPass / 2, kFirstPass);
  int ring_edge[2];
  for (int t = 0; t < lanes; ++t) {
    const float* end = history[t] + kFirstPass * row;
    int end_edge = 0;
    for (int e = 1; e < shape.edges; ++e) {
      if (end[shape.Index(e)] < end[shape.Index(end_edge)]) end_edge = e;
    }
    ring_edge[t] =
        Traceback(shape, tables.values, targets[t], history[t], kPositions - kFirstPass / 2,
                  end_edge, kFirstPass - 1, kFirstPass / 2, nullptr);
    // Pass 2 starts pinned to that edge.
    std::fill(history[t], history[t] + row, kInf);
    history[t][shape.Index(ring_edge[t])] = 0.0f;
  }
  run_pass(0, kPositions);
  for (int t = 0; t < lanes; ++t) {
    Traceback(shape, tables.values, targets[t], history[t], 0, ring_edge[t], kPositions - 1, 0,
              states[t]);
    for (int p = 0; p < kPositions; ++p) values[t][p] = tables.values[states[t][p]];
  }
}

absl::Status Encode(const Context& ctx, const float* tiles, int64_t num_tiles,
                    const TrellisEncodeParams& params, uint16_t* states, float* values,
                    bool vector_path) {
  if (absl::Status s = ValidateTrellisEncode(tiles, num_tiles, params, states, values); !s.ok()) {
    return s;
  }
  if (num_tiles == 0) return absl::OkStatus();
  const std::vector<float> table = CodebookTable(params.codebook);
  const trellis::StepShape shape = trellis::StepShape::For(params.bits);
  const trellis::Step step =
      vector_path ? trellis::FastStep(params.bits) : trellis::ScalarStep(params.bits);
  std::vector<float> ordered(table.size());
  step.order(table.data(), ordered.data());
  const trellis::StepTables tables{table.data(), ordered.data()};
  // Few large chunks: each allocates its cost rows once (2 x 4 MB at K = 4).
  const int threads = ctx.pool == nullptr ? 1 : ctx.pool->num_threads();
  // Pairs of tiles are the unit of work (the last may be single), so results never depend on how
  // the pool splits them.
  const int64_t num_pairs = (num_tiles + 1) / 2;
  const int64_t grain = std::max<int64_t>(1, num_pairs / (int64_t{4} * threads));
  ParallelFor(ctx.pool, num_pairs, grain, [&](int64_t begin, int64_t end) {
    // The second tile's rows start 64 floats later than a whole number of pages, so the two
    // tiles' reads do not share L1 sets.
    const size_t rows = static_cast<size_t>(kPositions + 1) * shape.row_floats;
    const size_t second = (rows + 1023) / 1024 * 1024 + 64;
    std::vector<float> scratch(second + rows);
    float* history[2] = {scratch.data(), scratch.data() + second};
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t t0 = 2 * pair;
      const int lanes = t0 + 1 < num_tiles ? 2 : 1;
      const float* targets[2] = {tiles + t0 * kPositions, tiles + (t0 + 1) * kPositions};
      uint16_t* out_states[2] = {states + t0 * kPositions, states + (t0 + 1) * kPositions};
      float* out_values[2] = {values + t0 * kPositions, values + (t0 + 1) * kPositions};
      EncodeTiles(shape, step, tables, lanes, targets, history, out_states, out_values);
    }
  });
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateTrellisEncode(const float* tiles, int64_t num_tiles,
                                   const TrellisEncodeParams& params, const uint16_t* states,
                                   const float* values) {
  if (params.bits < exl3::kMinBits || params.bits > exl3::kMaxBits) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TrellisEncode: bits %d outside 1..8", params.bits));
  }
  if (num_tiles < 0 ||
      (num_tiles > 0 && (tiles == nullptr || states == nullptr || values == nullptr))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TrellisEncode: %d tiles with a null pointer or a negative count", num_tiles));
  }
  return absl::OkStatus();
}

absl::Status TrellisEncode(const Context& ctx, const float* tiles, int64_t num_tiles,
                           const TrellisEncodeParams& params, uint16_t* states, float* values) {
  return Encode(ctx, tiles, num_tiles, params, states, values, /*vector_path=*/true);
}

absl::Status TrellisEncodeScalar(const Context& ctx, const float* tiles, int64_t num_tiles,
                                 const TrellisEncodeParams& params, uint16_t* states,
                                 float* values) {
  return Encode(ctx, tiles, num_tiles, params, states, values, /*vector_path=*/false);
}

}  // namespace twinspan::cpu
