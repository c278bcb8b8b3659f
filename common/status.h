// Error propagation for absl::Status / absl::StatusOr. Debian 12's Abseil (20220623) predates
// absl/status/status_macros.h, so the two upstream macros are defined here and nowhere else.
#ifndef TWINSPAN_COMMON_STATUS_H_
#define TWINSPAN_COMMON_STATUS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TWINSPAN_STATUS_CONCAT_INNER_(a, b) a##b
#define TWINSPAN_STATUS_CONCAT_(a, b) TWINSPAN_STATUS_CONCAT_INNER_(a, b)

#ifndef ABSL_RETURN_IF_ERROR
// Returns the status from the enclosing function when `expr` is not OK.
#define ABSL_RETURN_IF_ERROR(expr)                       \
  do {                                                   \
    ::absl::Status twinspan_status_ = (expr);            \
    if (!twinspan_status_.ok()) return twinspan_status_; \
  } while (false)
#endif

#ifndef ABSL_ASSIGN_OR_RETURN
// `ABSL_ASSIGN_OR_RETURN(auto x, Foo());` declares x from an OK StatusOr or returns its status.
#define ABSL_ASSIGN_OR_RETURN(lhs, expr) \
  ABSL_ASSIGN_OR_RETURN_IMPL_(TWINSPAN_STATUS_CONCAT_(twinspan_statusor_, __LINE__), lhs, expr)
#define ABSL_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)   \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = *std::move(statusor)
#endif

#endif  // TWINSPAN_COMMON_STATUS_H_
