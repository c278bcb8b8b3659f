// An EXL3 weight on the device (host code, C++20, so it can use exl3::Weight): one stored matrix
// uploaded once (trellis reordered into the kernels' layout, suh, svh, bias as fp16), and the
// Exl3DeviceWeight views the EXL3 linear takes, for the matrix or any column view of it.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_WEIGHT_H_
#define TWINSPAN_KERNELS_CUDA_EXL3_WEIGHT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/exl3/span_view.h"
#include "common/exl3/weight.h"
#include "kernels/cuda/exl3_linear.cuh"
#include "kernels/cuda/exl3_span_linear.cuh"

namespace twinspan::cuda {

// The device kernel's name for a stored codebook.
Exl3Codebook ToDeviceCodebook(exl3::Codebook c);

// Owns the device copy; move-only. Not thread-safe to upload, safe to share once uploaded.
class DeviceExl3Weight {
 public:
  // Copies the stored matrix `w` (not a view: first_column() == 0 and n() == stored_n()) to the
  // device in the layout of exl3_layout.h, synchronously, relaid out on `threads` host threads
  // (exl3_relayout.h). InvalidArgument for a view, Internal when an allocation or copy fails.
  static absl::StatusOr<DeviceExl3Weight> Upload(const exl3::Weight& w, int threads = 1);

  // The device view of `view`: the uploaded matrix itself or a column view of it, with the stored
  // matrix's plan. InvalidArgument when `view` is not of this stored matrix (other name, k, bits
  // or stored n).
  absl::StatusOr<Exl3DeviceWeight> View(const exl3::Weight& view) const;

  // The device span of a span view (exl3::MakeSpanViews) of this matrix; errors as View.
  absl::StatusOr<Exl3DeviceSpan> Span(const exl3::SpanView& span) const;

 private:
  struct Buffers;
  std::shared_ptr<Buffers> buffers_;
  exl3::Weight stored_;
};

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_WEIGHT_H_
