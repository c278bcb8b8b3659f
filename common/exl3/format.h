// EXL3 storage constants (exllamav3 v1.4.1; the format is unchanged since its first release).
// See docs/formats.md and shared/reference/exl3-format.md for the layout these numbers describe.
#ifndef TWINSPAN_COMMON_EXL3_FORMAT_H_
#define TWINSPAN_COMMON_EXL3_FORMAT_H_

#include <cstdint>
#include <string_view>

namespace twinspan::exl3 {

// A tile is 16 x 16 weights of the rotated matrix, stored as one tail-biting trellis of 256 codes.
inline constexpr int kTileSize = 16;
inline constexpr int kTileWeights = kTileSize * kTileSize;
// Both Hadamard rotations work on 128-element blocks, so k and n are multiples of 128.
inline constexpr int kHadamardSize = 128;
inline constexpr int kTilesPerBlock = kHadamardSize / kTileSize;
// Bits per weight (K) of one tensor; trellis.shape[-1] == 16 * K.
inline constexpr int kMinBits = 1;
inline constexpr int kMaxBits = 8;
// Each trellis state is a 16-bit window of the tile's bitstream.
inline constexpr int kStateBits = 16;

// Marker tensors' values: the multipliers are locked since exllamav3 v0.0.9.
inline constexpr uint32_t kMcgMultiplier = 0xCBAC1FEDu;
inline constexpr uint32_t kMul1Multiplier = 0x83DCD12Du;
// 3inst (QTIP's LCG) constants.
inline constexpr uint32_t k3InstMultiplier = 89226354u;
inline constexpr uint32_t k3InstAddend = 64248484u;

// Tensor name suffixes under a linear's prefix.
inline constexpr char kTrellisSuffix[] = ".trellis";
inline constexpr char kSuhSuffix[] = ".suh";
inline constexpr char kSvhSuffix[] = ".svh";
inline constexpr char kSuSuffix[] = ".su";  // Legacy packed signs, [k/16] I16.
inline constexpr char kSvSuffix[] = ".sv";  // Legacy packed signs, [n/16] I16.
inline constexpr char kBiasSuffix[] = ".bias";
inline constexpr char kMcgSuffix[] = ".mcg";
inline constexpr char kMul1Suffix[] = ".mul1";
inline constexpr char kScaleSuffix[] = ".scale";  // Pre-release; always refused.

// Which procedural codebook maps a 16-bit state to an fp16 weight. No marker tensor means 3inst.
enum class Codebook { k3Inst, kMcg, kMul1 };

// "3inst", "mcg" or "mul1", as quantization_config.json spells them.
std::string_view CodebookName(Codebook codebook);

}  // namespace twinspan::exl3

#endif  // TWINSPAN_COMMON_EXL3_FORMAT_H_
