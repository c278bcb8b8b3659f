// twinspan-quantize's progress: on a terminal, one bar redrawn in place (tensors done, percent of
// the weights, ETA) with a line per finished tensor above it; otherwise plain lines only, one per
// tensor with its ETA, for logs.
#ifndef TWINSPAN_TOOLS_QUANTIZE_PROGRESS_H_
#define TWINSPAN_TOOLS_QUANTIZE_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace twinspan::quantize {

// Not thread-safe: the driver reports from one thread.
class Progress {
 public:
  // `out` is not owned. `terminal`: draw the bar (isatty of out).
  Progress(std::FILE* out, bool terminal) : out_(out), terminal_(terminal) {}

  // The work ahead: `tensors` linears holding `weights` weights in all.
  void Plan(int64_t tensors, int64_t weights);
  // A message line ("calibration: ...").
  void Line(const std::string& text);
  // Linear `name` starts (the bar shows it).
  void Begin(const std::string& name);
  // Linear `name` of `weights` weights is done; `detail` ends its line.
  void Done(const std::string& name, int64_t weights, const std::string& detail);
  // Clears the bar (before the summary).
  void Finish();

  double elapsed_seconds() const;

 private:
  std::string Eta() const;
  void DrawBar(const std::string& current);
  void ClearBar();

  std::FILE* out_;
  bool terminal_;
  int64_t tensors_ = 0, weights_ = 0;
  int64_t done_tensors_ = 0, done_weights_ = 0;
  bool bar_shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point first_ = start_;  // When the first linear began.
};

}  // namespace twinspan::quantize

#endif  // TWINSPAN_TOOLS_QUANTIZE_PROGRESS_H_
