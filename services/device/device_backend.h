// The backend and the logits sampler a service runs on, from its --device (DeviceSpec). The CUDA
// half lives in device_backend_cuda.cc, built only with the CUDA backend; without it
// device_backend_cpu.cc refuses cuda:N, so no caller branches on the build.
#ifndef TWINSPAN_SERVICES_DEVICE_DEVICE_BACKEND_H_
#define TWINSPAN_SERVICES_DEVICE_DEVICE_BACKEND_H_

#include <memory>

#include "absl/status/statusor.h"
#include "kernels/backend/backend.h"
#include "kernels/cpu/parallel.h"
#include "services/device/device_spec.h"
#include "services/device/logits_sampler.h"

namespace twinspan::device {

// The CPU backend over `pool` (not owned, may be null), or the CUDA backend on device.ordinal
// (`pool` unused). InvalidArgument naming the ordinal when the process sees no such device (with
// CUDA_VISIBLE_DEVICES, the router's placement, the ordinals start at 0), or when the build has
// no CUDA; Internal when CUDA cannot start.
absl::StatusOr<std::unique_ptr<backend::Backend>> OpenBackend(const DeviceSpec& device,
                                                              cpu::ThreadPool* pool);

// A sampler that reads logits where the backend of `device` keeps them: null for the CPU (the
// engine samples host logits itself, today's path), the CUDA keyed sampler for cuda:N. Errors as
// OpenBackend's.
absl::StatusOr<std::unique_ptr<LogitsSampler>> OpenLogitsSampler(const DeviceSpec& device);

}  // namespace twinspan::device

#endif  // TWINSPAN_SERVICES_DEVICE_DEVICE_BACKEND_H_
