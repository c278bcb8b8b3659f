// The trellis layout the CUDA EXL3 linear reads, made once when a weight is uploaded: whole
// 128-column blocks one after another (so a column view is a contiguous range), and inside them
// each warp lane's bits of 4 tiles in one run of words, so a lane loads them with 16-byte loads
// and needs only one shuffle per tile for the bits before its own (exl3_lane_windows.h).
//
// Order: column block b (128 columns), half h (tile columns 8b + 4h .. 8b + 4h + 3), k-tile tk;
// each such half-strip is 32 lanes x K words. Lane l's K words hold, MSB first, stream bits
// [8Kl, 8K(l+1)) of its 4 tiles in column order. The words are stored as vectors of
// Exl3VectorWords(K) words: vector v of lane l at words (v * 32 + l) * V .. + V - 1.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_LAYOUT_H_
#define TWINSPAN_KERNELS_CUDA_EXL3_LAYOUT_H_

#include <cstdint>

namespace twinspan::cuda {

// Words per vector load for K bits: 16 bytes when K is a multiple of 4, 8 when even, else 4.
constexpr int Exl3VectorWords(int bits) { return bits % 4 == 0 ? 4 : (bits % 2 == 0 ? 2 : 1); }

// Words of one 128-column block of a k-row weight: 16 * k * K bytes.
constexpr int64_t Exl3BlockWords(int64_t k, int bits) { return k * 4 * bits; }

// Word offset, inside a half-strip, of lane `lane`'s natural word `word` (0..bits-1).
constexpr int Exl3LaneWordOffset(int bits, int lane, int word) {
  return ((word / Exl3VectorWords(bits)) * 32 + lane) * Exl3VectorWords(bits) +
         word % Exl3VectorWords(bits);
}

// Reorders a stored trellis (tile (tk, tn) at byte (tk * src_row_tiles + tn) * 32 * bits of
// `src`, exl3's little-endian int16 storage, any alignment) of a k x n weight into `dst`, n / 128
// blocks of Exl3BlockWords(k, bits) words. REQUIRES: k, n multiples of 128, 1 <= bits <= 8,
// src_row_tiles >= n / 16.
void ToExl3DeviceLayout(const void* src, int64_t src_row_tiles, int64_t k, int64_t n, int bits,
                        uint32_t* dst);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_LAYOUT_H_
