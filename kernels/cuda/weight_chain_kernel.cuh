// Block-wide sums of nonnegative double weights along an order, and the first index at which the
// running sum reaches a threshold, decided as the CPU's one-by-one sum decides it.
//
// ApproxTotal splits the n weights into one contiguous segment per thread, sums each in order and
// scans the segment sums across the block. Any summation of nonnegative terms is within
// gamma_h * S of the exact sum S (h = the longest chain of additions, here at most n), and so is
// the CPU's sequential sum, so the two differ by at most 2 gamma_n S; CUDA's exp and glibc's are
// each within one ulp, adding 2^-51 S. ChainEps(n) bounds both with room to spare. CertifiedFirst
// accepts an index only when those bounds prove the CPU's sum crosses there; otherwise the caller
// reruns the sum on one thread in the CPU's order (about one draw in 1e10, see sample.cuh).
#ifndef TWINSPAN_KERNELS_CUDA_WEIGHT_CHAIN_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_WEIGHT_CHAIN_KERNEL_CUH_

#include <cstdint>

namespace twinspan::cuda::weight_chain_kernel {

constexpr int kMaxThreads = 1024;

struct ChainShared {
  double inclusive[kMaxThreads];  // Scan of the per-thread segment sums.
  double warp_total[32];
  int first_thread;
  long long index;
  int certified;
};

// Relative bound on |approximate prefix - CPU prefix| for chains of at most n weights.
__device__ __forceinline__ double ChainEps(int64_t n) {
  return 2.1 * static_cast<double>(n + 64) * 0x1p-53 + 0x1p-50;
}

template <int kThreads>
__device__ __forceinline__ int64_t SegmentLength(int64_t n) {
  return (n + kThreads - 1) / kThreads;
}

template <int kThreads>
__device__ double BlockInclusiveScan(double x, ChainShared& s) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const double t = __shfl_up_sync(0xffffffffu, x, offset);
    if (lane >= offset) x = __dadd_rn(t, x);
  }
  __syncthreads();  // warp_total may still be read by a previous scan.
  if (lane == 31) s.warp_total[warp] = x;
  __syncthreads();
  if (warp == 0) {
    double w = lane < kThreads / 32 ? s.warp_total[lane] : 0.0;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
      const double t = __shfl_up_sync(0xffffffffu, w, offset);
      if (lane >= offset) w = __dadd_rn(t, w);
    }
    if (lane < kThreads / 32) s.warp_total[lane] = w;
  }
  __syncthreads();
  return warp > 0 ? __dadd_rn(s.warp_total[warp - 1], x) : x;
}

// Sum of v(j), j < n; leaves the scan in s.inclusive for CertifiedFirst on the same (n, v).
template <int kThreads, typename V>
__device__ double ApproxTotal(int64_t n, V v, ChainShared& s) {
  const int64_t seg = SegmentLength<kThreads>(n);
  const int64_t begin = min(n, threadIdx.x * seg), end = min(n, begin + seg);
  double sum = 0.0;
  for (int64_t j = begin; j < end; ++j) sum = __dadd_rn(sum, v(j));
  const double inclusive = BlockInclusiveScan<kThreads>(sum, s);
  s.inclusive[threadIdx.x] = inclusive;
  __syncthreads();
  return s.inclusive[kThreads - 1];
}

// The first j < n whose running sum reaches t (strict: exceeds it), or -1, under the last
// ApproxTotal's sums. *certified: the CPU's sequential sum, whose prefixes differ from these by at
// most eps times the prefix, reaching a threshold within delta of t, gives the same answer.
template <int kThreads, typename V>
__device__ int64_t CertifiedFirst(int64_t n, V v, double t, double delta, bool strict, double eps,
                                  ChainShared& s, bool* certified) {
  const auto reaches = [&](double x) { return strict ? x > t : x >= t; };
  if (threadIdx.x == 0) s.first_thread = kThreads;
  __syncthreads();
  if (reaches(s.inclusive[threadIdx.x])) atomicMin(&s.first_thread, static_cast<int>(threadIdx.x));
  __syncthreads();
  const int first = s.first_thread;
  if (first == kThreads) {
    *certified = s.inclusive[kThreads - 1] * (1.0 + eps) < t - delta;
    __syncthreads();
    return -1;
  }
  if (threadIdx.x == first) {
    const int64_t seg = SegmentLength<kThreads>(n);
    const int64_t begin = min(n, first * seg), end = min(n, begin + seg);
    double before = first == 0 ? 0.0 : s.inclusive[first - 1], at = before;
    int64_t found = end - 1;
    bool hit = false;
    for (int64_t j = begin; j < end && !hit; ++j) {
      before = at;
      at = __dadd_rn(at, v(j));
      if (reaches(at)) {
        found = j;
        hit = true;
      }
    }
    const bool before_ok =
        found == 0 || before * (1.0 + eps) < t - delta;  // Sum before j = 0 is 0.
    const bool at_ok = hit && at * (1.0 - eps) > t + delta;
    s.index = found;
    s.certified = before_ok && at_ok;
  }
  __syncthreads();
  *certified = s.certified != 0;
  const int64_t index = s.index;
  __syncthreads();
  return index;
}

// The CPU's own order, on the calling thread.
template <typename V>
__device__ double SequentialTotal(int64_t n, V v) {
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) sum = __dadd_rn(sum, v(j));
  return sum;
}

// First j whose sequential running sum reaches t, or -1; *last_nonzero: the last j with
// v(j) != 0 before it (0 if none), as the CPU walk keeps it.
template <typename V>
__device__ int64_t SequentialFirst(int64_t n, V v, double t, bool strict, int64_t* last_nonzero) {
  double sum = 0.0;
  *last_nonzero = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double w = v(j);
    if (w == 0.0) continue;
    *last_nonzero = j;
    sum = __dadd_rn(sum, w);
    if (strict ? sum > t : sum >= t) return j;
  }
  return -1;
}

// The CPU walk: the first j whose running sum exceeds u times the total, or the last nonzero
// weight when rounding leaves the draw at the very top.
template <int kThreads, typename V>
__device__ int64_t Walk(int64_t n, V v, double u, double eps, ChainShared& s) {
  const double total = ApproxTotal<kThreads>(n, v, s);
  bool certified = false;
  const int64_t j = CertifiedFirst<kThreads>(n, v, __dmul_rn(u, total), (eps + 0x1p-52) * total,
                                             true, eps, s, &certified);
  if (certified && j >= 0) return j;
  if (threadIdx.x == 0) {
    int64_t last = 0;
    const int64_t exact = SequentialFirst(n, v, __dmul_rn(u, SequentialTotal(n, v)), true, &last);
    s.index = exact >= 0 ? exact : last;
  }
  __syncthreads();
  const int64_t index = s.index;
  __syncthreads();
  return index;
}

}  // namespace twinspan::cuda::weight_chain_kernel

#endif  // TWINSPAN_KERNELS_CUDA_WEIGHT_CHAIN_KERNEL_CUH_
