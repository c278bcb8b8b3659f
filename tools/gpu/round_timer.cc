#include "tools/gpu/round_timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "tools/gpu/synthetic.cuh"

namespace twinspan::gpu {
namespace {

absl::Status Cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrFormat("%s: %s", what, cudaGetErrorString(e)));
}

// Two events, destroyed with the pair.
class EventPair {
 public:
  EventPair() {
    cudaEventCreate(&a);
    cudaEventCreate(&b);
  }
  ~EventPair() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  absl::StatusOr<double> ElapsedUs() const {
    float ms = 0;
    ABSL_RETURN_IF_ERROR(Cuda(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime"));
    return ms * 1000.0;
  }
  cudaEvent_t a = nullptr, b = nullptr;
};

double NowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(std::llround(q * (v.size() - 1)))];
}

nlohmann::json StepTimes::ToJson() const {
  return {{"wall_us", wall_us},
          {"span_us", span_us},
          {"busy_us", busy_us},
          {"wall_p10_us", wall_p10_us},
          {"wall_p90_us", wall_p90_us},
          {"segment_wall_us", segment_wall_us},
          {"segment_busy_us", segment_busy_us}};
}

absl::StatusOr<RoundTimer> RoundTimer::Create() {
  int device = 0, khz = 0;
  ABSL_RETURN_IF_ERROR(Cuda(cudaGetDevice(&device), "cudaGetDevice"));
  ABSL_RETURN_IF_ERROR(
      Cuda(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device), "cudaDeviceGetAttribute"));
  return RoundTimer(khz / 1000.0);
}

absl::StatusOr<StepTimes> RoundTimer::Time(const Step& step, int warmup, int reps) {
  const size_t n = step.segments.size();
  const auto run_after = [&]() -> absl::Status {
    return step.after ? step.after() : absl::OkStatus();
  };
  if (n == 0) return absl::InvalidArgumentError("RoundTimer: a step without segments");
  cudaStream_t first = step.segments.front().stream, last = step.segments.back().stream;
  for (int i = 0; i < warmup; ++i) {
    for (const Segment& s : step.segments) ABSL_RETURN_IF_ERROR(s.run());
    ABSL_RETURN_IF_ERROR(run_after());
  }
  std::vector<double> wall, span;
  std::vector<std::vector<double>> seg_wall(n), seg_busy(n);
  for (int i = 0; i < reps; ++i) {
    EventPair ev;
    const double t0 = NowUs();
    ABSL_RETURN_IF_ERROR(Cuda(cudaEventRecord(ev.a, first), "cudaEventRecord"));
    double t = t0;
    for (size_t s = 0; s < n; ++s) {
      ABSL_RETURN_IF_ERROR(step.segments[s].run());
      const double now = NowUs();
      seg_wall[s].push_back(now - t);
      t = now;
    }
    ABSL_RETURN_IF_ERROR(Cuda(cudaEventRecord(ev.b, last), "cudaEventRecord"));
    ABSL_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(last), "cudaStreamSynchronize"));
    wall.push_back(NowUs() - t0);
    ABSL_ASSIGN_OR_RETURN(const double us, ev.ElapsedUs());
    span.push_back(us);
    ABSL_RETURN_IF_ERROR(run_after());
  }
  std::vector<double> busy;
  for (int i = 0; i < reps; ++i) {
    double total = 0;
    for (size_t s = 0; s < n; ++s) {
      const double slowest = *std::max_element(seg_wall[s].begin(), seg_wall[s].end());
      const cudaStream_t stream = step.segments[s].stream;
      EventPair ev;
      ABSL_RETURN_IF_ERROR(
          Cuda(Spin(static_cast<int64_t>(2 * slowest * cycles_per_us_) + 1000, stream), "Spin"));
      ABSL_RETURN_IF_ERROR(Cuda(cudaEventRecord(ev.a, stream), "cudaEventRecord"));
      ABSL_RETURN_IF_ERROR(step.segments[s].run());
      ABSL_RETURN_IF_ERROR(Cuda(cudaEventRecord(ev.b, stream), "cudaEventRecord"));
      ABSL_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
      ABSL_ASSIGN_OR_RETURN(const double us, ev.ElapsedUs());
      seg_busy[s].push_back(us);
      total += us;
    }
    busy.push_back(total);
    ABSL_RETURN_IF_ERROR(run_after());
  }
  StepTimes out;
  out.wall_us = Percentile(wall, 0.5);
  out.wall_p10_us = Percentile(wall, 0.1);
  out.wall_p90_us = Percentile(wall, 0.9);
  out.span_us = Percentile(span, 0.5);
  out.busy_us = Percentile(busy, 0.5);
  for (size_t s = 0; s < n; ++s) {
    out.segment_wall_us.push_back(Percentile(seg_wall[s], 0.5));
    out.segment_busy_us.push_back(Percentile(seg_busy[s], 0.5));
  }
  return out;
}

}  // namespace twinspan::gpu
