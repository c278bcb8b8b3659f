#include "tools/quantize/quantize_options.h"

#include <cctype>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"

namespace twinspan::quantize {

absl::Status QuantizeOptions::Validate() const {
  if (in_dir.empty()) return absl::InvalidArgumentError("--in is required");
  if (out_dir.empty()) return absl::InvalidArgumentError("--out is required");
  if (!(bits >= exl3::kMinBits && bits <= exl3::kMaxBits)) {
    return absl::InvalidArgumentError(absl::StrFormat("--bits %g is outside [1, 8]", bits));
  }
  if (!((head_bits >= exl3::kMinBits && head_bits <= exl3::kMaxBits) || head_bits == 16)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--head-bits %d: 1..8, or 16 to keep lm_head unquantized", head_bits));
  }
  if (cal_rows < 1 || cal_cols < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--cal-rows %d and --cal-cols %d must both be at least 1", cal_rows, cal_cols));
  }
  if (threads < 1) return absl::InvalidArgumentError(absl::StrFormat("--threads %d", threads));
  bool device_ok = device == "cpu";
  if (absl::StartsWith(device, "cuda:") && device.size() > 5) {
    device_ok = true;
    for (char c : device.substr(5)) device_ok = device_ok && std::isdigit(c) != 0;
  }
  if (!device_ok) {
    return absl::InvalidArgumentError(absl::StrFormat("--device \"%s\": cpu or cuda:N", device));
  }
  return absl::OkStatus();
}

absl::StatusOr<exl3::Codebook> ParseCodebook(const std::string& name) {
  if (name == "mul1") return exl3::Codebook::kMul1;
  if (name == "mcg") return exl3::Codebook::kMcg;
  if (name == "3inst") return exl3::Codebook::k3Inst;
  return absl::InvalidArgumentError(absl::StrFormat("--codebook \"%s\": mul1, mcg or 3inst", name));
}

}  // namespace twinspan::quantize
