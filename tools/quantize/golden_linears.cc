#include "tools/quantize/golden_linears.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/exl3/dequant.h"
#include "common/exl3/quantize/dense.h"
#include "common/exl3/quantize/hessian.h"
#include "common/exl3/weight.h"
#include "common/safetensors/checkpoint.h"
#include "common/status.h"

namespace twinspan::quantize {
namespace {

constexpr const char* kCodebooks[] = {"3inst", "mcg", "mul1"};

absl::StatusOr<exl3::Codebook> CodebookOf(const std::string& name) {
  if (name == "3inst") return exl3::Codebook::k3Inst;
  if (name == "mcg") return exl3::Codebook::kMcg;
  if (name == "mul1") return exl3::Codebook::kMul1;
  return absl::InvalidArgumentError("unknown codebook " + name);
}

double Weighted(cpu::ThreadPool* pool, const std::vector<float>& h, const std::vector<float>& m,
                int64_t k, int64_t n) {
  std::vector<float> hm(m.size(), 0.0f);
  exl3::quantize::GemmTN(pool, k, n, k, h.data(), k, m.data(), n, hm.data(), n);
  double sum = 0;
  for (size_t i = 0; i < m.size(); ++i) sum += static_cast<double>(m[i]) * hm[i];
  return sum;
}

}  // namespace

double ProxyError(cpu::ThreadPool* pool, const std::vector<float>& w,
                  const std::vector<float>& dequantized, const std::vector<float>& h, int64_t k,
                  int64_t n) {
  std::vector<float> e(w.size());
  for (size_t i = 0; i < w.size(); ++i) e[i] = w[i] - dequantized[i];
  return Weighted(pool, h, e, k, n) / Weighted(pool, h, w, k, n);
}

absl::StatusOr<std::vector<GoldenLinearCase>> CompareGoldenLinears(
    cpu::ThreadPool* pool, const exl3::quantize::TileEncoder& encoder,
    const std::string& golden_dir, const std::string& file, const std::vector<std::string>& only,
    const exl3::quantize::LinearQuantOptions& options) {
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> ckpt,
                        Checkpoint::Open(golden_dir + "/exl3_linear/" + file));
  ABSL_ASSIGN_OR_RETURN(const TensorView w_view, ckpt->Get("W"));
  ABSL_ASSIGN_OR_RETURN(const TensorView x_view, ckpt->Get("Xcal"));
  if (w_view.shape.size() != 2 || x_view.shape.size() != 2 || x_view.shape[1] != w_view.shape[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": W ", DescribeTensor(w_view), " and Xcal ", DescribeTensor(x_view), " do not fit"));
  }
  const int64_t k = w_view.shape[0], n = w_view.shape[1];
  ABSL_ASSIGN_OR_RETURN(const std::vector<float> w, ToFloat(w_view));
  ABSL_ASSIGN_OR_RETURN(const std::vector<float> x, ToFloat(x_view));
  exl3::quantize::HessianAccumulator acc(k);
  acc.Add(pool, x.data(), x_view.shape[0], k);
  const std::vector<float> h = acc.Mean();
  std::vector<GoldenLinearCase> cases;
  for (const char* cb : kCodebooks) {
    for (int bits = exl3::kMinBits; bits <= exl3::kMaxBits; ++bits) {
      const std::string prefix = absl::StrFormat("%s.K%d", cb, bits);
      if (!exl3::Weight::IsStored(*ckpt, prefix)) continue;
      if (!only.empty() && std::find(only.begin(), only.end(), prefix) == only.end()) continue;
      GoldenLinearCase c{file, cb, bits, k, n};
      ABSL_ASSIGN_OR_RETURN(const exl3::Weight theirs, exl3::Weight::Load(*ckpt, prefix));
      c.theirs = ProxyError(pool, w, exl3::DequantizeDense(theirs), h, k, n);
      exl3::quantize::LinearQuantOptions o = options;
      o.bits = bits;
      ABSL_ASSIGN_OR_RETURN(o.codebook, CodebookOf(cb));
      o.seed = options.seed + static_cast<uint64_t>(bits);
      const auto start = std::chrono::steady_clock::now();
      ABSL_ASSIGN_OR_RETURN(
          const exl3::quantize::QuantizedLinear ours,
          exl3::quantize::QuantizeLinear(pool, encoder, {w.data(), k, n, h, {}}, o));
      c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      c.ours = ours.proxy_error;
      cases.push_back(c);
    }
  }
  return cases;
}

}  // namespace twinspan::quantize
