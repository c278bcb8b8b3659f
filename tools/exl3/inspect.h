// What an EXL3 checkpoint holds: every quantized linear (shape, K, codebook, bytes) and every
// plain tensor, with totals. Backs `twinspan-exl3 inspect`.
#ifndef TWINSPAN_TOOLS_EXL3_INSPECT_H_
#define TWINSPAN_TOOLS_EXL3_INSPECT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exl3/format.h"
#include "common/safetensors/checkpoint.h"

namespace twinspan::exl3 {

struct LinearInfo {
  std::string prefix;
  int64_t k = 0;
  int64_t n = 0;
  int bits = 0;
  Codebook codebook = Codebook::k3Inst;
  bool has_bias = false;
  int64_t bytes = 0;  // All of its stored tensors (trellis, scales, marker, bias).
};

struct PlainInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
};

struct CheckpointReport {
  std::vector<LinearInfo> linears;  // Sorted by prefix.
  std::vector<PlainInfo> plain;     // Sorted by name.
  int64_t exl3_bytes = 0;
  int64_t exl3_weights = 0;  // Sum of k * n.
  int64_t plain_bytes = 0;

  // Stored bits per quantized weight, scales and markers included.
  double stored_bits_per_weight() const;
  // Mean K over quantized weights, optionally leaving out one prefix (the head).
  double mean_bits(const std::string& excluded_prefix = "") const;
};

// Loads every EXL3 linear (every `<prefix>.trellis`) with exl3::Weight::Load and lists the rest.
// Returns the first load error (it names the file, tensor and problem).
absl::StatusOr<CheckpointReport> InspectCheckpoint(const Checkpoint& checkpoint);

// A human-readable table: one line per linear and per plain tensor, then totals.
std::string FormatReport(const CheckpointReport& report);

}  // namespace twinspan::exl3

#endif  // TWINSPAN_TOOLS_EXL3_INSPECT_H_
