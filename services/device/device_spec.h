// Where a service runs its models, as its --device flag names it: "cpu", or "cuda:N" with N an
// ordinal among the devices this process sees (CUDA_VISIBLE_DEVICES applied, so a worker the
// router placed on one GPU sees it as cuda:0).
#ifndef TWINSPAN_SERVICES_DEVICE_DEVICE_SPEC_H_
#define TWINSPAN_SERVICES_DEVICE_DEVICE_SPEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace twinspan::device {

struct DeviceSpec {
  enum class Kind { kCpu, kCuda };
  Kind kind = Kind::kCpu;
  int ordinal = 0;  // kCuda only

  bool is_cuda() const { return kind == Kind::kCuda; }
  // "cpu" or "cuda:<ordinal>": what Backend::name() of its backend says.
  std::string ToString() const;

  // Parses `text`, the value of `flag`. InvalidArgument naming the flag and the value for anything
  // but "cpu" or "cuda:N" (0 <= N < 1024), and for "cuda:N" when this build has no CUDA backend.
  static absl::StatusOr<DeviceSpec> Parse(absl::string_view text, absl::string_view flag);
};

// True when this build carries the CUDA backend (nvcc was found when it was configured).
bool BuildHasCuda();

}  // namespace twinspan::device

#endif  // TWINSPAN_SERVICES_DEVICE_DEVICE_SPEC_H_
