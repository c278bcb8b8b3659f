#include "tools/synth/fill.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "common/safetensors/half.h"

namespace twinspan::synth {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// splitmix64's output function: a bijective 64-bit mix.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t Fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

// splitmix64: one 64-bit word per call, about 1 ns.
class Words {
 public:
  explicit Words(uint64_t key) : state_(key) {}
  uint64_t Next() { return Mix(state_ += kGolden); }

 private:
  uint64_t state_;
};

// Unit interval from 16 random bits, centred in each of the 65536 cells: never 0 or 1.
float Unit16(uint64_t bits) { return (static_cast<float>(bits & 0xffff) + 0.5f) * 0x1p-16f; }

void Store16(std::byte* out, int64_t i, uint16_t v) { std::memcpy(out + 2 * i, &v, 2); }

// Elements [0, n) of one block, drawn from `words`.
void FillBlock(const TensorSpec& t, Words& words, int64_t n, std::byte* out) {
  const Fill& f = t.fill;
  switch (f.kind) {
    case FillKind::kConstant:
      for (int64_t i = 0; i < n; ++i) std::memcpy(out + 4 * i, &f.value, 4);
      return;
    case FillKind::kRandomBits: {
      const int64_t bytes = n * static_cast<int64_t>(DTypeSize(t.dtype));
      for (int64_t i = 0; i < bytes; i += 8) {
        const uint64_t w = words.Next();
        std::memcpy(out + i, &w, std::min<int64_t>(8, bytes - i));
      }
      return;
    }
    case FillKind::kSignScale:
      for (int64_t i = 0; i < n; i += 4) {
        const uint64_t w = words.Next();
        for (int64_t j = 0; j < 4 && i + j < n; ++j) {
          const uint64_t bits = w >> (16 * j);
          const float magnitude =
              f.lo + (f.hi - f.lo) * (static_cast<float>(bits & 0x7fff) + 0.5f) * 0x1p-15f;
          Store16(out, i + j, FloatToHalf((bits & 0x8000) ? -magnitude : magnitude));
        }
      }
      return;
    case FillKind::kUniform:
      for (int64_t i = 0; i < n; i += 4) {
        const uint64_t w = words.Next();
        for (int64_t j = 0; j < 4 && i + j < n; ++j) {
          const float v = f.lo + (f.hi - f.lo) * Unit16(w >> (16 * j));
          if (t.dtype == DType::kBF16) {
            Store16(out, i + j, FloatToBFloat16(v));
          } else if (t.dtype == DType::kF16) {
            Store16(out, i + j, FloatToHalf(v));
          } else {
            std::memcpy(out + 4 * (i + j), &v, 4);
          }
        }
      }
      return;
  }
}

}  // namespace

void FillElements(const TensorSpec& t, uint64_t seed, int64_t begin, int64_t count,
                  std::byte* out) {
  const uint64_t stream = Mix(seed ^ Mix(Fnv1a64(t.name)));
  const int64_t element_bytes = static_cast<int64_t>(DTypeSize(t.dtype));
  for (int64_t done = 0; done < count;) {
    const int64_t block = (begin + done) / kFillBlockElements;
    const int64_t n = std::min(kFillBlockElements, count - done);
    Words words(Mix(stream + static_cast<uint64_t>(block) * kGolden));
    FillBlock(t, words, n, out + done * element_bytes);
    done += n;
  }
}

}  // namespace twinspan::synth
