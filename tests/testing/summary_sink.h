// A StreamSink for tests and benches that takes every token and hands the stream's summary to
// Wait() once the stream finished; on_round, when set, sees each round's number first.
#ifndef TWINSPAN_TESTS_TESTING_SUMMARY_SINK_H_
#define TWINSPAN_TESTS_TESTING_SUMMARY_SINK_H_

#include <cstdint>
#include <functional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "services/target/engine/engine_request.h"

namespace twinspan::testing {

class SummarySink : public engine::StreamSink {
 public:
  std::function<void(uint32_t round)> on_round;

  engine::SinkVerdict OnTokens(absl::Span<const uint32_t> ids, uint32_t round) override {
    if (on_round) on_round(round);
    return {static_cast<int>(ids.size()), false};
  }
  void OnFinish(absl::StatusOr<engine::StreamSummary> summary) override {
    absl::MutexLock lock(&mu_);
    result_ = std::move(summary);
    done_ = true;
  }
  bool Cancelled() const override { return false; }
  absl::StatusOr<engine::StreamSummary> Wait() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    return result_;
  }

 private:
  absl::Mutex mu_;
  bool done_ = false;
  absl::StatusOr<engine::StreamSummary> result_ = absl::UnknownError("unfinished");
};

}  // namespace twinspan::testing

#endif  // TWINSPAN_TESTS_TESTING_SUMMARY_SINK_H_
