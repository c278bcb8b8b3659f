// The Qwen3 dense family: pre-norm decoder layers of GQA attention (q/k norm, RoPE) and SwiGLU.
#ifndef TWINSPAN_SERVICES_TARGET_QWEN3_MODEL_H_
#define TWINSPAN_SERVICES_TARGET_QWEN3_MODEL_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "services/target/attention_block.h"
#include "services/target/decoder_model.h"
#include "services/target/mlp_block.h"

namespace twinspan::target {

struct Qwen3LayerWeights {
  std::vector<float> input_norm;  // [hidden]
  AttentionBlockWeights attention;
  std::vector<float> post_norm;  // [hidden]
  MlpBlockWeights mlp;
};

struct Qwen3Weights {
  cpu::EmbeddingTable embedding;  // [vocab, hidden]
  std::vector<Qwen3LayerWeights> layers;
  std::vector<float> final_norm;  // [hidden]
  cpu::LinearWeight lm_head;      // [vocab, hidden]; a copy of the embedding when tied.
};

// One layer's weights in the backend's memory.
struct Qwen3LayerHandles {
  std::unique_ptr<backend::Buffer> input_norm;
  AttentionBlockHandles attention;
  std::unique_ptr<backend::Buffer> post_norm;
  MlpBlockHandles mlp;
};

class Qwen3Model final : public DecoderModel {
 public:
  // From weights already in memory (loaders, tests with random weights), uploaded to the
  // options' backend (the host copies may go afterwards). InvalidArgument naming the layer and
  // weight whose shape disagrees with `config`; backend errors.
  static absl::StatusOr<std::unique_ptr<Qwen3Model>> Create(const TargetConfig& config,
                                                            Qwen3Weights weights,
                                                            const TargetOptions& options);

 protected:
  absl::Status LayerForward(int64_t layer, absl::Span<LayerState* const> states,
                            const LayerRows& rows, float* h) const override;

 private:
  Qwen3Model(const TargetConfig& config, const TargetOptions& options, ModelBackend backend,
             DecoderHandles weights, std::vector<Qwen3LayerHandles> layers);

  AttentionBlockShape attention_shape_;
  std::vector<Qwen3LayerHandles> layers_;
};

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_QWEN3_MODEL_H_
