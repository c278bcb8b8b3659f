// The Qwen3.5 hybrid family (model_type qwen3_5 / qwen3_5_text, e.g. Qwen3.8-27B): pre-norm
// decoder layers that are Gated DeltaNet or gated softmax attention as layer_types says, each
// followed by a SwiGLU MLP. Norms other than the GDN gated norm are zero-centred (1 + w).
#ifndef TWINSPAN_SERVICES_TARGET_QWEN3_5_MODEL_H_
#define TWINSPAN_SERVICES_TARGET_QWEN3_5_MODEL_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "services/target/attention_block.h"
#include "services/target/decoder_model.h"
#include "services/target/mlp_block.h"
#include "services/target/qwen3_5_gdn_block.h"

namespace twinspan::target {

// Norm vectors hold effective weights: 1 + w of the checkpoint's zero-centred values.
struct Qwen35LayerWeights {
  std::vector<float> input_norm;    // [hidden]
  AttentionBlockWeights attention;  // full_attention layers only (q_proj with output gate).
  GdnBlockWeights gdn;              // linear_attention layers only.
  std::vector<float> post_norm;     // [hidden]
  MlpBlockWeights mlp;
};

struct Qwen35Weights {
  cpu::EmbeddingTable embedding;  // [vocab, hidden]
  std::vector<Qwen35LayerWeights> layers;
  std::vector<float> final_norm;  // [hidden], effective (1 + w).
  cpu::LinearWeight lm_head;      // [vocab, hidden]
};

// One layer's weights in the backend's memory (attention or gdn as the layer's type says).
struct Qwen35LayerHandles {
  std::unique_ptr<backend::Buffer> input_norm;
  AttentionBlockHandles attention;
  GdnBlockHandles gdn;
  std::unique_ptr<backend::Buffer> post_norm;
  MlpBlockHandles mlp;
};

class Qwen35Model final : public DecoderModel {
 public:
  // From weights already in memory (the loader, tests with random weights), uploaded to the
  // options' backend. InvalidArgument naming the layer and weight whose shape disagrees with
  // `config`, or a config of another family; backend errors.
  static absl::StatusOr<std::unique_ptr<Qwen35Model>> Create(const TargetConfig& config,
                                                             Qwen35Weights weights,
                                                             const TargetOptions& options);

 protected:
  absl::Status LayerForward(int64_t layer, absl::Span<LayerState* const> states,
                            const LayerRows& rows, float* h) const override;
  absl::StatusOr<LayerState> NewLayerState(int64_t layer) const override;
  absl::Status CommitLayer(int64_t layer, LayerState& state, absl::Span<const int64_t> path,
                           int64_t pending) const override;

 private:
  Qwen35Model(const TargetConfig& config, const TargetOptions& options, ModelBackend backend,
              DecoderHandles weights, std::vector<Qwen35LayerHandles> layers);

  AttentionBlockShape attention_shape_;
  GdnBlockShape gdn_shape_;
  std::vector<Qwen35LayerHandles> layers_;
};

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_QWEN3_5_MODEL_H_
