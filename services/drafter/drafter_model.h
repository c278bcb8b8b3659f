// The DFlash / DFlash2 block decoder: fuses target taps into context K/V and runs one block
// [pending, MASK x (B-1)] non-causally over that context. Head and selector live in DraftHead and
// Drafter; this class ends at the final norm.
//
// A layer (pre-norm, residual over the block only; DFlash2 adds the two dynamic convs):
//   x = input_norm(h); y = conv.side0(x); h += conv.side1(o_proj(attn(q(y), [ctx_kv ; kv(y)])))
//   x = post_norm(h);  y = conv.side0(x); h += conv.side1(mlp(y))
#ifndef TWINSPAN_SERVICES_DRAFTER_DRAFTER_MODEL_H_
#define TWINSPAN_SERVICES_DRAFTER_DRAFTER_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/kv_cache.h"
#include "services/drafter/draft_stream.h"
#include "services/drafter/drafter_config.h"
#include "services/drafter/drafter_weights.h"

namespace twinspan::drafter {

struct DrafterModelOptions {
  // Threads for the CPU ops; not owned, must outlive the model. Null runs on the caller's thread.
  cpu::ThreadPool* pool = nullptr;
  // Context K/V element type: bf16 serves; f32 for golden tests against fp32 references.
  cpu::KvDtype kv_dtype = cpu::KvDtype::kBF16;
  // Positions per stream (context plus one block); a longer stream is ResourceExhausted.
  int64_t context = 4096;
  // kQ4 quantizes the dense linears to Q4 at Open (--drafter-bits 4); proposals may change with
  // the drafter's precision, the target's output never does.
  LinearBits linear_bits = LinearBits::kAsStored;
};

// Every intermediate of one block forward, per layer [L][B * width], for golden tests.
struct BlockTrace {
  std::vector<std::vector<float>> attn_norm, attn_dynamic, attn_conv_in, attn_out, attn_conv_out;
  std::vector<std::vector<float>> mlp_norm, mlp_dynamic, mlp_conv_in, mlp_out, mlp_conv_out;
  std::vector<std::vector<float>> layer_outputs;
};

// Immutable after Create: any number of threads may run forwards on distinct DraftStreams.
class DrafterModel {
 public:
  // Takes the parsed config and its loaded weights. InvalidArgument from a bad options.context.
  static absl::StatusOr<std::unique_ptr<DrafterModel>> Create(DrafterConfig config,
                                                              DrafterWeights weights,
                                                              const DrafterModelOptions& options);

  // Opens <dir>/config.json + safetensors. `as_dflash_v1` loads a DFlash2 checkpoint without its
  // convs and selector. Errors: those of LoadDrafterConfig, Checkpoint::Open, LoadDrafterWeights.
  static absl::StatusOr<std::unique_ptr<DrafterModel>> Open(const std::string& dir,
                                                            const DrafterModelOptions& options,
                                                            bool as_dflash_v1 = false);

  DrafterModel(const DrafterModel&) = delete;
  DrafterModel& operator=(const DrafterModel&) = delete;

  const DrafterConfig& config() const { return config_; }
  const DrafterWeights& weights() const { return weights_; }
  const cpu::Context& context() const { return ctx_; }

  // A fresh stream with no context. ResourceExhausted naming the bytes if the caches don't fit.
  absl::StatusOr<std::unique_ptr<DraftStream>> NewStream() const;

  // fused[rows, H] = hidden_norm(fc(raw[rows, n_f * H])): the part of the context either side of a
  // network boundary may compute. InvalidArgument for rows < 0.
  absl::Status FuseTaps(const float* raw, int64_t rows, float* fused) const;

  // Appends fused context rows at positions [context_length, context_length + rows): each layer's
  // k_norm'd, rotated K and its V. ResourceExhausted when the stream's capacity would be exceeded.
  absl::Status AppendContext(DraftStream& stream, const float* fused, int64_t rows) const;

  // Runs a block of `rows` input embeddings [rows, H] at positions context_length + [0, rows) and
  // writes the final-normed hidden states [rows, H]. Uses the stream's slots past its context as
  // scratch; the committed context is untouched. `trace` (optional) receives every intermediate.
  // InvalidArgument for rows < 1; ResourceExhausted past the stream's capacity.
  absl::Status ForwardBlock(DraftStream& stream, const float* embeddings, int64_t rows,
                            float* hidden, BlockTrace* trace = nullptr) const;

 private:
  DrafterModel(DrafterConfig config, DrafterWeights weights, const DrafterModelOptions& options);

  // One layer over the block; h [rows, H] is updated in place.
  absl::Status Layer(int64_t index, DraftStream& stream, const std::vector<int64_t>& positions,
                     std::vector<float>& h, BlockTrace* trace) const;

  // Projects rows of `x` [rows, H] to rotated, k_norm'd keys and values [rows, nKV * D].
  absl::Status ProjectKv(const DrafterLayerWeights& layer, const float* x, int64_t rows,
                         const int64_t* positions, std::vector<float>& k,
                         std::vector<float>& v) const;

  const DrafterConfig config_;
  const DrafterWeights weights_;
  const DrafterModelOptions options_;
  const cpu::Context ctx_;
};

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_DRAFTER_MODEL_H_
