// Device code of the keyed sampler: one 512-thread block per row follows
// KeyedSampler::Sample (common/sampler/keyed_sampler.cc):
//   1. NaN check and the greedy argmax (first maximum) over the logits;
//   2. z = logit / T (fp32); with top_k, the radix select finds the k-th rank key of (z, id), and
//      the candidates are the ids at or above it; z_max is the top candidate's z;
//   3. w = exp(double(z) - z_max); without top_k or top_p the kept ids are all ids in id order;
//   4. otherwise the candidates are sorted by rank in windows of 4,096 (radix select below the
//      previous window, gather, bitonic sort) into the row's slice of the workspace, as far as
//      top_p needs (until the window sums certainly reach top_p times the total) or all of them;
//      the top_p cut is the first sorted index whose running sum reaches top_p times the
//      candidates' total in id order;
//   5. min_p zeroes kept weights below it, and the walk picks the first kept index whose running
//      sum exceeds u times the kept total (weight_chain_kernel.cuh decides the sums as the CPU's).
#ifndef TWINSPAN_KERNELS_CUDA_SAMPLE_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_SAMPLE_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/host_array.cuh"
#include "kernels/cuda/select_kernel.cuh"
#include "kernels/cuda/weight_chain_kernel.cuh"

namespace twinspan::cuda::sample_kernel {

constexpr int kThreads = 512;
constexpr int kWindow = 4096;
constexpr int kMaxRows = 64;

struct RowParams {
  float temperature = 0.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  double uniform = 0.0;  // sampler::KeyedUniform(seed, position)
};

struct Params {
  const float* logits = nullptr;  // Row 0 of this launch.
  int64_t stride = 0;
  int64_t vocab = 0;
  int32_t* tokens = nullptr;
  int32_t* order = nullptr;  // [rows][vocab] sorted candidate ids; null when no row sorts.
  bool sequential = false;   // An infinite bound: every sum decided in the CPU's order.
  HostArray<RowParams, kMaxRows> rows;
};

struct Shared {
  select_kernel::SelectShared select;
  weight_chain_kernel::ChainShared chain;
  uint64_t window[kWindow];
  double window_sum;
};

__global__ void __launch_bounds__(kThreads, 1) SampleKernel(const Params p) {
  namespace sk = select_kernel;
  namespace wc = weight_chain_kernel;
  __shared__ Shared s;
  const RowParams rp = p.rows.v[blockIdx.x];
  const float* logits = p.logits + static_cast<int64_t>(blockIdx.x) * p.stride;
  int32_t* token = p.tokens + blockIdx.x;
  const int64_t vocab = p.vocab;

  bool nan = false;
  uint64_t best = 0;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const float x = logits[i];
    nan |= isnan(x);
    const uint64_t key = sk::RankKey(x, i);
    best = key > best ? key : best;
  }
  if (__syncthreads_or(nan)) {
    if (threadIdx.x == 0) *token = -1;
    return;
  }
  best = sk::BlockMaxKey<kThreads>(best, s.select);
  if (rp.temperature == 0.0f || rp.top_k == 1) {
    if (threadIdx.x == 0) *token = static_cast<int32_t>(sk::KeyColumn(best));
    return;
  }

  const float temperature = rp.temperature;
  const auto z = [&](int64_t i) { return __fdiv_rn(logits[i], temperature); };
  const auto z_key = [&](int64_t i) { return sk::RankKey(z(i), i); };
  const bool use_top_k = rp.top_k > 0 && rp.top_k < vocab;
  const int64_t candidates = use_top_k ? rp.top_k : vocab;
  const uint64_t top_k_key =
      use_top_k ? sk::SelectThreshold<kThreads>(vocab, z_key, rp.top_k, s.select) : 1;
  uint64_t top = 0;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const uint64_t key = z_key(i);
    top = key > top ? key : top;
  }
  const int64_t most_likely = sk::KeyColumn(sk::BlockMaxKey<kThreads>(top, s.select));
  const float z_max = z(most_likely);
  if (isinf(z_max)) {  // All -inf, or z overflowed at a tiny temperature: as greedy.
    if (threadIdx.x == 0) *token = static_cast<int32_t>(most_likely);
    return;
  }
  const auto weight = [&](int64_t i) {
    return exp(__dsub_rn(static_cast<double>(z(i)), static_cast<double>(z_max)));
  };
  const double min_p = rp.min_p;
  const double eps = p.sequential ? INFINITY : wc::ChainEps(vocab);

  if (!use_top_k && rp.top_p >= 1.0f) {
    const auto kept = [&](int64_t i) {
      const double w = weight(i);
      return w < min_p ? 0.0 : w;
    };
    const int64_t j = wc::Walk<kThreads>(vocab, kept, rp.uniform, eps, s.chain);
    if (threadIdx.x == 0) *token = static_cast<int32_t>(j);
    return;
  }

  // Sorted candidates: the ids at or above the top_k key, by rank.
  int32_t* order = p.order + static_cast<int64_t>(blockIdx.x) * vocab;
  const bool use_top_p = rp.top_p < 1.0f;
  const auto candidate_weight = [&](int64_t i) { return z_key(i) >= top_k_key ? weight(i) : 0.0; };
  double total = 0.0;  // Candidates in id order.
  if (use_top_p) total = wc::ApproxTotal<kThreads>(vocab, candidate_weight, s.chain);
  const double cut = __dmul_rn(static_cast<double>(rp.top_p), total);
  const double cut_delta = (eps + 0x1p-52) * total;
  int64_t sorted = 0;
  double mass = 0.0;
  uint64_t upper = ~uint64_t{0};
  while (sorted < candidates) {
    const int64_t take = min(static_cast<int64_t>(kWindow), candidates - sorted);
    const auto window_key = [&](int64_t i) {
      const uint64_t key = z_key(i);
      return key >= top_k_key && key < upper ? key : uint64_t{0};
    };
    const uint64_t threshold =
        sk::SelectThreshold<kThreads>(vocab, window_key, static_cast<unsigned>(take), s.select);
    const unsigned count = sk::Gather<kThreads>(vocab, window_key, threshold, s.window, s.select);
    sk::SortDescending<kThreads>(s.window, count);
    for (int j = threadIdx.x; j < take; j += kThreads) {
      order[sorted + j] = static_cast<int32_t>(sk::KeyColumn(s.window[j]));
    }
    upper = s.window[take - 1];
    sorted += take;
    if (use_top_p) {
      const double window_mass = wc::ApproxTotal<kThreads>(
          take, [&](int64_t j) { return weight(sk::KeyColumn(s.window[j])); }, s.chain);
      mass = __dadd_rn(mass, window_mass);
      if (mass * (1.0 - eps) > cut + cut_delta) break;  // The CPU's sum reaches the cut too.
    }
    __syncthreads();  // The next window overwrites s.window.
  }
  __syncthreads();  // order[] written by all threads.

  const auto sorted_weight = [&](int64_t j) { return weight(order[j]); };
  int64_t kept_count = sorted;
  if (use_top_p) {
    wc::ApproxTotal<kThreads>(sorted, sorted_weight, s.chain);
    bool certified = false;
    int64_t j = wc::CertifiedFirst<kThreads>(sorted, sorted_weight, cut, cut_delta, false, eps,
                                             s.chain, &certified);
    if (!certified) {
      if (threadIdx.x == 0) {
        const double exact_cut =
            __dmul_rn(static_cast<double>(rp.top_p), wc::SequentialTotal(vocab, candidate_weight));
        int64_t last = 0;
        s.chain.index = wc::SequentialFirst(sorted, sorted_weight, exact_cut, false, &last);
      }
      __syncthreads();
      j = s.chain.index;
      __syncthreads();
    }
    if (j >= 0) kept_count = j + 1;  // Else rounding never reached top_p: keep all candidates.
  }
  const auto kept = [&](int64_t j) {
    const double w = weight(order[j]);
    return w < min_p ? 0.0 : w;
  };
  const int64_t j = wc::Walk<kThreads>(kept_count, kept, rp.uniform, eps, s.chain);
  if (threadIdx.x == 0) *token = order[j];
}

}  // namespace twinspan::cuda::sample_kernel

#endif  // TWINSPAN_KERNELS_CUDA_SAMPLE_KERNEL_CUH_
