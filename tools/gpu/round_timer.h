// Times steps of host code that issues work on one CUDA stream (a backend's), three ways:
//  - wall: host clock around the step, which ends with a synchronizing call;
//  - span: CUDA events around the step, on its first and last segments' streams (GPU time from
//    its first op to its last, launch gaps included);
//  - busy: the same events, but each segment of the step queued behind a spin kernel that outlasts
//    its host-side enqueue (twice its slowest wall time), so the GPU runs it back to back: the
//    GPU's own time, without launch gaps. A segment that waits on the device inside (a download)
//    still shows the host's reaction there.
// No CUDA graph: the steps download and branch on the host between ops.
#ifndef TWINSPAN_TOOLS_GPU_ROUND_TIMER_H_
#define TWINSPAN_TOOLS_GPU_ROUND_TIMER_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace twinspan::gpu {

// Host code whose GPU work goes to `stream` (a backend's, cuda::CudaBackendStream) and ends with a
// synchronizing call.
struct Segment {
  std::function<absl::Status()> run;
  cudaStream_t stream = nullptr;
};

// A measured step: `segments` run in order each time; `after` (untimed) resets the state.
struct Step {
  std::string name;
  std::vector<Segment> segments;
  std::function<absl::Status()> after;
};

struct StepTimes {
  double wall_us = 0, span_us = 0, busy_us = 0;  // medians
  double wall_p10_us = 0, wall_p90_us = 0;
  std::vector<double> segment_wall_us;  // median wall of each segment
  std::vector<double> segment_busy_us;  // median busy of each segment
  nlohmann::json ToJson() const;
};

class RoundTimer {
 public:
  // For the current device. Internal for a CUDA error.
  static absl::StatusOr<RoundTimer> Create();

  // `warmup` untimed runs, then `reps` wall/span runs, then `reps` busy runs. A step's error is
  // returned as is.
  absl::StatusOr<StepTimes> Time(const Step& step, int warmup, int reps);

 private:
  explicit RoundTimer(double cycles_per_us) : cycles_per_us_(cycles_per_us) {}

  double cycles_per_us_;
};

// Median, 10th and 90th percentile of `v` (sorted copy).
double Percentile(std::vector<double> v, double q);

}  // namespace twinspan::gpu

#endif  // TWINSPAN_TOOLS_GPU_ROUND_TIMER_H_
