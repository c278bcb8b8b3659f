#include "services/engine/engine_request.h"

namespace twinspan::engine {

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kEos:
      return "eos";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kAborted:
      return "abort";
    case FinishReason::kContext:
      return "context";
  }
  return "unknown";
}

}  // namespace twinspan::engine
