// Tap rows on the drafter link: float rows <-> a twinspan.v1.Tensor of dtype F32 or BF16 (round to
// nearest even), with the checks a receiver needs (dtype, shape, byte count).
#ifndef TWINSPAN_SERVICES_DRAFT_LINK_TAP_WIRE_H_
#define TWINSPAN_SERVICES_DRAFT_LINK_TAP_WIRE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "services/draft_link/draft_model.h"
#include "twinspan/v1/drafter.pb.h"

namespace twinspan::rpc {

// Writes rows x width floats as `dtype` (F32 or BF16) with shape [rows, width].
void EncodeTapRows(const float* data, int64_t rows, int64_t width, v1::DType dtype,
                   v1::Tensor* tensor);

// Reads a tensor of `dtype` and shape [ids, width] into `storage` and views it as rows (`fused`
// is copied into the view). InvalidArgument naming dtype, shape or size on any mismatch.
absl::StatusOr<engine::TapRows> DecodeTapRows(const v1::Tensor& tensor, v1::DType dtype, size_t ids,
                                              int64_t width, bool fused,
                                              std::vector<float>* storage);

}  // namespace twinspan::rpc

#endif  // TWINSPAN_SERVICES_DRAFT_LINK_TAP_WIRE_H_
