// One EXL3 linear as stored (trellis + suh + svh [+ bias] + codebook marker), or a view of whole
// 128-column blocks of one. The trellis stays in the checkpoint's memory map: no copy.
#ifndef TWINSPAN_COMMON_EXL3_WEIGHT_H_
#define TWINSPAN_COMMON_EXL3_WEIGHT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exl3/format.h"
#include "common/exl3/plan.h"
#include "common/safetensors/checkpoint.h"

namespace twinspan::exl3 {

// Orientation is EXL3's: W is [k = in_features, n = out_features] and y = x W + bias.
// A value type: cheap to copy, immutable, safe to share between threads. REQUIRES: the Checkpoint
// it was loaded from outlives it and every copy or view.
class Weight {
 public:
  Weight() = default;

  // True when `prefix`.trellis exists, i.e. the linear is stored as EXL3 (else it is a plain
  // `prefix`.weight).
  static bool IsStored(const Checkpoint& checkpoint, std::string_view prefix);

  // Loads and validates the linear stored under `prefix` (e.g. "model.layers.0.mlp.down_proj").
  // NotFound when `prefix`.trellis is absent. InvalidArgument naming the file, the tensor and the
  // problem for: a trellis that is not I16 [k/16, n/16, 16*K]; K outside 1..8 (half-integer K is
  // refused as unsupported); k or n not a multiple of 128; suh/svh not F16 [k]/[n] (or legacy
  // su/sv not I16 [k/16]/[n/16]) or missing; bias not F16 [n]; a marker that is not a 0-dim I32
  // holding the locked multiplier; both mcg and mul1; a pre-release `.scale` tensor.
  static absl::StatusOr<Weight> Load(const Checkpoint& checkpoint, std::string_view prefix);

  // A view of columns [from, from + n) of this weight: whole 128-column blocks of the stored
  // matrix, same strides, same suh, the matching svh and bias slices, and the stored matrix's
  // plan(). InvalidArgument unless from and n are multiples of 128, n > 0 and from + n <= n().
  absl::StatusOr<Weight> columns(int64_t from, int64_t n) const;

  const std::string& name() const { return name_; }  // The prefix it was loaded from.
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  int bits() const { return bits_; }  // K: trellis bits per weight.
  Codebook codebook() const { return codebook_; }

  // The stored matrix's reduction plan; views keep their parent's.
  Plan plan() const { return plan_; }
  // This view's first column within the stored matrix (0 for the stored matrix itself).
  int64_t first_column() const { return first_column_; }
  // The stored matrix's column count.
  int64_t stored_n() const { return tile_row_stride_ * kTileSize; }

  // Tile (tk, tn) of this view: tile_bytes() bytes, little-endian int16, any alignment.
  // REQUIRES: 0 <= tk < k() / 16, 0 <= tn < n() / 16.
  const std::byte* tile(int64_t tk, int64_t tn) const {
    return trellis_ + (tk * tile_row_stride_ + tn) * tile_bytes();
  }
  int64_t tile_bytes() const { return int64_t{32} * bits_; }
  // Tiles from (tk, tn) to (tk + 1, tn): the stored matrix's n / 16, for views too.
  int64_t tile_row_stride() const { return tile_row_stride_; }

  // Input and output scales (exact fp16 values, or +-1 from legacy sign words), and the bias.
  std::span<const float> suh() const { return {suh_->data(), static_cast<size_t>(k_)}; }
  std::span<const float> svh() const {
    return {svh_->data() + first_column_, static_cast<size_t>(n_)};
  }
  bool has_bias() const { return bias_ != nullptr; }
  // Empty when there is no bias.
  std::span<const float> bias() const {
    if (bias_ == nullptr) return {};
    return {bias_->data() + first_column_, static_cast<size_t>(n_)};
  }

 private:
  std::string name_;
  int64_t k_ = 0;
  int64_t n_ = 0;
  int bits_ = 0;
  Codebook codebook_ = Codebook::k3Inst;
  Plan plan_;
  int64_t first_column_ = 0;
  int64_t tile_row_stride_ = 0;
  const std::byte* trellis_ = nullptr;  // Tile (0, 0) of this view, inside the checkpoint's map.
  std::shared_ptr<const std::vector<float>> suh_;   // [k]
  std::shared_ptr<const std::vector<float>> svh_;   // [stored n]
  std::shared_ptr<const std::vector<float>> bias_;  // [stored n] or null.
};

}  // namespace twinspan::exl3

#endif  // TWINSPAN_COMMON_EXL3_WEIGHT_H_
