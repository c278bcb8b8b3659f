// A refusal's machine-readable reason and the request field it names, carried as a payload of the
// absl::Status, so that gRPC's status details (services/rpc/status_mapping) and the HTTP front
// (OpenAI's error `code`, `param` and HTTP status) can tell a limit from load without reading the
// message.
#ifndef TWINSPAN_COMMON_ERROR_REASON_H_
#define TWINSPAN_COMMON_ERROR_REASON_H_

#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace twinspan {

// The prompt is longer than the context or the prompt limit allows (OpenAI's code of that name).
inline constexpr char kContextLengthExceeded[] = "context_length_exceeded";
// The server is busy: waiting, or another worker, helps (HTTP 429 with Retry-After).
inline constexpr char kOverloaded[] = "overloaded";

struct ErrorReason {
  std::string reason;  // empty: none, only the field
  std::string param;   // the request field at fault, as the gRPC API names it; empty: none
};

inline constexpr char kErrorReasonUrl[] = "type.googleapis.com/twinspan.v1.ErrorInfo";

// `status` with `why` attached (OK stays OK).
inline absl::Status WithErrorReason(absl::Status status, const ErrorReason& why) {
  if (!status.ok())
    status.SetPayload(kErrorReasonUrl, absl::Cord(absl::StrCat(why.reason, "\n", why.param)));
  return status;
}

// The reason attached to `status`, if any.
inline std::optional<ErrorReason> GetErrorReason(const absl::Status& status) {
  const auto payload = status.GetPayload(kErrorReasonUrl);  // absl::optional in Debian's Abseil
  if (!payload.has_value()) return std::nullopt;
  const std::string text(*payload);
  const size_t cut = text.find('\n');
  if (cut == std::string::npos) return ErrorReason{text, ""};
  return ErrorReason{text.substr(0, cut), text.substr(cut + 1)};
}

}  // namespace twinspan

#endif  // TWINSPAN_COMMON_ERROR_REASON_H_
