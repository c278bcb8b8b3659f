#include "tools/quantize/progress.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace twinspan::quantize {
namespace {

constexpr int kBarWidth = 30;

std::string Duration(double seconds) {
  const int64_t s = std::llround(seconds);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, s / 60 % 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

}  // namespace

void Progress::Plan(int64_t tensors, int64_t weights) {
  tensors_ = tensors;
  weights_ = weights;
}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Progress::Eta() const {
  if (done_weights_ == 0) return "?";
  // The time per weight so far, from the first linear on (the calibration forward before it is
  // not quantization).
  const double spent =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - first_).count();
  return Duration(spent / static_cast<double>(done_weights_) *
                  static_cast<double>(weights_ - done_weights_));
}

void Progress::ClearBar() {
  if (bar_shown_) std::fprintf(out_, "\r\033[K");
  bar_shown_ = false;
}

void Progress::DrawBar(const std::string& current) {
  const double fraction =
      weights_ > 0 ? static_cast<double>(done_weights_) / static_cast<double>(weights_) : 0.0;
  const int filled = std::clamp(static_cast<int>(fraction * kBarWidth), 0, kBarWidth);
  std::fprintf(out_, "\r\033[K[%s%s] %d/%d %3.0f%% ETA %s  %s", std::string(filled, '#').c_str(),
               std::string(kBarWidth - filled, '.').c_str(), static_cast<int>(done_tensors_),
               static_cast<int>(tensors_), 100 * fraction, Eta().c_str(), current.c_str());
  std::fflush(out_);
  bar_shown_ = true;
}

void Progress::Line(const std::string& text) {
  ClearBar();
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

void Progress::Begin(const std::string& name) {
  if (done_tensors_ == 0 && done_weights_ == 0) first_ = std::chrono::steady_clock::now();
  if (terminal_) DrawBar(name);
}

void Progress::Done(const std::string& name, int64_t weights, const std::string& detail) {
  ++done_tensors_;
  done_weights_ += weights;
  ClearBar();
  const std::string eta = terminal_ ? "" : ", ETA " + Eta();
  std::fprintf(out_, "[%d/%d] %s %s%s\n", static_cast<int>(done_tensors_),
               static_cast<int>(tensors_), name.c_str(), detail.c_str(), eta.c_str());
  if (terminal_ && done_tensors_ < tensors_) DrawBar("");
  std::fflush(out_);
}

void Progress::Finish() { ClearBar(); }

}  // namespace twinspan::quantize
