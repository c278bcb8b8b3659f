// Host side of TrellisEncode: validation, scratch, and launches of at most 512 MB of back-pointers.
//
// Work per tile: 2 passes x 256 positions x 65536 candidate states, about 10 integer and fp32
// operations each (codebook hash, subtract, fma, compare), one block of 1024 threads per SM. Not
// yet timed on the H200 (no GPU run was made for this change); tests/cuda/trellis_encode_cuda_test
// prints tiles per second.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/trellis_encode.cuh"
#include "kernels/cuda/trellis_encode_kernel.cuh"

namespace twinspan::cuda {
namespace {

namespace tk = trellis_kernel;
using exl3_kernel::Cb;

constexpr size_t kMaxBackBytes = size_t{512} << 20;

template <int K, Cb CB>
cudaError_t Launch(cudaStream_t stream, int64_t tiles, const tk::Args& args) {
  constexpr int kBytes = tk::SharedBytes<K>();
  const cudaError_t e = cudaFuncSetAttribute(tk::TrellisEncodeKernel<K, CB>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes);
  if (e != cudaSuccess) return e;
  tk::TrellisEncodeKernel<K, CB>
      <<<static_cast<unsigned>(tiles), tk::kThreads, kBytes, stream>>>(args);
  return cudaGetLastError();
}

template <int K>
cudaError_t LaunchK(exl3::Codebook codebook, cudaStream_t stream, int64_t tiles,
                    const tk::Args& args) {
  switch (codebook) {
    case exl3::Codebook::k3Inst:
      return Launch<K, Cb::k3inst>(stream, tiles, args);
    case exl3::Codebook::kMcg:
      return Launch<K, Cb::kMcg>(stream, tiles, args);
    case exl3::Codebook::kMul1:
      return Launch<K, Cb::kMul1>(stream, tiles, args);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchBits(int bits, exl3::Codebook codebook, cudaStream_t stream, int64_t tiles,
                       const tk::Args& args) {
  switch (bits) {
    case 1:
      return LaunchK<1>(codebook, stream, tiles, args);
    case 2:
      return LaunchK<2>(codebook, stream, tiles, args);
    case 3:
      return LaunchK<3>(codebook, stream, tiles, args);
    case 4:
      return LaunchK<4>(codebook, stream, tiles, args);
    case 5:
      return LaunchK<5>(codebook, stream, tiles, args);
    case 6:
      return LaunchK<6>(codebook, stream, tiles, args);
    case 7:
      return LaunchK<7>(codebook, stream, tiles, args);
    case 8:
      return LaunchK<8>(codebook, stream, tiles, args);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

absl::Status TrellisEncode(const Context& ctx, const float* tiles, int64_t num_tiles,
                           const cpu::TrellisEncodeParams& params, uint16_t* states,
                           float* values) {
  if (absl::Status s = cpu::ValidateTrellisEncode(tiles, num_tiles, params, states, values);
      !s.ok()) {
    return s;
  }
  if (num_tiles == 0) return absl::OkStatus();
  const size_t edges = size_t{1} << (16 - params.bits);
  const size_t back_per_tile = tk::kPositions * edges;
  const size_t rows_per_tile = params.bits == 1 ? 2 * edges * sizeof(float) : 0;
  const int64_t chunk = std::min<int64_t>(
      num_tiles, std::max<int64_t>(1, kMaxBackBytes / (back_per_tile + rows_per_tile)));
  const size_t bytes = static_cast<size_t>(chunk) * (back_per_tile + rows_per_tile);
  void* scratch = nullptr;
  if (const absl::Status s =
          AllocStatus(cudaMallocAsync(&scratch, bytes, ctx.stream), bytes, "TrellisEncode scratch");
      !s.ok()) {
    return s;
  }
  absl::Status status = absl::OkStatus();
  for (int64_t first = 0; first < num_tiles && status.ok(); first += chunk) {
    const int64_t count = std::min(chunk, num_tiles - first);
    tk::Args args;
    args.tiles = tiles + first * tk::kPositions;
    args.states = states + first * tk::kPositions;
    args.values = values + first * tk::kPositions;
    args.back = static_cast<uint8_t*>(scratch);
    args.rows = params.bits == 1
                    ? reinterpret_cast<float*>(static_cast<uint8_t*>(scratch) +
                                               static_cast<size_t>(chunk) * back_per_tile)
                    : nullptr;
    status.Update(CudaStatus(LaunchBits(params.bits, params.codebook, ctx.stream, count, args),
                             "TrellisEncode launch"));
  }
  const absl::Status freed = CudaStatus(cudaFreeAsync(scratch, ctx.stream), "TrellisEncode free");
  return status.ok() ? freed : status;
}

}  // namespace twinspan::cuda
