#include "services/target/server/stop_matcher.h"

#include <algorithm>

namespace twinspan::serving {

bool StopMatcher::Add(const std::string& text, std::string* released) {
  held_ += text;
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) {
    if (stop.empty()) continue;
    first = std::min(first, held_.find(stop));
  }
  if (first != std::string::npos) {
    *released = held_.substr(0, first);
    held_.clear();
    return true;
  }
  // Hold back the longest tail that could still grow into a stop string.
  size_t hold = 0;
  for (const std::string& stop : stops_) {
    if (stop.empty()) continue;
    for (size_t n = std::min(stop.size() - 1, held_.size()); n > hold; --n) {
      if (held_.compare(held_.size() - n, n, stop, 0, n) == 0) {
        hold = n;
        break;
      }
    }
  }
  *released = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return false;
}

std::string StopMatcher::Flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace twinspan::serving
