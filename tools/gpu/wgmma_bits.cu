// twinspan_wgmma_bits: whether Hopper's warpgroup MMA (wgmma, sm_90a) gives the bits of the
// mma.m16n8k16 chain the EXL3 kernels run (the exactness contract's condition for using it), and
// the tensor-core rate of each instruction on this GPU.
//
// Bits: one warpgroup computes D (64 x 256 fp32) = sum over 16 k-tiles of A_t (64 x 16 fp16, in
// registers: the A fragments DecodeTileA gives) x B_t (16 x 256 fp16, the rows, in shared memory
// K-major without swizzle: 8 x 16-byte core matrices, the two k halves 128 bytes apart, groups of
// 8 rows 256 bytes apart), a chain from zero, once with wgmma.m64n256k16 and once with m16n8k16
// (each warp its 16 columns, 32 mma a k-tile), on random data of three scales; compares the two
// bit for bit and each with the float64 product. Rate: each instruction alone in a loop over
// k-tiles on every SM (A and B fixed, the accumulators chained), in TFLOP/s. Exit 0 when all ran,
// 1 on a CUDA error; the verdict is printed.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/exl3_prompt_wgmma_kernel.cuh"

namespace {

constexpr int kM = 64, kN = 256, kKt = 16, kK = 16 * kKt;
constexpr int kNc = kN / 8;              // 8-row groups along N.
constexpr int kTileBytes = kN * 16 * 2;  // B of one k-tile.
constexpr int kSmemBytes = kKt * kTileBytes;

#define CHECK_CUDA(x)                                               \
  do {                                                              \
    const cudaError_t e_ = (x);                                     \
    if (e_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                 \
    }                                                               \
  } while (0)

__device__ __forceinline__ uint32_t Pack(__half lo, __half hi) {
  return static_cast<uint32_t>(__half_as_ushort(lo)) |
         (static_cast<uint32_t>(__half_as_ushort(hi)) << 16);
}

// The m16n8k16 A fragment of rows [16w, 16w + 16) of k-tile t (A row-major [kM][kK]).
__device__ __forceinline__ void AFragment(const __half* a, int w, int t, uint32_t f[4]) {
  const int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
  const __half* r0 = a + (16 * w + gid) * kK + 16 * t + 2 * tig;
  const __half* r1 = r0 + 8 * kK;
  f[0] = Pack(r0[0], r0[1]);
  f[1] = Pack(r1[0], r1[1]);
  f[2] = Pack(r0[8], r0[9]);
  f[3] = Pack(r1[8], r1[9]);
}

__device__ __forceinline__ void Mma(float c[4], const uint32_t f[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(f[0]), "r"(f[1]), "r"(f[2]), "r"(f[3]), "r"(b0), "r"(b1));
}

// B fragments (b0, b1) of 8-row group j of k-tile t (B row-major [kK][kN]).
__device__ __forceinline__ void BFragment(const __half* b, int t, int j, uint32_t& b0,
                                          uint32_t& b1) {
  const int lane = threadIdx.x & 31, n = 8 * j + (lane >> 2), k = 16 * t + 2 * (lane & 3);
  b0 = Pack(b[k * kN + n], b[(k + 1) * kN + n]);
  b1 = Pack(b[(k + 8) * kN + n], b[(k + 9) * kN + n]);
}

// D[m][n] = sum_t A_t B_t by mma.m16n8k16: warp w rows 16w.., each 8-row group its own chain.
__global__ void MmaChain(const __half* a, const __half* b, float* d) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, gid = lane >> 2, tig = lane & 3;
  float c[kNc][4] = {};
  for (int t = 0; t < kKt; ++t) {
    uint32_t f[4];
    AFragment(a, w, t, f);
#pragma unroll
    for (int j = 0; j < kNc; ++j) {
      uint32_t b0, b1;
      BFragment(b, t, j, b0, b1);
      Mma(c[j], f, b0, b1);
    }
  }
#pragma unroll
  for (int j = 0; j < kNc; ++j)
    for (int e = 0; e < 4; ++e)
      d[(16 * w + gid + 8 * (e >> 1)) * kN + 8 * j + 2 * tig + (e & 1)] = c[j][e];
}

// The kernel's own layout and instruction (exl3_prompt_wgmma_kernel.cuh), so this checks what
// PromptWgmmaKernel runs: c += A (registers) x B (the k-tile at `smem`), by the whole warpgroup.
__device__ __forceinline__ void Wgmma(float (&c)[128], const uint32_t (&f)[4], const void* smem) {
#ifdef TWINSPAN_WGMMA_DEVICE
  namespace ek = twinspan::cuda::exl3_kernel;
  ek::Wgmma256(c, f, ek::WgmmaDescriptor(static_cast<uint32_t>(__cvta_generic_to_shared(smem))));
#endif
}

__device__ __forceinline__ void LoadB(const __half* b, unsigned char* bs) {
  for (int i = threadIdx.x; i < kKt * 16 * kN; i += blockDim.x) {
#ifdef TWINSPAN_WGMMA_DEVICE
    const int t = i / (16 * kN), k = i / kN % 16, n = i % kN;  // Element k of pair k & ~1.
    *reinterpret_cast<__half*>(bs + t * kTileBytes +
                               4 * twinspan::cuda::exl3_kernel::WgmmaXsOffset(n, k & ~1) +
                               2 * (k & 1)) = b[(16 * t + k) * kN + n];
#endif
  }
#ifdef TWINSPAN_WGMMA_DEVICE
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
  __syncthreads();
}

__device__ __forceinline__ void Fence() {
#ifdef TWINSPAN_WGMMA_DEVICE
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void CommitAndWait() {
#ifdef TWINSPAN_WGMMA_DEVICE
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#endif
}

// The same D by wgmma.m64n256k16, one k-tile a wgmma, each waited for.
__global__ void WgmmaChain(const __half* a, const __half* b, float* d) {
  extern __shared__ __align__(128) unsigned char bs[];
  LoadB(b, bs);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, gid = lane >> 2, tig = lane & 3;
  float c[128] = {};
  for (int t = 0; t < kKt; ++t) {
    uint32_t f[4];
    AFragment(a, w, t, f);
    Fence();
    Wgmma(c, f, bs + t * kTileBytes);
    CommitAndWait();
  }
  // D fragment of m64nN: per 8 columns j, (row gid, cols 2tig, 2tig + 1) and row gid + 8.
#pragma unroll
  for (int j = 0; j < kNc; ++j)
    for (int e = 0; e < 4; ++e)
      d[(16 * w + gid + 8 * (e >> 1)) * kN + 8 * j + 2 * tig + (e & 1)] = c[4 * j + e];
}

// Rates: `reps` passes over the 16 k-tiles, A and B fixed; one float per thread keeps the work.
__global__ void WgmmaRate(const __half* a, const __half* b, float* d, int reps) {
  extern __shared__ __align__(128) unsigned char bs[];
  LoadB(b, bs);
  uint32_t f[4];
  AFragment(a, threadIdx.x >> 5, 0, f);
  float c[128] = {};
  for (int r = 0; r < reps; ++r) {
    Fence();
#pragma unroll
    for (int t = 0; t < kKt; ++t) Wgmma(c, f, bs + t * kTileBytes);
    CommitAndWait();
  }
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 128; ++i) s += c[i];
  d[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void MmaRate(const __half* a, const __half* b, float* d, int reps) {
  uint32_t f[4], bx[kNc][2];
  AFragment(a, threadIdx.x >> 5, 0, f);
#pragma unroll
  for (int j = 0; j < kNc; ++j) BFragment(b, 0, j, bx[j][0], bx[j][1]);
  float c[kNc][4] = {};
  for (int r = 0; r < reps * kKt; ++r)
#pragma unroll
    for (int j = 0; j < kNc; ++j) Mma(c[j], f, bx[j][0], bx[j][1]);
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kNc; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  d[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

struct Verdict {
  double rel_err;  // Against the float64 product.
  int64_t differ;  // Elements whose bits differ from the mma.sync chain's.
};

Verdict Compare(const std::vector<float>& got, const std::vector<float>& mma,
                const std::vector<double>& ref) {
  double num = 0, den = 0;
  int64_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
    differ += std::memcmp(&got[i], &mma[i], sizeof(float)) != 0;
  }
  return {std::sqrt(num / den), differ};
}

// TFLOP/s of `kernel` on `blocks` blocks of 128 threads: median of 5 timed launches.
double Rate(void (*kernel)(const __half*, const __half*, float*, int), int blocks, int smem,
            const __half* da, const __half* db, float* dd) {
  constexpr int kReps = 2000;
  kernel<<<blocks, 128, smem>>>(da, db, dd, 10);
  CHECK_CUDA(cudaGetLastError());
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < 5; ++i) {
    CHECK_CUDA(cudaEventRecord(start));
    kernel<<<blocks, 128, smem>>>(da, db, dd, kReps);
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return 2.0 * kM * kN * kK * kReps * blocks / (ms[2] * 1e-3) / 1e12;
}

}  // namespace

int main() {
  int device = 0, major = 0, minor = 0, sms = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CHECK_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (major != 9 || minor != 0) {
    std::printf("wgmma bits: needs sm_90 (this GPU is sm_%d%d)\n", major, minor);
    return 1;
  }
  CHECK_CUDA(cudaFuncSetAttribute(reinterpret_cast<const void*>(&WgmmaChain),
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  CHECK_CUDA(cudaFuncSetAttribute(reinterpret_cast<const void*>(&WgmmaRate),
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  __half *da = nullptr, *db = nullptr;
  float* dd = nullptr;
  CHECK_CUDA(cudaMalloc(&da, kM * kK * sizeof(__half)));
  CHECK_CUDA(cudaMalloc(&db, kK * kN * sizeof(__half)));
  CHECK_CUDA(cudaMalloc(&dd, static_cast<size_t>(8) * sms * 128 * sizeof(float)));
  int64_t total_differ = 0;
  double worst = 0;
  const float scales[3] = {1.f, 30.f, 1e-3f};
  for (int trial = 0; trial < 3; ++trial) {
    std::mt19937 rng(100 + trial);
    std::normal_distribution<float> normal(0.f, scales[trial]);
    std::vector<__half> ha(kM * kK), hb(kK * kN);
    for (auto& v : ha) v = __float2half(normal(rng));
    for (auto& v : hb) v = __float2half(normal(rng));
    std::vector<double> ref(kM * kN, 0.0);
    for (int m = 0; m < kM; ++m)
      for (int k = 0; k < kK; ++k)
        for (int n = 0; n < kN; ++n)
          ref[m * kN + n] += static_cast<double>(__half2float(ha[m * kK + k])) *
                             static_cast<double>(__half2float(hb[k * kN + n]));
    CHECK_CUDA(cudaMemcpy(da, ha.data(), ha.size() * sizeof(__half), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(db, hb.data(), hb.size() * sizeof(__half), cudaMemcpyHostToDevice));
    auto run = [&](void (*kernel)(const __half*, const __half*, float*), int smem) {
      std::vector<float> out(kM * kN);
      CHECK_CUDA(cudaMemset(dd, 0xFF, kM * kN * sizeof(float)));
      kernel<<<1, 128, smem>>>(da, db, dd);
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaMemcpy(out.data(), dd, kM * kN * sizeof(float), cudaMemcpyDeviceToHost));
      return out;
    };
    const std::vector<float> mma = run(&MmaChain, 0);
    const Verdict vm = Compare(mma, mma, ref);
    const Verdict vw = Compare(run(&WgmmaChain, kSmemBytes), mma, ref);
    std::printf(
        "trial %d (sd %g, %d k-tiles): error against float64: mma.m16n8k16 chain %.3g, "
        "wgmma.m64n256k16 %.3g; %lld of %d elements differ\n",
        trial, scales[trial], kKt, vm.rel_err, vw.rel_err, static_cast<long long>(vw.differ),
        kM * kN);
    total_differ += vw.differ;
    worst = std::max(worst, vw.rel_err / std::max(vm.rel_err, 1e-12));
  }
  const double wg = Rate(&WgmmaRate, sms, kSmemBytes, da, db, dd);
  const double mm = Rate(&MmaRate, 4 * sms, 0, da, db, dd);
  std::printf(
      "rate on %d SMs: wgmma.m64n256k16 (A in registers) %.0f TFLOP/s, mma.m16n8k16 %.0f "
      "TFLOP/s (%.2fx)\n",
      sms, wg, mm, wg / mm);
  CHECK_CUDA(cudaFree(da));
  CHECK_CUDA(cudaFree(db));
  CHECK_CUDA(cudaFree(dd));
  if (worst > 10)
    std::printf("wgmma bits: wgmma did not compute the product (layout); nothing concluded\n");
  else
    std::printf("wgmma bits: %s the mma.m16n8k16 chain (%lld elements differ in all)\n",
                total_differ == 0 ? "SAME as" : "DIFFERENT from",
                static_cast<long long>(total_differ));
  return 0;
}
