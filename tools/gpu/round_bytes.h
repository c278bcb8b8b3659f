// The bytes one 27B-shaped round must move, for twinspan_round_bench's bytes-over-bandwidth floor:
// weights read once per forward (from the checkpoints), plus the state and KV traffic the target
// and drafter move as they are implemented, counted from their configs.
#ifndef TWINSPAN_TOOLS_GPU_ROUND_BYTES_H_
#define TWINSPAN_TOOLS_GPU_ROUND_BYTES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/config/target_config.h"
#include "nlohmann/json.hpp"
#include "services/drafter/drafter.h"

namespace twinspan::gpu {

// Bytes of a forward, by kind. Each counts what the kernels read or write once.
struct Bytes {
  int64_t trellis = 0;  // EXL3 trellis (target body and head; the drafter's span views)
  int64_t q4 = 0;       // Q4 codes, scales and offsets
  int64_t dense = 0;    // every other weight read per forward, as stored (fc, norms, scales)
  int64_t state = 0;    // recurrent state, KV cache, logits, taps, replay inputs

  int64_t total() const { return trellis + q4 + dense + state; }
  Bytes& operator+=(const Bytes& o);
  nlohmann::json ToJson() const;
};

// The target's weights per forward: every tensor of the checkpoint in `dir` but the embedding
// (its rows are gathered). Errors of Checkpoint::Open.
absl::StatusOr<Bytes> TargetWeightBytes(const std::string& dir);

// The drafter's weights per round: every tensor in `dir` but the selector's codebooks (gathered
// rows), plus the span head's trellis (the views `head` runs).
absl::StatusOr<Bytes> DrafterWeightBytes(const std::string& dir, const drafter::DraftHead& head);

// The target's state traffic for a verify of `rows` rows after `context` committed positions that
// commits `keep` of them (0 < keep < rows: the kept rows replayed from the Gated DeltaNet start
// state, as services/target does), with bf16 K/V and `taps` tapped layers.
Bytes TargetStateBytes(const target::TargetConfig& c, int64_t rows, int64_t keep, int64_t context,
                       int64_t taps);

// The drafter's: appending `appended` context rows (fc input and K/V writes) and one block of
// `block` rows over `context` positions (K/V reads), its packed logits written and read.
Bytes DrafterStateBytes(const drafter::DrafterConfig& c, int64_t appended, int64_t block,
                        int64_t context, int64_t head_columns);

}  // namespace twinspan::gpu

#endif  // TWINSPAN_TOOLS_GPU_ROUND_BYTES_H_
