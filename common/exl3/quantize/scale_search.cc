#include "common/exl3/quantize/scale_search.h"

#include <algorithm>
#include <numeric>

#include "common/exl3/quantize/tiles.h"
#include "common/status.h"

namespace twinspan::exl3::quantize {
namespace {

constexpr int kDiagonalWidth = 3;
constexpr int kCoarsePoints = 10;  // 0.1 + 0.2 i
constexpr int kFinePoints = 5;
constexpr double kFineStep = 0.075;

// Mean squared error of quantize(tile * s) / s against each tile set, one encoder call for all
// scales.
absl::StatusOr<std::vector<double>> ScaledErrors(const TileEncoder& encoder, const TileCode& code,
                                                 const std::vector<float>& tiles,
                                                 const std::vector<double>& scales) {
  const size_t per_set = tiles.size();
  std::vector<float> batch(per_set * scales.size()), values(batch.size());
  std::vector<uint16_t> states(batch.size());
  for (size_t s = 0; s < scales.size(); ++s) {
    for (size_t i = 0; i < per_set; ++i) {
      batch[s * per_set + i] = tiles[i] * static_cast<float>(scales[s]);
    }
  }
  ABSL_RETURN_IF_ERROR(encoder.Encode(code, batch.data(),
                                      static_cast<int64_t>(batch.size() / kTileWeights),
                                      states.data(), values.data()));
  std::vector<double> errors(scales.size(), 0.0);
  for (size_t s = 0; s < scales.size(); ++s) {
    double sum = 0;
    for (size_t i = 0; i < per_set; ++i) {
      const double d = values[s * per_set + i] / scales[s] - tiles[i];
      sum += d * d;
    }
    errors[s] = sum / static_cast<double>(per_set);
  }
  return errors;
}

}  // namespace

std::vector<float> SampleTiles(const float* w, int64_t k, int64_t n) {
  const int64_t tiles_k = k / kTileSize, tiles_n = n / kTileSize;
  std::vector<std::pair<int64_t, int64_t>> picks;
  const int64_t diagonal = std::max(tiles_k, tiles_n);
  for (int64_t i = 0; i < diagonal; ++i) {
    for (int64_t d = 0; d < kDiagonalWidth; ++d) picks.emplace_back(i % tiles_k, (i + d) % tiles_n);
  }
  const int64_t total = tiles_k * tiles_n;
  std::vector<double> mean_sq(static_cast<size_t>(total), 0.0);
  for (int64_t t = 0; t < total; ++t) {
    const float* tile = w + (t / tiles_n) * kTileSize * n + (t % tiles_n) * kTileSize;
    double sum = 0;
    for (int r = 0; r < kTileSize; ++r) {
      for (int c = 0; c < kTileSize; ++c) sum += double{tile[r * n + c]} * tile[r * n + c];
    }
    mean_sq[t] = sum;
  }
  const int64_t extremes =
      std::min(std::max<int64_t>(8, diagonal * kDiagonalWidth / 16), (total + 1) / 2);
  std::vector<int64_t> order(static_cast<size_t>(total));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return mean_sq[a] > mean_sq[b]; });
  for (int64_t i = 0; i < extremes; ++i) picks.emplace_back(order[i] / tiles_n, order[i] % tiles_n);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return mean_sq[a] < mean_sq[b]; });
  for (int64_t i = 0; i < extremes; ++i) picks.emplace_back(order[i] / tiles_n, order[i] % tiles_n);
  std::vector<float> tiles(picks.size() * kTileWeights);
  for (size_t i = 0; i < picks.size(); ++i) {
    GatherTile(w + picks[i].first * kTileSize * n + picks[i].second * kTileSize, n,
               tiles.data() + i * kTileWeights);
  }
  return tiles;
}

absl::StatusOr<float> SearchGlobalScale(const TileEncoder& encoder, const TileCode& code,
                                        const float* w, int64_t k, int64_t n) {
  const std::vector<float> samples = SampleTiles(w, k, n);
  std::vector<float> subsample;  // Every third sampled tile.
  for (size_t t = 0; t * kTileWeights < samples.size(); t += 3) {
    subsample.insert(subsample.end(), samples.begin() + t * kTileWeights,
                     samples.begin() + (t + 1) * kTileWeights);
  }
  std::vector<double> coarse(kCoarsePoints);
  for (int i = 0; i < kCoarsePoints; ++i) coarse[i] = 0.1 + 0.2 * i;
  ABSL_ASSIGN_OR_RETURN(const std::vector<double> coarse_errors,
                        ScaledErrors(encoder, code, subsample, coarse));
  const double center =
      coarse[std::min_element(coarse_errors.begin(), coarse_errors.end()) - coarse_errors.begin()];
  std::vector<double> fine(kFinePoints);
  for (int i = 0; i < kFinePoints; ++i) fine[i] = center + kFineStep * (i - 2);
  ABSL_ASSIGN_OR_RETURN(const std::vector<double> e, ScaledErrors(encoder, code, samples, fine));
  const int best = static_cast<int>(std::min_element(e.begin(), e.end()) - e.begin());
  double offset = 0;
  if (best > 0 && best < kFinePoints - 1) {
    const double curvature = e[best - 1] - 2.0 * e[best] + e[best + 1];
    if (curvature > 0)
      offset = std::clamp(0.5 * (e[best - 1] - e[best + 1]) / curvature, -0.5, 0.5);
  }
  return static_cast<float>(std::max(fine[best] + offset * kFineStep, 0.01));
}

}  // namespace twinspan::exl3::quantize
