#include "services/device/device_spec.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace twinspan::device {

std::string DeviceSpec::ToString() const {
  return is_cuda() ? absl::StrCat("cuda:", ordinal) : "cpu";
}

absl::StatusOr<DeviceSpec> DeviceSpec::Parse(absl::string_view text, absl::string_view flag) {
  DeviceSpec spec;
  if (text == "cpu") return spec;
  int ordinal = -1;
  if (!absl::StartsWith(text, "cuda:") || !absl::SimpleAtoi(text.substr(5), &ordinal) ||
      ordinal < 0 || ordinal >= 1024 ||
      text.substr(5).find_first_not_of("0123456789") != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", text, ": expected cpu or cuda:N (N a CUDA device ordinal)"));
  }
  if (!BuildHasCuda()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", text,
                     ": this build has no CUDA backend (nvcc was not found when "
                     "it was configured); use ",
                     flag, " cpu"));
  }
  spec.kind = Kind::kCuda;
  spec.ordinal = ordinal;
  return spec;
}

}  // namespace twinspan::device
