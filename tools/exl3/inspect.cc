#include "tools/exl3/inspect.h"

#include <set>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/exl3/weight.h"
#include "common/status.h"

namespace twinspan::exl3 {
namespace {

constexpr const char* kLinearSuffixes[] = {kTrellisSuffix, kSuhSuffix,  kSvhSuffix,
                                           kSuSuffix,      kSvSuffix,   kBiasSuffix,
                                           kMcgSuffix,     kMul1Suffix, kScaleSuffix};

}  // namespace

double CheckpointReport::stored_bits_per_weight() const {
  return exl3_weights == 0 ? 0.0 : 8.0 * static_cast<double>(exl3_bytes) / exl3_weights;
}

double CheckpointReport::mean_bits(const std::string& excluded_prefix) const {
  double bits = 0, weights = 0;
  for (const LinearInfo& linear : linears) {
    if (linear.prefix == excluded_prefix) continue;
    bits += static_cast<double>(linear.bits) * linear.k * linear.n;
    weights += static_cast<double>(linear.k) * linear.n;
  }
  return weights == 0 ? 0.0 : bits / weights;
}

absl::StatusOr<CheckpointReport> InspectCheckpoint(const Checkpoint& checkpoint) {
  CheckpointReport report;
  std::set<std::string> owned;  // Tensors that belong to an EXL3 linear.
  const std::string_view trellis_suffix = kTrellisSuffix;
  for (const std::string& name : checkpoint.Names()) {
    if (name.size() <= trellis_suffix.size() || !std::string_view(name).ends_with(trellis_suffix)) {
      continue;
    }
    const std::string prefix = name.substr(0, name.size() - trellis_suffix.size());
    ABSL_ASSIGN_OR_RETURN(Weight weight, Weight::Load(checkpoint, prefix));
    LinearInfo info{
        prefix, weight.k(), weight.n(), weight.bits(), weight.codebook(), weight.has_bias(), 0};
    for (const char* suffix : kLinearSuffixes) {
      if (const TensorView* view = checkpoint.Find(prefix + suffix)) {
        info.bytes += static_cast<int64_t>(view->nbytes);
        owned.insert(view->name);
      }
    }
    report.exl3_bytes += info.bytes;
    report.exl3_weights += info.k * info.n;
    report.linears.push_back(std::move(info));
  }
  for (const std::string& name : checkpoint.Names()) {
    if (owned.count(name) != 0) continue;
    const TensorView* view = checkpoint.Find(name);
    report.plain.push_back({name, view->dtype, view->shape, static_cast<int64_t>(view->nbytes)});
    report.plain_bytes += static_cast<int64_t>(view->nbytes);
  }
  return report;
}

std::string FormatReport(const CheckpointReport& report) {
  std::string out;
  absl::StrAppendFormat(&out, "%-64s %-16s %2s %-6s %12s\n", "EXL3 linear", "k x n", "K", "cb",
                        "bytes");
  for (const LinearInfo& l : report.linears) {
    absl::StrAppendFormat(
        &out, "%-64s %-16s %2d %-6s %12d%s\n", l.prefix, absl::StrCat(l.k, " x ", l.n), l.bits,
        std::string(CodebookName(l.codebook)), l.bytes, l.has_bias ? " bias" : "");
  }
  absl::StrAppendFormat(&out, "\n%-64s %-22s %12s\n", "plain tensor", "dtype[shape]", "bytes");
  for (const PlainInfo& p : report.plain) {
    absl::StrAppendFormat(
        &out, "%-64s %-22s %12d\n", p.name,
        absl::StrCat(std::string(DTypeName(p.dtype)), "[", absl::StrJoin(p.shape, ", "), "]"),
        p.bytes);
  }
  absl::StrAppendFormat(&out,
                        "\n%d EXL3 linears, %d weights, %d bytes: %.4f stored bits per weight, "
                        "mean K %.4f (%.4f without lm_head)\n%d plain tensors, %d bytes\n",
                        report.linears.size(), report.exl3_weights, report.exl3_bytes,
                        report.stored_bits_per_weight(), report.mean_bits(),
                        report.mean_bits("lm_head"), report.plain.size(), report.plain_bytes);
  return out;
}

}  // namespace twinspan::exl3
