// Whole-matrix decodes of an EXL3 weight, for tools and tests (the forward never builds these).
#ifndef TWINSPAN_COMMON_EXL3_DEQUANT_H_
#define TWINSPAN_COMMON_EXL3_DEQUANT_H_

#include <vector>

#include "common/exl3/weight.h"

namespace twinspan::exl3 {

// W_hat [k, n] row-major: the decoded trellis in the rotated basis, exact fp16 values.
std::vector<float> DecodeRotated(const Weight& weight);

// W [k, n] row-major in the original basis, fp32: diag(suh) H W_hat H diag(svh), H the 128-block
// Hadamard (Hadamard128) applied down each column's 128-blocks, then along each row's.
std::vector<float> DequantizeDense(const Weight& weight);

}  // namespace twinspan::exl3

#endif  // TWINSPAN_COMMON_EXL3_DEQUANT_H_
