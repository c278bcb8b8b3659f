#include "common/exl3/quantize/hessian.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "common/exl3/format.h"
#include "common/exl3/quantize/dense.h"

namespace twinspan::exl3::quantize {
namespace {

constexpr int64_t kChunkRows = 4096;   // Finite rows gathered per rank update.
constexpr int64_t kBlock = kTileSize;  // LDL blocks: one 16-row strip of tiles.

double MeanDiagonal(const std::vector<double>& h, int64_t k) {
  double sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += h[i * k + i];
  return sum / static_cast<double>(k);
}

// In place: a 16 x 16 lower triangular block (row stride n) becomes its inverse.
void InvertLowerBlock(double* d, int64_t n) {
  double inv[kBlock][kBlock] = {};
  for (int64_t c = 0; c < kBlock; ++c) {  // Forward substitution, one unit column at a time.
    for (int64_t r = c; r < kBlock; ++r) {
      double s = r == c ? 1.0 : 0.0;
      for (int64_t t = c; t < r; ++t) s -= d[r * n + t] * inv[t][c];
      inv[r][c] = s / d[r * n + r];
    }
  }
  for (int64_t r = 0; r < kBlock; ++r) {
    for (int64_t c = 0; c < kBlock; ++c) d[r * n + c] = inv[r][c];
  }
}

}  // namespace

HessianAccumulator::HessianAccumulator(int64_t k) : k_(k), sum_(static_cast<size_t>(k * k), 0.0f) {}

void HessianAccumulator::Add(cpu::ThreadPool* pool, const float* x, int64_t rows, int64_t stride) {
  std::vector<float> chunk;
  chunk.reserve(static_cast<size_t>(std::min(rows, kChunkRows) * k_));
  const auto flush = [&] {
    const int64_t n = static_cast<int64_t>(chunk.size()) / k_;
    SymmetricRankUpdate(pool, k_, n, chunk.data(), k_, sum_.data(), k_);
    rows_ += n;
    chunk.clear();
  };
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * stride;
    if (!std::all_of(row, row + k_, [](float v) { return std::isfinite(v); })) {
      ++dropped_;
      continue;
    }
    chunk.insert(chunk.end(), row, row + k_);
    if (static_cast<int64_t>(chunk.size()) == kChunkRows * k_) flush();
  }
  if (!chunk.empty()) flush();
}

std::vector<float> HessianAccumulator::Mean() const {
  if (rows_ == 0) return {};
  std::vector<float> h(sum_.size());
  const float scale = 1.0f / static_cast<float>(rows_);
  for (size_t i = 0; i < h.size(); ++i) h[i] = sum_[i] * scale;
  return h;
}

absl::StatusOr<std::vector<float>> LdlFactor(cpu::ThreadPool* pool, std::span<const float> hessian,
                                             std::span<const float> scales,
                                             const LdlOptions& options) {
  const int64_t k = static_cast<int64_t>(scales.size());
  if (k % kHadamardSize != 0 || hessian.size() != static_cast<size_t>(k * k)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "LdlFactor: a Hessian of %d values for %d inputs (a multiple of 128)", hessian.size(), k));
  }
  std::vector<double> h(hessian.begin(), hessian.end());
  const double damping = options.sigma_reg * MeanDiagonal(h, k);
  for (int64_t i = 0; i < k; ++i) {
    h[i * k + i] += damping;
    for (int64_t j = 0; j < k; ++j) h[i * k + j] *= static_cast<double>(scales[i]) * scales[j];
  }
  HadamardRight(h.data(), k, k, k);
  HadamardLeft(h.data(), k, k, k);
  std::vector<double> l;
  for (int attempt = 0;; ++attempt) {
    l = h;
    if (CholeskyLower(pool, k, l.data())) break;
    if (attempt == options.max_retries) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "the Hessian (%d inputs) is not positive definite after %d damping retries", k,
          options.max_retries));
    }
    const double more = 2.0 * options.sigma_reg * MeanDiagonal(h, k);
    for (int64_t i = 0; i < k; ++i) h[i * k + i] += more;
  }
  // L <- L blockdiag(L_bb)^-1: each block column times the inverse of its diagonal block, which
  // leaves identity there; those blocks are then zeroed.
  std::vector<float> out(static_cast<size_t>(k * k), 0.0f);
  cpu::ParallelFor(pool, k / kBlock, 1, [&](int64_t begin, int64_t end) {
    double inv[kBlock * kBlock];
    for (int64_t b = begin; b < end; ++b) {
      const int64_t c0 = b * kBlock;
      for (int64_t r = 0; r < kBlock; ++r) {
        for (int64_t c = 0; c < kBlock; ++c) inv[r * kBlock + c] = l[(c0 + r) * k + c0 + c];
      }
      InvertLowerBlock(inv, kBlock);
      for (int64_t i = c0 + kBlock; i < k; ++i) {
        const double* row = l.data() + i * k + c0;
        for (int64_t c = 0; c < kBlock; ++c) {
          double s = 0;
          for (int64_t t = c; t < kBlock; ++t) s += row[t] * inv[t * kBlock + c];
          out[i * k + c0 + c] = static_cast<float>(s);
        }
      }
    }
  });
  return out;
}

}  // namespace twinspan::exl3::quantize
