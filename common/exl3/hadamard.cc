#include "common/exl3/hadamard.h"

#include "common/exl3/format.h"

namespace twinspan::exl3 {

void Hadamard128(float* x) {
  for (int h = 1; h < kHadamardSize; h *= 2) {
    for (int i = 0; i < kHadamardSize; i += 2 * h) {
      for (int j = i; j < i + h; ++j) {
        const float a = x[j];
        const float b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
  for (int i = 0; i < kHadamardSize; ++i) x[i] *= kHadamardScale;
}

}  // namespace twinspan::exl3
