#include "tools/gpu/round_bytes.h"

#include "common/safetensors/checkpoint.h"
#include "common/status.h"

namespace twinspan::gpu {
namespace {

constexpr int64_t kFloat = 4, kBf16 = 2;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Sorts each tensor of `dir` into `out` unless `skip` says it is not read per forward.
template <typename Skip>
absl::Status CountWeights(const std::string& dir, const Skip& skip, Bytes& out) {
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> ckpt, Checkpoint::Open(dir));
  for (const std::string& name : ckpt->Names()) {
    if (skip(name)) continue;
    const TensorView* t = ckpt->Find(name);
    const int64_t bytes = static_cast<int64_t>(t->nbytes);
    if (EndsWith(name, ".trellis")) {
      out.trellis += bytes;
    } else if (EndsWith(name, ".q4_codes") || EndsWith(name, ".q4_scales") ||
               EndsWith(name, ".q4_offsets")) {
      out.q4 += bytes;
    } else {
      out.dense += bytes;
    }
  }
  return absl::OkStatus();
}

}  // namespace

Bytes& Bytes::operator+=(const Bytes& o) {
  trellis += o.trellis;
  q4 += o.q4;
  dense += o.dense;
  state += o.state;
  return *this;
}

nlohmann::json Bytes::ToJson() const {
  return {{"trellis", trellis}, {"q4", q4}, {"dense", dense}, {"state", state}, {"total", total()}};
}

absl::StatusOr<Bytes> TargetWeightBytes(const std::string& dir) {
  Bytes out;
  ABSL_RETURN_IF_ERROR(CountWeights(
      dir, [](const std::string& n) { return EndsWith(n, "embed_tokens.weight"); }, out));
  return out;
}

absl::StatusOr<Bytes> DrafterWeightBytes(const std::string& dir, const drafter::DraftHead& head) {
  Bytes out;
  ABSL_RETURN_IF_ERROR(CountWeights(
      dir, [](const std::string& n) { return EndsWith(n, "_codebook"); }, out));
  for (const exl3::SpanView& v : head.exl3_views()) {
    out.trellis += v.weight.k() * v.weight.n() * v.weight.bits() / 8;
  }
  return out;
}

Bytes TargetStateBytes(const target::TargetConfig& c, int64_t rows, int64_t keep, int64_t context,
                       int64_t taps) {
  const int64_t ssm =
      c.linear_num_value_heads * c.linear_key_head_dim * c.linear_value_head_dim * kFloat;
  const int64_t channels = 2 * c.linear_num_key_heads * c.linear_key_head_dim +
                           c.linear_num_value_heads * c.linear_value_head_dim;
  const int64_t conv = (c.linear_conv_kernel_dim - 1) * channels * kFloat;
  const int64_t replay = rows * (channels + 2 * c.linear_num_value_heads) * kFloat;
  const int64_t kv_row = c.num_kv_heads * c.head_dim * 2 * kBf16;  // K and V
  Bytes b;
  for (const target::LayerType t : c.layer_types) {
    if (t == target::LayerType::kFullAttention) {
      b.state += (context + rows) * kv_row + rows * kv_row;  // read the keys once, write the rows
      continue;
    }
    // The recurrence (start read, end written beside it), the replay inputs (read + write).
    b.state += 2 * (ssm + conv) + 2 * replay;
    if (0 < keep && keep < rows) b.state += 2 * (ssm + conv);  // the kept rows replayed in place
  }
  // Logits: written, copied to the caller's buffer (read + write), read by the greedy TopK.
  b.state += 4 * rows * c.vocab_size * kFloat;
  b.state += 2 * rows * taps * c.hidden_size * kFloat;  // taps gathered, then downloaded
  return b;
}

Bytes DrafterStateBytes(const drafter::DrafterConfig& c, int64_t appended, int64_t block,
                        int64_t context, int64_t head_columns) {
  const int64_t kv_row = c.num_kv_heads * c.head_dim * 2 * kBf16;
  Bytes b;
  b.state += appended * c.num_taps() * c.hidden_size * kFloat;              // raw taps into fc
  b.state += c.num_layers * appended * kv_row;                              // context K/V written
  b.state += c.num_layers * ((context + block) * kv_row + block * kv_row);  // block attention
  b.state += 2 * (block - 1) * head_columns * kFloat;  // packed logits written, read by top-k
  return b;
}

}  // namespace twinspan::gpu
