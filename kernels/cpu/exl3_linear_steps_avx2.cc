// The kAvx2 steps of cpu::Exl3Linear: AVX2 + FMA + F16C code in functions marked for those
// instruction sets, so the rest of the binary stays baseline x86-64 (ctx.isa picks them).
//
// Decode: trellis position p = p0 + 32 l (p0 < 32, l < 8) holds tile element (r(p0), 8 h(p0) + l)
// (kTensorCorePerm), and its 16-bit window starts K words after position p0's. So one gather per
// word offset (K + 1 of them) puts lane l's words side by side, and each p0 gives the states of 8
// consecutive columns of one tile row with one uniform shift: the codebook then runs on 8 states
// and the result is stored straight into the strip, with no permutation step.
// Accumulate: 6 rows x 16 columns of partial sums stay in registers for the strip's 16 k steps;
// each step is an FMA, which rounds as the multiply-then-add it replaces (products are exact).
// This file is built with -ffp-contract=off: every other multiply and add rounds on its own.
#if defined(__x86_64__)

#include <immintrin.h>

#include <array>
#include <cstring>
#include <utility>

#include "common/exl3/codebook.h"
#include "common/exl3/format.h"
#include "common/exl3/hadamard.h"
#include "kernels/cpu/exl3_linear_steps.h"

#define TWINSPAN_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace twinspan::cpu::exl3_steps {
namespace {

using exl3::Codebook;
using exl3::kMaxBits;
using exl3::kMinBits;
using exl3::kTileSize;
using exl3::kTilesPerBlock;

constexpr int kLanes = 8;
constexpr int kFirstPositions = 32;  // p0: positions 0..31, each one vector of 8 states.

// Per K: the gather indices (lane l, word offset o: word K l + o - 1 of the tile, the ring's last
// word for l = o = 0) and for each p0 its two word offsets, shift and place in the strip.
struct WindowPlan {
  std::array<std::array<int32_t, kLanes>, kMaxBits + 1> gather{};
  std::array<uint8_t, kFirstPositions> first{}, last{}, shift{};
  std::array<uint16_t, kFirstPositions> offset{};  // r * 128 + 8 h, in floats.
};

constexpr std::array<WindowPlan, kMaxBits + 1> kPlans = [] {
  std::array<WindowPlan, kMaxBits + 1> plans{};
  for (int bits = kMinBits; bits <= kMaxBits; ++bits) {
    WindowPlan& plan = plans[bits];
    const int words = 8 * bits;
    for (int o = 0; o <= bits; ++o) {
      for (int l = 0; l < kLanes; ++l) plan.gather[o][l] = (bits * l + o - 1 + words) % words;
    }
    for (int p0 = 0; p0 < kFirstPositions; ++p0) {
      // As exl3::TileStates: the window ends at bit (p0 + 1) * K, +32 for the ring's wrap word.
      const int end = (p0 + 1) * bits + 32;
      const int last = (end - 1) / 32;
      plan.first[p0] = static_cast<uint8_t>((end - exl3::kStateBits) / 32);
      plan.last[p0] = static_cast<uint8_t>(last);
      plan.shift[p0] = static_cast<uint8_t>((last + 1) * 32 - end);
      const int a = p0 / 8, j = p0 % 8;
      const int r = 2 * a + (j & 1) + 8 * ((j >> 1) & 1);
      plan.offset[p0] = static_cast<uint16_t>(r * kBlockColumns + 8 * (j >> 2));
    }
  }
  return plans;
}();

// internal::RoundToHalfPrecision on 8 floats' bits.
TWINSPAN_AVX2 inline __m256 RoundToHalfPrecision(__m256i b) {
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(b, 13), _mm256_set1_epi32(1));
  b = _mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0xfff)), odd);
  return _mm256_castsi256_ps(_mm256_and_si256(b, _mm256_set1_epi32(~0x1fff)));
}

// internal::MaskedPairSum: both halves of x as normal fp16, summed, rounded to fp16.
TWINSPAN_AVX2 inline __m256 MaskedPairSum(__m256i x) {
  x = _mm256_xor_si256(_mm256_and_si256(x, _mm256_set1_epi32(static_cast<int>(0x8fff8fffu))),
                       _mm256_set1_epi32(0x3b603b60));
  const __m256i rebias = _mm256_set1_epi32(112 << 23);
  const __m256i lo = _mm256_or_si256(
      _mm256_slli_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x8000)), 16),
      _mm256_add_epi32(_mm256_slli_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fff)), 13),
                       rebias));
  const __m256i hi = _mm256_or_si256(
      _mm256_and_si256(x, _mm256_set1_epi32(static_cast<int>(0x80000000u))),
      _mm256_add_epi32(_mm256_and_si256(_mm256_srli_epi32(x, 3), _mm256_set1_epi32(0x0fffe000)),
                       rebias));
  const __m256 sum = _mm256_add_ps(_mm256_castsi256_ps(lo), _mm256_castsi256_ps(hi));
  return RoundToHalfPrecision(_mm256_castps_si256(sum));
}

// exl3::CodebookValue<kCodebook> of 8 states (< 65536 each).
template <Codebook kCodebook>
TWINSPAN_AVX2 inline __m256 CodebookValues(__m256i state) {
  if constexpr (kCodebook == Codebook::k3Inst) {
    const __m256i x = _mm256_mullo_epi32(state, _mm256_set1_epi32(exl3::k3InstMultiplier));
    return MaskedPairSum(_mm256_add_epi32(x, _mm256_set1_epi32(exl3::k3InstAddend)));
  } else if constexpr (kCodebook == Codebook::kMcg) {
    return MaskedPairSum(
        _mm256_mullo_epi32(state, _mm256_set1_epi32(static_cast<int>(exl3::kMcgMultiplier))));
  } else {
    const __m256i x =
        _mm256_mullo_epi32(state, _mm256_set1_epi32(static_cast<int>(exl3::kMul1Multiplier)));
    // Bytes summed in pairs (unsigned x signed 1: 16-bit), then the pairs (32-bit): 0..1020.
    const __m256i pairs = _mm256_maddubs_epi16(x, _mm256_set1_epi8(1));
    const __m256i byte_sum = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
    // (1024 + byte_sum) * scale + offset is exact in fp32 (see CodebookValue), and so is
    // 1024 * scale + offset (-3.453125): one FMA gives the same value.
    constexpr float kOffset = 1024 * exl3::kMul1Scale + exl3::kMul1Offset;
    static_assert(kOffset == -3.453125f);
    const __m256 v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(byte_sum), _mm256_set1_ps(exl3::kMul1Scale),
                                     _mm256_set1_ps(kOffset));
    return RoundToHalfPrecision(_mm256_castps_si256(v));
  }
}

// One tile into out (row stride 128 floats). Unrolled per K, so the word offsets and shifts are
// constants and lane l's words stay in registers.
template <int kBits, Codebook kCodebook>
TWINSPAN_AVX2 void DecodeTile(const std::byte* tile, float* out) {
  constexpr const WindowPlan& plan = kPlans[kBits];
  __m256i words[kBits + 1];
  const int* base = reinterpret_cast<const int*>(tile);
#pragma GCC unroll 9
  for (int o = 0; o <= kBits; ++o) {
    const __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&plan.gather[o]));
    words[o] = _mm256_i32gather_epi32(base, index, 4);
  }
  const __m256i low16 = _mm256_set1_epi32(0xffff);
#pragma GCC unroll 32
  for (int p0 = 0; p0 < kFirstPositions; ++p0) {
    const int shift = plan.shift[p0];
    // The low 16 bits of (first << 32 | last) >> shift. A window inside one word (first ==
    // last, so shift <= 16) needs no bits of the word before it (constants once unrolled).
    __m256i window = _mm256_srli_epi32(words[plan.last[p0]], shift);
    if (plan.first[p0] != plan.last[p0]) {
      window = _mm256_or_si256(window, _mm256_slli_epi32(words[plan.first[p0]], 32 - shift));
    }
    const __m256i state = shift == 16 ? window : _mm256_and_si256(window, low16);
    _mm256_storeu_ps(out + plan.offset[p0], CodebookValues<kCodebook>(state));
  }
}

template <int kBits, Codebook kCodebook>
TWINSPAN_AVX2 void DecodeTiles(const exl3::Weight& w, int64_t tk, int64_t block, float* strip) {
  for (int64_t t = 0; t < kTilesPerBlock; ++t) {
    DecodeTile<kBits, kCodebook>(w.tile(tk, block * kTilesPerBlock + t), strip + t * kTileSize);
  }
}

using DecodeStripFn = void (*)(const exl3::Weight&, int64_t, int64_t, float*);

// DecodeTiles<K, kCodebook> for the weight's K.
template <Codebook kCodebook, int... kBitsLess1>
TWINSPAN_AVX2 void DecodeTilesOf(const exl3::Weight& w, int64_t tk, int64_t block, float* strip,
                                 std::integer_sequence<int, kBitsLess1...>) {
  constexpr DecodeStripFn kByBits[] = {&DecodeTiles<kBitsLess1 + 1, kCodebook>...};
  kByBits[w.bits() - kMinBits](w, tk, block, strip);
}

// kRows rows x 8 * kVectors columns of sums in registers over the strip's 16 steps.
template <int kRows, int kVectors>
TWINSPAN_AVX2 inline void AccumulateTile(const float* xh, int64_t xh_stride, const float* strip,
                                         const StripSums& out) {
  __m256 acc[kRows][kVectors];
#pragma GCC unroll 16
  for (int64_t m = 0; m < kRows; ++m) {
#pragma GCC unroll 16
    for (int64_t v = 0; v < kVectors; ++v) {
      acc[m][v] =
          out.first ? _mm256_setzero_ps() : _mm256_loadu_ps(out.sums + m * kBlockColumns + 8 * v);
    }
  }
  for (int64_t r = 0; r < kTileSize; ++r) {
    __m256 w[kVectors];
#pragma GCC unroll 16
    for (int64_t v = 0; v < kVectors; ++v)
      w[v] = _mm256_loadu_ps(strip + r * kBlockColumns + 8 * v);
#pragma GCC unroll 16
    for (int64_t m = 0; m < kRows; ++m) {
      const __m256 a = _mm256_broadcast_ss(xh + m * xh_stride + r);
#pragma GCC unroll 16
      for (int64_t v = 0; v < kVectors; ++v) acc[m][v] = _mm256_fmadd_ps(a, w[v], acc[m][v]);
    }
  }
#pragma GCC unroll 16
  for (int64_t m = 0; m < kRows; ++m) {
#pragma GCC unroll 16
    for (int64_t v = 0; v < kVectors; ++v) {
      const int64_t i = m * kBlockColumns + 8 * v;
      if (out.fold == nullptr) {
        _mm256_storeu_ps(out.sums + i, acc[m][v]);
        continue;
      }
      const __m256 folded = _mm256_add_ps(_mm256_loadu_ps(out.fold + i), acc[m][v]);
      _mm256_storeu_ps(out.fold + i, folded);
      if (out.fold2 != nullptr) {
        _mm256_storeu_ps(out.fold2 + i, _mm256_add_ps(_mm256_loadu_ps(out.fold2 + i), folded));
      }
    }
  }
}

// 6 x 2 accumulators (12 FMAs in flight for two pipes of latency 4), 16 columns; fewer rows take
// wider column runs, up to 8 vectors.
template <int kRows>
TWINSPAN_AVX2 void AccumulateRows(const float* xh, int64_t xh_stride, const float* strip,
                                  const StripSums& out) {
  constexpr int64_t kVectors = kRows >= 3 ? 2 : 8 / kRows;
  for (int64_t c = 0; c < kBlockColumns; c += 8 * kVectors) {
    AccumulateTile<kRows, kVectors>(xh, xh_stride, strip + c, out.At(c));
  }
}

// The butterflies (a, b) -> (a + b, a - b) at distance h < 8, inside one vector: lanes whose h
// bit is clear take v + partner (a + b), the others partner - v (a - b).
TWINSPAN_AVX2 inline __m256 ButterflyIn1(__m256 v) {
  const __m256 p = _mm256_permute_ps(v, 0b10110001);
  return _mm256_blend_ps(_mm256_add_ps(v, p), _mm256_sub_ps(p, v), 0b10101010);
}
TWINSPAN_AVX2 inline __m256 ButterflyIn2(__m256 v) {
  const __m256 p = _mm256_permute_ps(v, 0b01001110);
  return _mm256_blend_ps(_mm256_add_ps(v, p), _mm256_sub_ps(p, v), 0b11001100);
}
TWINSPAN_AVX2 inline __m256 ButterflyIn4(__m256 v) {
  const __m256 p = _mm256_permute2f128_ps(v, v, 1);
  return _mm256_blend_ps(_mm256_add_ps(v, p), _mm256_sub_ps(p, v), 0b11110000);
}

// exl3::Hadamard128 on 16 vectors: the same butterflies of the same values, so the same bits.
TWINSPAN_AVX2 inline void Hadamard128(__m256 (&v)[16]) {
#pragma GCC unroll 16
  for (__m256& x : v) x = ButterflyIn4(ButterflyIn2(ButterflyIn1(x)));
#pragma GCC unroll 16
  for (int h = 1; h < 16; h *= 2) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      if ((i & h) != 0) continue;
      const __m256 a = v[i], b = v[i + h];
      v[i] = _mm256_add_ps(a, b);
      v[i + h] = _mm256_sub_ps(a, b);
    }
  }
  const __m256 scale = _mm256_set1_ps(exl3::kHadamardScale);
#pragma GCC unroll 16
  for (__m256& x : v) x = _mm256_mul_ps(x, scale);
}

}  // namespace

TWINSPAN_AVX2 void RotateRowAvx2(const float* x, const float* suh, int64_t k, float* xh) {
  for (int64_t i = 0; i < k; i += kBlockColumns) {
    __m256 v[16];
#pragma GCC unroll 16
    for (int64_t j = 0; j < 16; ++j) {
      v[j] = _mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * j), _mm256_loadu_ps(suh + i + 8 * j));
    }
    Hadamard128(v);
// F16C rounds to nearest even as FloatToHalf does (inf from 65520, NaN kept quiet).
#pragma GCC unroll 16
    for (int64_t j = 0; j < 16; ++j) {
      const __m128i half = _mm256_cvtps_ph(v[j], _MM_FROUND_TO_NEAREST_INT);
      _mm256_storeu_ps(xh + i + 8 * j, _mm256_cvtph_ps(half));
    }
  }
}

TWINSPAN_AVX2 void DecodeStripAvx2(const exl3::Weight& w, int64_t tk, int64_t block, float* strip) {
  // The next strip down lies a whole tile row away (another page): the hardware prefetchers
  // miss it, and a forward's weights stream from L3.
  if (tk + 1 < w.k() / kTileSize) {
    const char* next = reinterpret_cast<const char*>(w.tile(tk + 1, block * kTilesPerBlock));
    for (int64_t b = 0; b < kTilesPerBlock * w.tile_bytes(); b += 64) {
      _mm_prefetch(next + b, _MM_HINT_T0);
    }
  }
  constexpr auto kAllBits = std::make_integer_sequence<int, kMaxBits>();
  switch (w.codebook()) {
    case Codebook::k3Inst:
      return DecodeTilesOf<Codebook::k3Inst>(w, tk, block, strip, kAllBits);
    case Codebook::kMcg:
      return DecodeTilesOf<Codebook::kMcg>(w, tk, block, strip, kAllBits);
    case Codebook::kMul1:
      return DecodeTilesOf<Codebook::kMul1>(w, tk, block, strip, kAllBits);
  }
}

void AccumulateStripAvx2(const float* xh, int64_t xh_stride, int64_t rows, const float* strip,
                         const StripSums& out) {
  constexpr RowsKernel kKernels[] = {nullptr,
                                     &AccumulateRows<1>,
                                     &AccumulateRows<2>,
                                     &AccumulateRows<3>,
                                     &AccumulateRows<4>,
                                     &AccumulateRows<5>,
                                     &AccumulateRows<6>};
  RunRowBlocks(kKernels, xh, xh_stride, rows, strip, out);
}

TWINSPAN_AVX2 void FinishBlockAvx2(float* total, const float* svh, const float* bias, float* out) {
  __m256 v[16];
#pragma GCC unroll 16
  for (int64_t j = 0; j < 16; ++j) v[j] = _mm256_loadu_ps(total + 8 * j);
  Hadamard128(v);
#pragma GCC unroll 16
  for (int64_t j = 0; j < 16; ++j) {
    __m256 y = _mm256_mul_ps(v[j], _mm256_loadu_ps(svh + 8 * j));
    if (bias != nullptr) y = _mm256_add_ps(y, _mm256_loadu_ps(bias + 8 * j));
    _mm256_storeu_ps(out + 8 * j, y);
  }
}

}  // namespace twinspan::cpu::exl3_steps

#undef TWINSPAN_AVX2

#endif  // defined(__x86_64__)
