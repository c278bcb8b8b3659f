// GPU tests of cuda::KvCache, cuda::KvCopy and cuda::Attention against their CPU twins on random
// K/V/q (never zeros), outputs poisoned first. Tolerances: the caches hold the same bits (bf16
// rounding is the CPU's formula, NaN and ties included); attention rel_fro <= 1e-5 and every
// element |gpu - cpu| <= 1e-4 |cpu| + 1e-6 (only the order of the dot products and sums and the
// expf ulps differ); row invariance bit for bit for 1..64 rows and between the one-block-per-row
// and block-per-chunk strategies. Needs a GPU: scripts/gpu-check.sh runs it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/cpu/kv_copy.h"
#include "kernels/cpu/kv_write.h"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/kv_cache.cuh"
#include "kernels/cuda/kv_copy.cuh"
#include "tests/cuda/cuda_test_util.h"

namespace twinspan::cuda {
namespace {

using testing::BitMismatches;
using testing::DeviceArray;
using testing::IsPoison;
using testing::OutsideTolerance;
using testing::RandomFloats;
using testing::RelFro;

// The same random K/V at every position of a CPU and a GPU cache.
struct Caches {
  Caches(cpu::KvDtype dtype, int64_t capacity, int64_t kv_heads, int64_t head_dim) {
    auto c = cpu::KvCache::Create(dtype, capacity, kv_heads, head_dim);
    EXPECT_TRUE(c.ok());
    host = std::move(*c);
    auto d = KvCache::Create(dtype, capacity, kv_heads, head_dim, nullptr);
    EXPECT_TRUE(d.ok()) << d.status();
    device = std::move(*d);
    const int64_t row = kv_heads * head_dim;
    const std::vector<float> k = RandomFloats(capacity * row, 71 + capacity, 1.0f);
    const std::vector<float> v = RandomFloats(capacity * row, 72 + capacity, 1.0f);
    std::vector<int64_t> positions(capacity);
    for (int64_t p = 0; p < capacity; ++p) {
      positions[p] = p;
      EXPECT_TRUE(host.Write(p, &k[p * row], &v[p * row]).ok());
    }
    DeviceArray<float> dk(k), dv(v);
    EXPECT_TRUE(device->Write({}, positions.data(), capacity, dk.get(), row, dv.get(), row).ok());
    EXPECT_CUDA_CLEAN();
  }
  cpu::KvCache host;
  std::unique_ptr<KvCache> device;
};

std::vector<float> RawCache(const KvCache& cache, bool keys) {
  const KvCacheView& v = cache.view();
  const int64_t n = v.capacity * v.kv_heads * v.head_dim;
  std::vector<float> out(n);
  const void* src = keys ? v.k : v.v;
  if (v.dtype == cpu::KvDtype::kF32) {
    EXPECT_EQ(cudaMemcpy(out.data(), src, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  } else {
    std::vector<uint16_t> raw(n);
    EXPECT_EQ(cudaMemcpy(raw.data(), src, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t bits = static_cast<uint32_t>(raw[i]) << 16;
      std::memcpy(&out[i], &bits, 4);
    }
  }
  return out;
}

class KvCacheCudaTest : public ::testing::TestWithParam<cpu::KvDtype> {};

TEST_P(KvCacheCudaTest, WritesTheCpuKvWritesBitsAtScatteredAndRepeatedPositions) {
  const int64_t capacity = 300, kv_heads = 2, head_dim = 64, row = kv_heads * head_dim;
  auto host = cpu::KvCache::Create(GetParam(), capacity, kv_heads, head_dim);
  auto device = KvCache::Create(GetParam(), capacity, kv_heads, head_dim, nullptr);
  ASSERT_TRUE(host.ok() && device.ok());
  const std::vector<int64_t> positions = {5, 0, 130, 131, 299, 128, 130};  // 130 twice: last wins.
  const int64_t rows = positions.size(), stride = row + 10;
  std::vector<float> k = RandomFloats(rows * stride, 81, 10.0f);
  std::vector<float> v = RandomFloats(rows * stride, 82, 10.0f);
  // Rounding edge cases: ties to even both ways, NaN with a payload, infinities, -0.
  const float specials[] = {1.00390625f,
                            1.01171875f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            -0.0f,
                            std::numeric_limits<float>::quiet_NaN(),
                            3.4e38f,
                            1e-40f};
  for (size_t i = 0; i < std::size(specials); ++i) k[i] = v[stride + i] = specials[i];
  ASSERT_TRUE(
      cpu::KvWrite({}, *host, positions.data(), rows, k.data(), stride, v.data(), stride).ok());
  DeviceArray<float> dk(k), dv(v);
  const KvCacheView& view = (*device)->view();
  const size_t storage = capacity * row * (GetParam() == cpu::KvDtype::kF32 ? 4 : 2);
  ASSERT_EQ(cudaMemset(const_cast<void*>(view.k), 0xFF, storage), cudaSuccess);  // Poison.
  ASSERT_EQ(cudaMemset(const_cast<void*>(view.v), 0xFF, storage), cudaSuccess);
  ASSERT_TRUE(
      (*device)->Write({}, positions.data(), rows, dk.get(), stride, dv.get(), stride).ok());
  EXPECT_CUDA_CLEAN();
  const std::vector<float> gk = RawCache(**device, true), gv = RawCache(**device, false);
  // Positions not written keep the poison (bf16 0xFFFF widens to 0xFFFF0000).
  const uint32_t poison = GetParam() == cpu::KvDtype::kF32 ? 0xFFFFFFFFu : 0xFFFF0000u;
  size_t stray = 0;
  for (int64_t p = 0; p < capacity; ++p) {
    if (std::find(positions.begin(), positions.end(), p) != positions.end()) continue;
    for (int64_t i = 0; i < row; ++i) {
      stray += testing::Bits(gk[p * row + i]) != poison || testing::Bits(gv[p * row + i]) != poison;
    }
  }
  EXPECT_EQ(stray, 0u);
  std::vector<float> want(head_dim);
  size_t bad = 0;
  for (int64_t p : positions) {
    for (int64_t h = 0; h < kv_heads; ++h) {
      host->ReadKey(p, h, want.data());
      for (int64_t i = 0; i < head_dim; ++i) {
        bad += testing::Bits(gk[(p * kv_heads + h) * head_dim + i]) != testing::Bits(want[i]);
      }
      host->ReadValue(p, h, want.data());
      for (int64_t i = 0; i < head_dim; ++i) {
        bad += testing::Bits(gv[(p * kv_heads + h) * head_dim + i]) != testing::Bits(want[i]);
      }
    }
  }
  EXPECT_EQ(bad, 0u);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, KvCacheCudaTest,
                         ::testing::Values(cpu::KvDtype::kBF16, cpu::KvDtype::kF32));

TEST_P(KvCacheCudaTest, KvCopyMovesTheCpuKvCopysBitsAndNothingElse) {
  const int64_t kv_heads = 2, head_dim = 64, row = kv_heads * head_dim;
  Caches src(GetParam(), 200, kv_heads, head_dim);  // random at every position
  auto host_dst = cpu::KvCache::Create(GetParam(), 300, kv_heads, head_dim);
  auto device_dst = KvCache::Create(GetParam(), 300, kv_heads, head_dim, nullptr);
  ASSERT_TRUE(host_dst.ok() && device_dst.ok());
  std::vector<int64_t> all(300);
  for (int64_t p = 0; p < 300; ++p) all[p] = p;
  const std::vector<float> base = RandomFloats(300 * row, 91, 1.0f);
  DeviceArray<float> dbase(base);
  ASSERT_TRUE(
      cpu::KvWrite({}, *host_dst, all.data(), 300, base.data(), row, base.data(), row).ok());
  ASSERT_TRUE((*device_dst)->Write({}, all.data(), 300, dbase.get(), row, dbase.get(), row).ok());
  ASSERT_TRUE(cpu::KvCopy({}, src.host, 37, *host_dst, 128, 150).ok());
  ASSERT_TRUE(KvCopy({}, *src.device, 37, **device_dst, 128, 150).ok());
  EXPECT_CUDA_CLEAN();
  const std::vector<float> gk = RawCache(**device_dst, true), gv = RawCache(**device_dst, false);
  std::vector<float> want(head_dim);
  size_t bad = 0;
  for (int64_t p = 0; p < 300; ++p) {  // Outside [128, 278) the base rows stay.
    for (int64_t h = 0; h < kv_heads; ++h) {
      host_dst->ReadKey(p, h, want.data());
      for (int64_t i = 0; i < head_dim; ++i) {
        bad += testing::Bits(gk[(p * kv_heads + h) * head_dim + i]) != testing::Bits(want[i]);
      }
      host_dst->ReadValue(p, h, want.data());
      for (int64_t i = 0; i < head_dim; ++i) {
        bad += testing::Bits(gv[(p * kv_heads + h) * head_dim + i]) != testing::Bits(want[i]);
      }
    }
  }
  EXPECT_EQ(bad, 0u);
  EXPECT_TRUE(absl::IsOutOfRange(KvCopy({}, *src.device, 100, **device_dst, 0, 101)));
  EXPECT_TRUE(absl::IsOutOfRange(KvCopy({}, *src.device, 0, **device_dst, 250, 51)));
  EXPECT_TRUE(absl::IsInvalidArgument(KvCopy({}, *src.device, 0, *src.device, 10, 1)));
}

TEST(KvCacheCudaTest, RefusesBadArguments) {
  EXPECT_TRUE(
      absl::IsInvalidArgument(KvCache::Create(cpu::KvDtype::kBF16, 0, 2, 64, nullptr).status()));
  auto cache = KvCache::Create(cpu::KvDtype::kBF16, 10, 2, 64, nullptr);
  ASSERT_TRUE(cache.ok());
  DeviceArray<float> k(128), v(128);
  const int64_t outside[] = {10};
  absl::Status s = (*cache)->Write({}, outside, 1, k.get(), 128, v.get(), 128);
  EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
  EXPECT_NE(s.message().find("position 10"), std::string::npos) << s;
  const int64_t one_outside[] = {3, 10};  // All or none: refused before any row is written.
  DeviceArray<float> k2(256), v2(256);
  EXPECT_TRUE(
      absl::IsOutOfRange((*cache)->Write({}, one_outside, 2, k2.get(), 128, v2.get(), 128)));
  const int64_t fine[] = {3};
  EXPECT_TRUE(absl::IsInvalidArgument((*cache)->Write({}, fine, 1, k.get(), 127, v.get(), 128)));
  EXPECT_TRUE(absl::IsInvalidArgument((*cache)->Write({}, fine, 1, nullptr, 128, v.get(), 128)));
  EXPECT_TRUE(absl::IsResourceExhausted(
      KvCache::Create(cpu::KvDtype::kF32, int64_t{1} << 40, 8, 128, nullptr).status()));
}

// ---- Attention ----------------------------------------------------------------------------------

struct AttentionCase {
  int64_t heads, kv_heads, head_dim;
  cpu::KvDtype dtype;
  cpu::AttentionMask mask;
  int64_t window, num_keys, rows;
};

void PrintTo(const AttentionCase& c, std::ostream* os) {
  *os << c.heads << "/" << c.kv_heads << " heads x " << c.head_dim
      << (c.dtype == cpu::KvDtype::kBF16 ? " bf16" : " f32")
      << (c.mask == cpu::AttentionMask::kCausal ? " causal" : " full") << " window " << c.window
      << ", " << c.num_keys << " keys, " << c.rows << " rows";
}

cpu::AttentionShape ShapeOf(const AttentionCase& c) {
  cpu::AttentionShape s;
  s.num_heads = c.heads;
  s.num_kv_heads = c.kv_heads;
  s.head_dim = c.head_dim;
  s.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  s.mask = c.mask;
  s.window = c.window;
  return s;
}

// Causal: the last `rows` positions (a verify window); full: rows spread over the keys.
std::vector<int64_t> PositionsOf(const AttentionCase& c) {
  std::vector<int64_t> p(c.rows);
  for (int64_t r = 0; r < c.rows; ++r) {
    p[r] = c.mask == cpu::AttentionMask::kCausal ? c.num_keys - c.rows + r : (r * 37) % c.num_keys;
  }
  return p;
}

class AttentionCudaTest : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionCudaTest, MatchesCpuForEveryStrategy) {
  const AttentionCase c = GetParam();
  const cpu::AttentionShape shape = ShapeOf(c);
  Caches caches(c.dtype, c.num_keys + 5, c.kv_heads, c.head_dim);
  const std::vector<int64_t> positions = PositionsOf(c);
  const int64_t width = c.heads * c.head_dim, q_stride = width + 64, out_stride = width + 32;
  const std::vector<float> q = RandomFloats(c.rows * q_stride, 91 + c.head_dim, 2.0f);
  std::vector<float> want(c.rows * width);
  ASSERT_TRUE(cpu::Attention({}, shape, q.data(), q_stride, positions.data(), c.rows, caches.host,
                             c.num_keys, want.data(), width)
                  .ok());
  DeviceArray<float> dq(q);
  DeviceArray<uint8_t> workspace(
      AttentionWorkspaceBytes(shape, c.rows, c.num_keys, AttentionStrategy::kBlockPerChunk));
  Context ctx;
  ctx.workspace = workspace.get();
  ctx.workspace_bytes = workspace.size();
  std::vector<float> first;
  for (const AttentionStrategy strategy :
       {AttentionStrategy::kAuto, AttentionStrategy::kOneBlockPerRow,
        AttentionStrategy::kBlockPerChunk}) {
    SCOPED_TRACE(static_cast<int>(strategy));
    DeviceArray<float> out(c.rows * out_stride);
    out.Poison();
    ASSERT_TRUE(Attention(ctx, shape, dq.get(), q_stride, positions.data(), c.rows,
                          caches.device->view(), c.num_keys, out.get(), out_stride, strategy)
                    .ok());
    EXPECT_CUDA_CLEAN();
    const std::vector<float> raw = out.Download();
    std::vector<float> got;
    size_t gaps = 0;
    for (int64_t r = 0; r < c.rows; ++r) {
      got.insert(got.end(), raw.begin() + r * out_stride, raw.begin() + r * out_stride + width);
      for (int64_t i = width; i < out_stride; ++i) gaps += !IsPoison(raw[r * out_stride + i]);
    }
    EXPECT_EQ(gaps, 0u);
    EXPECT_LE(RelFro(got, want), 1e-5);
    EXPECT_EQ(OutsideTolerance(got, want, 1e-4, 1e-6), 0u);
    if (first.empty()) {
      first = got;
    } else {
      EXPECT_EQ(BitMismatches(got, first), 0u) << "strategies disagree";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionCudaTest,
    ::testing::Values(
        // The tiny golden targets: 4 / 2 heads x 64, a prompt and a verify window.
        AttentionCase{4, 2, 64, cpu::KvDtype::kF32, cpu::AttentionMask::kCausal, 0, 80, 80},
        AttentionCase{4, 2, 64, cpu::KvDtype::kBF16, cpu::AttentionMask::kCausal, 0, 300, 16},
        // Qwen3.8-27B's attention: 24 / 4 heads x 256, decode far into the context.
        AttentionCase{24, 4, 256, cpu::KvDtype::kBF16, cpu::AttentionMask::kCausal, 0, 1000, 1},
        AttentionCase{24, 4, 256, cpu::KvDtype::kBF16, cpu::AttentionMask::kCausal, 0, 700, 9},
        // An odd head_dim (3 values a lane) and a sliding window.
        AttentionCase{6, 3, 80, cpu::KvDtype::kF32, cpu::AttentionMask::kCausal, 100, 400, 20},
        // The drafter: 32 / 8 heads x 128, full attention over context + block, with a window.
        AttentionCase{32, 8, 128, cpu::KvDtype::kBF16, cpu::AttentionMask::kFull, 0, 264, 8},
        AttentionCase{32, 8, 128, cpu::KvDtype::kF32, cpu::AttentionMask::kFull, 50, 264, 8},
        // Group 16 x 128 (the kernel's limit) and one query head per kv head.
        AttentionCase{32, 2, 128, cpu::KvDtype::kF32, cpu::AttentionMask::kCausal, 0, 260, 3},
        AttentionCase{8, 8, 32, cpu::KvDtype::kBF16, cpu::AttentionMask::kCausal, 0, 129, 129}));

TEST(AttentionCudaTest, RowsAreInvariantFrom1To64BitForBit) {
  AttentionCase c{24, 4, 256, cpu::KvDtype::kBF16, cpu::AttentionMask::kCausal, 0, 400, 64};
  const cpu::AttentionShape shape = ShapeOf(c);
  Caches caches(c.dtype, c.num_keys, c.kv_heads, c.head_dim);
  const std::vector<int64_t> positions = PositionsOf(c);
  const int64_t width = c.heads * c.head_dim;
  const std::vector<float> q = RandomFloats(c.rows * width, 93, 2.0f);
  DeviceArray<float> dq(q), full(c.rows * width);
  full.Poison();
  ASSERT_TRUE(Attention({}, shape, dq.get(), width, positions.data(), c.rows, caches.device->view(),
                        c.num_keys, full.get(), width, AttentionStrategy::kOneBlockPerRow)
                  .ok());
  const std::vector<float> all = full.Download();
  DeviceArray<uint8_t> workspace(
      AttentionWorkspaceBytes(shape, c.rows, c.num_keys, AttentionStrategy::kBlockPerChunk));
  Context ctx;
  ctx.workspace = workspace.get();
  ctx.workspace_bytes = workspace.size();
  for (int64_t n = 1; n <= c.rows; ++n) {
    // A window of the first n rows, with the num_keys the target passes for it; both strategies.
    DeviceArray<float> part(n * width);
    part.Poison();
    const AttentionStrategy strategy =
        n % 2 ? AttentionStrategy::kBlockPerChunk : AttentionStrategy::kAuto;
    ASSERT_TRUE(Attention(ctx, shape, dq.get(), width, positions.data(), n, caches.device->view(),
                          positions[n - 1] + 1, part.get(), width, strategy)
                    .ok());
    ASSERT_EQ(
        BitMismatches(part.Download(), std::vector<float>(all.begin(), all.begin() + n * width)),
        0u)
        << n << " rows";
  }
  EXPECT_CUDA_CLEAN();
}

TEST(AttentionCudaTest, RefusesBadArguments) {
  AttentionCase c{4, 2, 64, cpu::KvDtype::kBF16, cpu::AttentionMask::kCausal, 0, 100, 1};
  cpu::AttentionShape shape = ShapeOf(c);
  Caches caches(c.dtype, 100, 2, 64);
  DeviceArray<float> q(256), out(256);
  const KvCacheView kv = caches.device->view();
  const int64_t p50[] = {50}, p100[] = {100}, negative[] = {-1};
  const auto run = [&](const cpu::AttentionShape& s, const int64_t* positions, int64_t num_keys,
                       int64_t stride = 256) {
    return Attention({}, s, q.get(), stride, positions, 1, kv, num_keys, out.get(), 256);
  };
  EXPECT_TRUE(run(shape, p50, 100).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(run(shape, p100, 100)));  // Position past the keys.
  EXPECT_TRUE(absl::IsInvalidArgument(run(shape, negative, 100)));
  EXPECT_TRUE(absl::IsInvalidArgument(run(shape, p50, 101)));  // Past the capacity.
  EXPECT_TRUE(absl::IsInvalidArgument(run(shape, p50, 0)));
  EXPECT_TRUE(absl::IsInvalidArgument(run(shape, p50, 100, 255)));  // q_stride below the row.
  cpu::AttentionShape bad = shape;
  bad.num_kv_heads = 1;
  EXPECT_TRUE(absl::IsInvalidArgument(run(bad, p50, 100)));  // Disagrees with the cache.
  bad = shape;
  bad.num_heads = 3;
  EXPECT_TRUE(absl::IsInvalidArgument(run(bad, p50, 100)));
  absl::Status s = Attention({}, shape, q.get(), 256, p50, 1, kv, 100, out.get(), 256,
                             AttentionStrategy::kBlockPerChunk);
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  Caches wide(cpu::KvDtype::kBF16, 4, 1, 512);
  cpu::AttentionShape too_wide = shape;
  too_wide.num_heads = 1;
  too_wide.num_kv_heads = 1;
  too_wide.head_dim = 512;
  DeviceArray<float> q512(512), out512(512);
  s = Attention({}, too_wide, q512.get(), 512, p50, 1, wide.device->view(), 1, out512.get(), 512);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("limits"), std::string::npos) << s;
}

}  // namespace
}  // namespace twinspan::cuda
