#include "kernels/cpu/block_attention.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"

namespace twinspan::cpu {
namespace {

bool Visible(int64_t q_pos, int64_t k_pos, const BlockAttentionParams& p) {
  if (p.causal && k_pos > q_pos) return false;
  if (p.sliding_window > 0) {
    if (q_pos - k_pos >= p.sliding_window) return false;
    if (!p.causal && k_pos - q_pos >= p.sliding_window) return false;
  }
  return true;
}

}  // namespace

absl::Status BlockAttention(std::span<float> out, std::span<const float> q,
                            std::span<const float> context_k, std::span<const float> context_v,
                            std::span<const float> block_k, std::span<const float> block_v,
                            const BlockAttentionParams& p) {
  const int64_t b = p.block_rows, nc = p.context_rows, nh = p.n_heads, nkv = p.n_kv_heads,
                d = p.head_dim;
  if (b < 0 || nc < 0 || nh <= 0 || nkv <= 0 || d <= 0 || nh % nkv != 0 || p.sliding_window < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "BlockAttention: bad shape B = %d, Nc = %d, heads %d/%d (q/kv), head_dim %d, window %d", b,
        nc, nh, nkv, d, p.sliding_window));
  }
  if (p.block_position < p.context_position + nc) {
    return absl::InvalidArgumentError(
        absl::StrFormat("BlockAttention: block position %d overlaps the context [%d, %d)",
                        p.block_position, p.context_position, p.context_position + nc));
  }
  const auto size_is = [](size_t got, int64_t want) { return static_cast<int64_t>(got) == want; };
  if (!size_is(q.size(), b * nh * d) || !size_is(out.size(), b * nh * d)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("BlockAttention: q/out have %d/%d values, expected [%d, %d]", q.size(),
                        out.size(), b, nh * d));
  }
  if (!size_is(context_k.size(), nc * nkv * d) || !size_is(context_v.size(), nc * nkv * d)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("BlockAttention: context k/v have %d/%d values, expected [%d, %d]",
                        context_k.size(), context_v.size(), nc, nkv * d));
  }
  if (!size_is(block_k.size(), b * nkv * d) || !size_is(block_v.size(), b * nkv * d)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("BlockAttention: block k/v have %d/%d values, expected [%d, %d]",
                        block_k.size(), block_v.size(), b, nkv * d));
  }
  const int64_t group = nh / nkv, kv_stride = nkv * d;
  std::vector<float> logits(nc + b);
  std::vector<float> acc(d);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t q_pos = p.block_position + i;
    for (int64_t h = 0; h < nh; ++h) {
      const float* qh = q.data() + (i * nh + h) * d;
      const int64_t kvh = h / group;
      const auto key = [&](int64_t j) {
        return j < nc ? context_k.data() + j * kv_stride + kvh * d
                      : block_k.data() + (j - nc) * kv_stride + kvh * d;
      };
      const auto value = [&](int64_t j) {
        return j < nc ? context_v.data() + j * kv_stride + kvh * d
                      : block_v.data() + (j - nc) * kv_stride + kvh * d;
      };
      const auto position = [&](int64_t j) {
        return j < nc ? p.context_position + j : p.block_position + (j - nc);
      };
      float max_logit = -INFINITY;
      bool any = false;
      for (int64_t j = 0; j < nc + b; ++j) {
        if (!Visible(q_pos, position(j), p)) continue;
        const float* kj = key(j);
        float dot = 0.0f;
        for (int64_t t = 0; t < d; ++t) dot += qh[t] * kj[t];
        logits[j] = dot * p.scale;
        max_logit = any ? std::fmax(max_logit, logits[j]) : logits[j];
        any = true;
      }
      if (!any) {
        return absl::InvalidArgumentError(
            absl::StrFormat("BlockAttention: query row %d (position %d) sees no key", i, q_pos));
      }
      float total = 0.0f;
      for (int64_t t = 0; t < d; ++t) acc[t] = 0.0f;
      for (int64_t j = 0; j < nc + b; ++j) {
        if (!Visible(q_pos, position(j), p)) continue;
        const float w = std::exp(logits[j] - max_logit);
        total += w;
        const float* vj = value(j);
        for (int64_t t = 0; t < d; ++t) acc[t] += w * vj[t];
      }
      float* oh = out.data() + (i * nh + h) * d;
      for (int64_t t = 0; t < d; ++t) oh[t] = acc[t] / total;
    }
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
