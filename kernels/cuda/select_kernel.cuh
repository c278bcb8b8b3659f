// Block-wide exact selection shared by TopK and the keyed sampler: every (value, column) pair gets
// a 64-bit rank key (larger key = ranks first: value descending, then lower column), a most
// significant digit first radix select over 8-bit digits finds the m-th largest key, and the m
// selected keys are gathered and bitonic-sorted in shared memory. Keys are unique integers, so the
// result never depends on thread timing. Ineligible elements carry key 0, below every real key.
#ifndef TWINSPAN_KERNELS_CUDA_SELECT_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_SELECT_KERNEL_CUH_

#include <cstdint>

namespace twinspan::cuda::select_kernel {

// +0 and -0 compare equal, so they share a key and tie by column, as in the CPU ops.
__device__ __forceinline__ uint64_t RankKey(float value, int64_t column) {
  uint32_t bits = __float_as_uint(value == 0.0f ? 0.0f : value);
  bits = (bits & 0x80000000u) != 0 ? ~bits : (bits | 0x80000000u);
  return (static_cast<uint64_t>(bits) << 32) | (0xffffffffu - static_cast<uint32_t>(column));
}

__device__ __forceinline__ int64_t KeyColumn(uint64_t key) {
  return 0xffffffffu - static_cast<uint32_t>(key);
}

// Keys each thread loads before it uses the first: a pass over a row waits on its loads.
constexpr int kKeysInFlight = 8;

// Calls visit(key(i)) for i = threadIdx.x, + kThreads, ... below n, kKeysInFlight loads at a time;
// slots past n visit key 0, which no caller takes.
template <int kThreads, typename KeyFn, typename Visit>
__device__ __forceinline__ void ForEachKey(int64_t n, KeyFn key, Visit visit) {
  for (int64_t base = threadIdx.x; base < n; base += kKeysInFlight * kThreads) {
    uint64_t keys[kKeysInFlight];
#pragma unroll
    for (int u = 0; u < kKeysInFlight; ++u) {
      const int64_t i = base + static_cast<int64_t>(u) * kThreads;
      keys[u] = i < n ? key(i) : 0;
    }
#pragma unroll
    for (int u = 0; u < kKeysInFlight; ++u) visit(keys[u]);
  }
}

struct SelectShared {
  unsigned hist[256];
  unsigned chosen_bin;
  unsigned chosen_above;  // Keys in bins above the chosen one.
  unsigned chosen_count;
  unsigned gathered;
  unsigned long long warp_max[32];
};

template <int kThreads>
__device__ __forceinline__ uint64_t BlockMaxKey(uint64_t key, SelectShared& s) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const uint64_t other = __shfl_xor_sync(0xffffffffu, key, offset);
    key = other > key ? other : key;
  }
  __syncthreads();  // warp_max may still be read by a previous call.
  if (lane == 0) s.warp_max[warp] = key;
  __syncthreads();
  uint64_t best = 0;
  for (int w = 0; w < kThreads / 32; ++w) best = s.warp_max[w] > best ? s.warp_max[w] : best;
  return best;
}

// The m-th largest nonzero key among key(i), i < n (REQUIRES 1 <= m <= that count), as a
// threshold: exactly m nonzero keys are >= the returned value. All threads get it.
template <int kThreads, typename KeyFn>
__device__ uint64_t SelectThreshold(int64_t n, KeyFn key, unsigned m, SelectShared& s) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  uint64_t prefix = 0;
  unsigned remaining = m;
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += kThreads) s.hist[i] = 0;
    __syncthreads();
    const uint64_t high = shift == 56 ? 0 : ~uint64_t{0} << (shift + 8);
    ForEachKey<kThreads>(n, key, [&](uint64_t k) {
      const bool in = k != 0 && (k & high) == prefix;
      const unsigned bin = static_cast<unsigned>(k >> shift) & 255u;
      const unsigned voters = __ballot_sync(__activemask(), in);
      if (in) {  // One shared atomic per distinct bin in the warp.
        const unsigned peers = __match_any_sync(voters, bin);
        if (__ffs(peers) - 1 == lane) atomicAdd(&s.hist[bin], __popc(peers));
      }
    });
    __syncthreads();
    if (warp == 0) {  // Lane l holds bins 255 - 8l down to 248 - 8l.
      unsigned local[8], sum = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        local[j] = s.hist[255 - 8 * lane - j];
        sum += local[j];
      }
      unsigned inclusive = sum;
#pragma unroll
      for (int offset = 1; offset < 32; offset <<= 1) {
        const unsigned t = __shfl_up_sync(0xffffffffu, inclusive, offset);
        if (lane >= offset) inclusive += t;
      }
      unsigned above = inclusive - sum;
      if (above < remaining && remaining <= inclusive) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          if (above + local[j] >= remaining) {
            s.chosen_bin = 255 - 8 * lane - j;
            s.chosen_above = above;
            s.chosen_count = local[j];
            break;
          }
          above += local[j];
        }
      }
    }
    __syncthreads();
    prefix |= static_cast<uint64_t>(s.chosen_bin) << shift;
    remaining -= s.chosen_above;
    const bool done = s.chosen_count == remaining;  // The whole bin is in: stop here.
    __syncthreads();
    if (done) break;
  }
  return prefix;
}

// Writes the nonzero keys >= threshold to keys[0, count) in no particular order; returns count.
template <int kThreads, typename KeyFn>
__device__ unsigned Gather(int64_t n, KeyFn key, uint64_t threshold, uint64_t* keys,
                           SelectShared& s) {
  const int lane = threadIdx.x % 32;
  if (threadIdx.x == 0) s.gathered = 0;
  __syncthreads();
  ForEachKey<kThreads>(n, key, [&](uint64_t k) {
    const bool take = k != 0 && k >= threshold;
    const unsigned active = __activemask();
    const unsigned takers = __ballot_sync(active, take);
    const int leader = __ffs(active) - 1;
    unsigned base = 0;
    if (lane == leader && takers != 0) base = atomicAdd(&s.gathered, __popc(takers));
    base = __shfl_sync(active, base, leader);
    if (take) keys[base + __popc(takers & ((1u << lane) - 1))] = k;
  });
  __syncthreads();
  return s.gathered;
}

// Sorts keys[0, count) descending, padding to a power of two with zero keys (REQUIRES the array to
// hold the padded length).
template <int kThreads>
__device__ void SortDescending(uint64_t* keys, unsigned count) {
  unsigned padded = 1;
  while (padded < count) padded <<= 1;
  for (unsigned i = count + threadIdx.x; i < padded; i += kThreads) keys[i] = 0;
  __syncthreads();
  for (unsigned size = 2; size <= padded; size <<= 1) {
    for (unsigned stride = size / 2; stride > 0; stride >>= 1) {
      for (unsigned i = threadIdx.x; i < padded; i += kThreads) {
        const unsigned j = i ^ stride;
        if (j > i) {
          const uint64_t a = keys[i], b = keys[j];
          const bool descending = (i & size) == 0;
          if ((a < b) == descending) {
            keys[i] = b;
            keys[j] = a;
          }
        }
      }
      __syncthreads();
    }
  }
}

}  // namespace twinspan::cuda::select_kernel

#endif  // TWINSPAN_KERNELS_CUDA_SELECT_KERNEL_CUH_
