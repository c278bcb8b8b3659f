// The forward every family shares: embed -> decoder layers -> final norm -> head, with taps and
// hidden-state captures as explicit outputs. A family supplies its layers (LayerForward), their
// per-sequence state (NewLayerState) and how a layer's state commits (CommitLayer).
#ifndef TWINSPAN_SERVICES_TARGET_DECODER_MODEL_H_
#define TWINSPAN_SERVICES_TARGET_DECODER_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/safetensors/checkpoint.h"
#include "kernels/cpu/context.h"
#include "services/target/target_model.h"

namespace twinspan::target {

// What a layer needs about the rows of the current forward.
struct LayerRows {
  int64_t rows = 0;
  const int64_t* positions = nullptr;  // [rows], absolute, ascending, contiguous.
  const float* rope_cos = nullptr;     // [rows, rotary_dim / 2]
  const float* rope_sin = nullptr;
};

class DecoderModel : public TargetModel {
 public:
  const TargetConfig& config() const override { return config_; }
  absl::StatusOr<std::unique_ptr<SequenceState>> NewSequence() const override;
  absl::Status Forward(SequenceState& state, const ForwardRequest& request,
                       ForwardResult* result) const override;
  absl::Status Commit(SequenceState& state, int64_t n_keep) const override;
  const cpu::EmbeddingTable& embedding() const override { return embedding_; }
  const cpu::LinearWeight& lm_head() const override { return lm_head_; }

  // Holds the checkpoint whose memory map EXL3 weights point into, for the model's lifetime.
  void KeepAlive(std::shared_ptr<const Checkpoint> checkpoint) {
    checkpoint_ = std::move(checkpoint);
  }

 protected:
  // final_norm: [hidden] effective weights; lm_head: [vocab, hidden].
  DecoderModel(TargetConfig config, const TargetOptions& options, cpu::EmbeddingTable embedding,
               std::vector<float> final_norm, cpu::LinearWeight lm_head);

  // Applies decoder layer `layer` to the residual stream h[rows, hidden] in place (both residual
  // lines), reading and writing the layer's state for the pending rows.
  virtual absl::Status LayerForward(int64_t layer, LayerState& state, const LayerRows& rows,
                                    float* h) const = 0;

  // Layer `layer`'s empty per-sequence state. The default gives attention layers a KvCache of
  // options.context positions and refuses other layer types (Unimplemented).
  virtual absl::StatusOr<LayerState> NewLayerState(int64_t layer) const;

  // Keeps n_keep of the `pending` rows in layer `layer`'s state. The default does nothing, which is
  // right for KV caches (rows past the committed length are scratch).
  virtual absl::Status CommitLayer(int64_t layer, LayerState& state, int64_t n_keep,
                                   int64_t pending) const;

  const cpu::Context& ctx() const { return ctx_; }
  const TargetOptions& options() const { return options_; }

 private:
  absl::Status RunForward(SequenceState& state, const ForwardRequest& request,
                          ForwardResult* result) const;

  std::shared_ptr<const Checkpoint> checkpoint_;  // Declared first: destroyed after the weights.
  TargetConfig config_;
  TargetOptions options_;
  cpu::Context ctx_;
  cpu::EmbeddingTable embedding_;
  std::vector<float> final_norm_;
  cpu::LinearWeight lm_head_;
};

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_DECODER_MODEL_H_
