// The 16-bit trellis states of one warp lane, read from the lane's words in the device layout
// (kernels/cuda/exl3_layout.h). Plain C++ with CUDA annotations: the device code runs it per lane,
// and host tests check it against the format's definition (exl3-format.md 2.2).
//
// A lane holds, per half-strip of 4 tiles, K words: the concatenation (MSB first) of its own
// 8K-bit region of each tile, i.e. stream bits [8Kl, 8K(l+1)) of tile t at word bits [8Kt,
// 8K(t+1)). Position 8l+j's state is the 16-bit window ending at stream bit (8l+j+1)K, so the lane
// also needs the last 16-K bits of lane l-1's region (lane 31's for lane 0: the ring is
// tail-biting); lane l-1 sends them as SendWord and the receiver passes it as `prev`.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_LANE_WINDOWS_H_
#define TWINSPAN_KERNELS_CUDA_EXL3_LANE_WINDOWS_H_

#include <cstdint>

#if defined(__CUDACC__)
#define TWINSPAN_HD __host__ __device__ __forceinline__
#else
#define TWINSPAN_HD inline
#endif

namespace twinspan::cuda::exl3_bits {

// PRMT: byte i of the result is byte s[4i+2..4i] of y:x (x bytes 0..3, y bytes 4..7).
TWINSPAN_HD uint32_t Prmt(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const uint64_t v = uint64_t{y} << 32 | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i)
    r |= static_cast<uint32_t>(v >> (8 * ((s >> (4 * i)) & 7)) & 0xFFu) << (8 * i);
  return r;
#endif
}

// The high word of (hi:lo) << s, 0 <= s < 32.
TWINSPAN_HD uint32_t FunnelL(uint32_t lo, uint32_t hi, int s) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_l(lo, hi, s);
#else
  return static_cast<uint32_t>(((uint64_t{hi} << 32 | lo) << (s & 31)) >> 32);
#endif
}

// Bits [A, A + 32) of the lane words w[0..K) read MSB first, zeros past the end; A >= 0.
template <int K, int A>
TWINSPAN_HD uint32_t Bits32(const uint32_t (&w)[K]) {
  constexpr int q = A / 32, r = A % 32;
  const uint32_t hi = q < K ? w[q < K ? q : 0] : 0u;
  if constexpr (r == 0) {
    return hi;
  } else {
    const uint32_t lo = q + 1 < K ? w[q + 1 < K ? q + 1 : 0] : 0u;
    return FunnelL(lo, hi, r);
  }
}

// The 16-bit state starting at bit `bit` (MSB first) of the 96-bit string w0:w1:w2.
template <int bit>
TWINSPAN_HD uint32_t StateAt(uint32_t w0, uint32_t w1, uint32_t w2) {
  constexpr int q = bit / 32, r = bit % 32;
  const uint32_t a = q == 0 ? w0 : (q == 1 ? w1 : w2);
  if constexpr (r == 8) {
    return Prmt(a, 0u, 0x4421);  // Bytes 2..1, zero above: one PRMT.
  } else if constexpr (r + 16 <= 32) {
    return (a >> (16 - r)) & 0xFFFFu;
  } else {
    const uint32_t b = q == 0 ? w1 : w2;
    return FunnelL(b, a, r) >> 16;
  }
}

// What a lane sends its successor for tile T: a word whose low 16 - K bits are the last bits of
// its tile-T region (for K = 4 exactly the region's last 16 bits, zero above; for K = 1 the
// region's 8 bits, zero above, since the receiver also needs lane l-2's).
template <int K, int T>
TWINSPAN_HD uint32_t SendWord(const uint32_t (&w)[K]) {
  constexpr int end = 8 * K * (T + 1);
  if constexpr (K == 4) {
    return w[T] & 0xFFFFu;
  } else if constexpr (K == 1) {
    return (w[0] >> (32 - end)) & 0xFFu;
  } else if constexpr (end >= 32) {
    return Bits32<K, end - 32>(w);
  } else {
    return w[0] >> (32 - end);
  }
}

// The prev word of a K = 1 lane from what lanes l-1 and l-2 sent: their 8 + 7 bits.
TWINSPAN_HD uint32_t Prev1(uint32_t from_l1, uint32_t from_l2) { return from_l2 << 8 | from_l1; }

// The states of positions 8l .. 8l+7 of tile T from the lane's words and `prev` (what lane l-1
// sent for tile T; Prev1 of lanes l-1 and l-2 for K = 1).
template <int K, int T>
TWINSPAN_HD void WindowStates(const uint32_t (&w)[K], uint32_t prev, uint32_t s[8]) {
  if constexpr (K == 4) {
    // The 44-bit string is prev[11:0] own[31:0]; windows start every 4 bits. Byte-aligned ones
    // are one PRMT or shift each; the others come from own << 4 (11 instructions for 8 states).
    const uint32_t own = w[T];
    const uint32_t q = FunnelL(own, prev, 4);  // prev[11:0] own[31:28] in bits 15..0.
    const uint32_t own4 = own << 4;
    s[0] = q & 0xFFFFu;
    s[1] = Prmt(own, prev, 0x7643);  // prev[7:0] own[31:24]; prev's bytes 2, 3 are zero.
    s[2] = Prmt(own4, s[0], 0x7643);
    s[3] = own >> 16;
    s[4] = own4 >> 16;
    s[5] = Prmt(own, 0u, 0x4421);
    s[6] = Prmt(own4, 0u, 0x4421);
    s[7] = own & 0xFFFFu;
  } else {
    constexpr int r0 = 8 * K * T;
    const uint32_t w0 = FunnelL(Bits32<K, r0>(w), prev, 16 + K);  // prev's last 16-K bits first.
    const uint32_t w1 = Bits32<K, r0 + 16 + K>(w);
    const uint32_t w2 = K >= 7 ? Bits32<K, r0 + 48 + K>(w) : 0u;
    s[0] = StateAt<0 * K>(w0, w1, w2);
    s[1] = StateAt<1 * K>(w0, w1, w2);
    s[2] = StateAt<2 * K>(w0, w1, w2);
    s[3] = StateAt<3 * K>(w0, w1, w2);
    s[4] = StateAt<4 * K>(w0, w1, w2);
    s[5] = StateAt<5 * K>(w0, w1, w2);
    s[6] = StateAt<6 * K>(w0, w1, w2);
    s[7] = StateAt<7 * K>(w0, w1, w2);
  }
}

// 2-tile work items (9 rows and more) take tiles 2p and 2p+1 of a half-strip. A lane loads
// PairLoadWords(K) words a k-step: for even K the K/2 words of the pair's regions (natural words
// p*K/2 ..), for odd K all K words (the pair's regions then start mid-word).
constexpr int PairLoadWords(int K) { return K % 2 == 0 ? K / 2 : K; }

// The pair's words `c` placed so that tiles 2p and 2p+1 decode as tiles 0 and 1 (SendWord and
// WindowStates read only the bits of their tile's region, so the rest may be anything).
template <int K>
TWINSPAN_HD void PairView(const uint32_t (&c)[PairLoadWords(K)], int p, uint32_t (&v)[K]) {
  if constexpr (K % 2 == 0) {
    for (int i = 0; i < K; ++i) v[i] = i < K / 2 ? c[i < K / 2 ? i : 0] : 0u;
  } else {
    constexpr int q = (K - 1) / 2;  // Tile 2's region starts at bit 16 of word q.
    for (int i = 0; i < K; ++i) {
      uint32_t shifted = 0;
      if (q + i < K)
        shifted = FunnelL(q + i + 1 < K ? c[q + i + 1 < K ? q + i + 1 : 0] : 0u,
                          c[q + i < K ? q + i : 0], 16);
      v[i] = p ? shifted : c[i];
    }
  }
}

}  // namespace twinspan::cuda::exl3_bits

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_LANE_WINDOWS_H_
