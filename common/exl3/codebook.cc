#include "common/exl3/codebook.h"

#include "common/safetensors/half.h"

namespace twinspan::exl3 {

std::string_view CodebookName(Codebook codebook) {
  switch (codebook) {
    case Codebook::k3Inst:
      return "3inst";
    case Codebook::kMcg:
      return "mcg";
    case Codebook::kMul1:
      return "mul1";
  }
  return "?";
}

uint16_t CodebookHalf(Codebook codebook, uint16_t state) {
  switch (codebook) {
    case Codebook::k3Inst:
      return FloatToHalf(CodebookValue<Codebook::k3Inst>(state));
    case Codebook::kMcg:
      return FloatToHalf(CodebookValue<Codebook::kMcg>(state));
    case Codebook::kMul1:
      return FloatToHalf(CodebookValue<Codebook::kMul1>(state));
  }
  return 0;
}

}  // namespace twinspan::exl3
