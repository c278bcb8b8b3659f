// Stop strings on streamed text: releases only text that cannot be the start of a stop string, and
// reports where a stop string completes so the reply ends just before it.
#ifndef TWINSPAN_SERVICES_TARGET_SERVER_STOP_MATCHER_H_
#define TWINSPAN_SERVICES_TARGET_SERVER_STOP_MATCHER_H_

#include <string>
#include <vector>

namespace twinspan::serving {

// Not thread-safe: one per stream.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // Adds decoded text. Returns true when a stop string completed; `released` gets the text that
  // may be sent now (before the stop string when one matched).
  bool Add(const std::string& text, std::string* released);
  // The held-back tail, once the stream ends without a stop.
  std::string Flush();

 private:
  std::vector<std::string> stops_;
  std::string held_;
};

}  // namespace twinspan::serving

#endif  // TWINSPAN_SERVICES_TARGET_SERVER_STOP_MATCHER_H_
