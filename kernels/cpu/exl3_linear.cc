#include "kernels/cpu/exl3_linear.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/exl3/format.h"
#include "common/exl3/hadamard.h"
#include "common/exl3/tile_decode.h"
#include "common/safetensors/half.h"

namespace twinspan::cpu {
namespace {

using exl3::kHadamardSize;
using exl3::kTileSize;
using exl3::kTilesPerBlock;

// Fewest 16 x 16 tiles worth a thread of their own.
constexpr int64_t kTilesPerThread = 1024;

// Step 1 for one row: xh = fp16(H128(x * suh)).
void RotateInput(const float* x, const exl3::Weight& w, float* xh) {
  const auto suh = w.suh();
  for (int64_t i = 0; i < w.k(); ++i) xh[i] = x[i] * suh[i];
  for (int64_t i = 0; i < w.k(); i += kHadamardSize) exl3::Hadamard128(xh + i);
  for (int64_t i = 0; i < w.k(); ++i) xh[i] = HalfToFloat(FloatToHalf(xh[i]));
}

// Steps 2 and 3 for output block `block` (columns [128 * block, 128 * block + 128)), all rows.
class BlockWorker {
 public:
  BlockWorker(const exl3::Weight& w, const float* xh, int64_t rows, float* y, int64_t y_stride)
      : w_(w),
        xh_(xh),
        rows_(rows),
        y_(y),
        y_stride_(y_stride),
        partial_(rows * kHadamardSize),
        split_(rows * kHadamardSize),
        total_(rows * kHadamardSize) {}

  void Run(int64_t block) {
    const int64_t kt = w_.k() / kTileSize;
    const int warps = w_.plan().warps;
    const int64_t groups = int64_t{w_.plan().k_splits} * warps;
    const int64_t tiles_per_group = kt / groups;
    std::fill(partial_.begin(), partial_.end(), 0.0f);
    for (int64_t tk = 0; tk < kt; ++tk) {
      for (int t = 0; t < kTilesPerBlock; ++t) {
        exl3::DecodeTile(w_.tile(tk, block * kTilesPerBlock + t), w_.bits(), w_.codebook(),
                         strip_ + t * kTileSize, kHadamardSize);
      }
      for (int64_t m = 0; m < rows_; ++m) {
        AccumulateStrip(xh_ + m * w_.k() + tk * kTileSize, strip_,
                        partial_.data() + m * kHadamardSize);
      }
      if ((tk + 1) % tiles_per_group == 0) {
        const int64_t group = tk / tiles_per_group;
        Fold(partial_, split_, group % warps == 0);
        std::fill(partial_.begin(), partial_.end(), 0.0f);
        if (group % warps == warps - 1) Fold(split_, total_, group / warps == 0);
      }
    }
    WriteOutput(block);
  }

 private:
  // acc[c] += xh[r] * strip[r][c] for r = 0..15 in order (restrict lets the compiler vectorize
  // over c; each product is exact, so vector and scalar code give the same bits).
  static void AccumulateStrip(const float* __restrict xh, const float* __restrict strip,
                              float* __restrict acc) {
    for (int r = 0; r < kTileSize; ++r) {
      const float a = xh[r];
      const float* __restrict wr = strip + r * kHadamardSize;
      for (int c = 0; c < kHadamardSize; ++c) acc[c] += a * wr[c];
    }
  }

  // to = from (first) or to += from, elementwise.
  static void Fold(const std::vector<float>& from, std::vector<float>& to, bool first) {
    if (first) {
      std::copy(from.begin(), from.end(), to.begin());
    } else {
      for (size_t i = 0; i < to.size(); ++i) to[i] += from[i];
    }
  }

  void WriteOutput(int64_t block) {
    const int64_t col0 = block * kHadamardSize;
    const float* svh = w_.svh().data() + col0;
    const float* bias = w_.has_bias() ? w_.bias().data() + col0 : nullptr;
    for (int64_t m = 0; m < rows_; ++m) {
      float* t = total_.data() + m * kHadamardSize;
      exl3::Hadamard128(t);
      float* out = y_ + m * y_stride_ + col0;
      for (int c = 0; c < kHadamardSize; ++c) out[c] = t[c] * svh[c];
      if (bias != nullptr) {
        for (int c = 0; c < kHadamardSize; ++c) out[c] += bias[c];
      }
    }
  }

  const exl3::Weight& w_;
  const float* xh_;
  int64_t rows_;
  float* y_;
  int64_t y_stride_;
  float strip_[kTileSize * kHadamardSize] = {};  // Decoded 16 x 128 strip of W_hat.
  std::vector<float> partial_, split_, total_;   // [rows, 128] each.
};

}  // namespace

absl::Status Exl3Linear(const float* x, int64_t x_stride, int64_t rows, const exl3::Weight& w,
                        float* y, int64_t y_stride, int num_threads) {
  if (w.k() <= 0 || rows < 0 || x_stride < w.k() || y_stride < w.n() || num_threads < 1 ||
      (rows > 0 && (x == nullptr || y == nullptr))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Exl3Linear on \"", w.name(), "\" [k=", w.k(), ", n=", w.n(), "]: rows ", rows,
        ", x_stride ", x_stride, ", y_stride ", y_stride, ", num_threads ", num_threads,
        " (needs a loaded weight, rows >= 0, strides >= k and n, non-null x and y)"));
  }
  if (rows == 0) return absl::OkStatus();
  std::vector<float> xh(static_cast<size_t>(rows * w.k()));
  for (int64_t m = 0; m < rows; ++m) RotateInput(x + m * x_stride, w, xh.data() + m * w.k());

  const int64_t blocks = w.n() / kHadamardSize;
  // A thread start costs about as much as decoding a few hundred tiles; small weights run inline.
  const int64_t tiles = blocks * kTilesPerBlock * (w.k() / kTileSize);
  const int64_t threads =
      std::max<int64_t>(1, std::min<int64_t>({num_threads, blocks, tiles / kTilesPerThread}));
  auto run_range = [&](int64_t t) {
    BlockWorker worker(w, xh.data(), rows, y, y_stride);
    for (int64_t b = blocks * t / threads; b < blocks * (t + 1) / threads; ++b) worker.Run(b);
  };
  std::vector<std::thread> helpers;
  for (int64_t t = 1; t < threads; ++t) helpers.emplace_back(run_range, t);
  run_range(0);
  for (std::thread& helper : helpers) helper.join();
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
