// A drafter stream whose context holds tap rows of normal noise: what a drafter step runs on in
// the benches, without a target to make real taps.
#ifndef TWINSPAN_TESTS_BENCH_NOISE_STREAM_H_
#define TWINSPAN_TESTS_BENCH_NOISE_STREAM_H_

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "services/drafter/drafter.h"

namespace twinspan {

// A new stream of `d` with `rows` raw tap rows drawn from N(0, 1) with a fixed seed.
inline absl::StatusOr<std::unique_ptr<drafter::DraftStream>> NoiseStream(const drafter::Drafter& d,
                                                                         int64_t rows) {
  const int64_t width = d.config().num_taps() * d.config().hidden_size;
  std::vector<float> taps(rows * width);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& t : taps) t = normal(rng);
  absl::StatusOr<std::unique_ptr<drafter::DraftStream>> stream = d.NewStream();
  if (!stream.ok()) return stream.status();
  absl::Status appended = d.AppendTaps(**stream, drafter::TapForm::kRaw, taps, rows);
  if (!appended.ok()) return appended;
  return stream;
}

}  // namespace twinspan

#endif  // TWINSPAN_TESTS_BENCH_NOISE_STREAM_H_
