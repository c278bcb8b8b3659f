// The forward every family shares: embed -> decoder layers -> final norm -> head, over the rows of
// one or more sequences at once, with taps and hidden-state captures as explicit outputs. A family
// supplies its layers (LayerForward), their per-sequence state (NewLayerState) and how a layer's
// state commits (CommitLayer); everything runs on the model's backend::Backend.
#ifndef TWINSPAN_SERVICES_TARGET_DECODER_MODEL_H_
#define TWINSPAN_SERVICES_TARGET_DECODER_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/safetensors/checkpoint.h"
#include "kernels/backend/backend.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/linear.h"
#include "services/target/layer_rows.h"
#include "services/target/target_model.h"

namespace twinspan::target {

// The backend a model runs on: the caller's, or one the model owns (TargetOptions::backend null).
struct ModelBackend {
  std::unique_ptr<backend::Backend> owned;
  backend::Backend* backend = nullptr;

  // options.backend, or a new CPU backend over options.pool.
  static ModelBackend For(const TargetOptions& options);
};

// The weights every family has besides its layers, in the backend's memory.
struct DecoderHandles {
  std::unique_ptr<backend::EmbeddingHandle> embedding;  // [vocab, hidden]
  std::unique_ptr<backend::Buffer> final_norm;          // [hidden], effective weights.
  std::unique_ptr<backend::LinearHandle> lm_head;       // [vocab, hidden]

  // Backend errors (ResourceExhausted).
  static absl::StatusOr<DecoderHandles> Upload(backend::Backend& backend,
                                               const cpu::EmbeddingTable& embedding,
                                               const std::vector<float>& final_norm,
                                               const cpu::LinearWeight& lm_head);
};

class DecoderModel : public TargetModel {
 public:
  const TargetConfig& config() const override { return config_; }
  absl::StatusOr<std::unique_ptr<SequenceState>> NewSequence() const override;
  absl::Status CheckForward(const SequenceState& state,
                            const ForwardRequest& request) const override;
  absl::Status Forward(SequenceState& state, const ForwardRequest& request,
                       ForwardResult* result) const override;
  absl::Status ForwardBatch(absl::Span<const SequenceForward> batch) const override;
  absl::Status Commit(SequenceState& state, int64_t n_keep) const override;
  absl::StatusOr<std::unique_ptr<PrefixBlock>> SaveBlock(const SequenceState& state, int64_t first,
                                                         int64_t rows) const override;
  absl::Status LoadBlocks(SequenceState& state,
                          absl::Span<const PrefixBlock* const> blocks) const override;
  absl::Status CommitPath(SequenceState& state, absl::Span<const int64_t> path) const override;
  const backend::EmbeddingHandle& embedding() const override { return *weights_.embedding; }
  const backend::LinearHandle& lm_head() const override { return *weights_.lm_head; }
  backend::Backend& backend() const override { return *backend_.backend; }

  // Holds the checkpoint whose memory map EXL3 weights point into, for the model's lifetime.
  void KeepAlive(std::shared_ptr<const Checkpoint> checkpoint) {
    checkpoint_ = std::move(checkpoint);
  }

 protected:
  DecoderModel(TargetConfig config, const TargetOptions& options, ModelBackend backend,
               DecoderHandles weights);

  // Applies decoder layer `layer` to the residual stream h[rows.rows, hidden] (backend memory) in
  // place, both residual lines; states[s] is the layer's state of segment s's sequence. Runs under
  // the model's lock.
  virtual absl::Status LayerForward(int64_t layer, absl::Span<LayerState* const> states,
                                    const LayerRows& rows, float* h) const = 0;

  // Layer `layer`'s empty per-sequence state. The default gives attention layers a KV cache of
  // options.context positions and refuses other layer types (Unimplemented).
  virtual absl::StatusOr<LayerState> NewLayerState(int64_t layer) const;

  // Keeps the rows of `path` (SequenceState::CheckPath's) of the `pending` rows in layer `layer`'s
  // recurrent state. KV caches are the DecoderModel's: rows past the committed length are scratch,
  // and a tree's kept path is copied to its positions before this runs. The default does nothing.
  virtual absl::Status CommitLayer(int64_t layer, LayerState& state, absl::Span<const int64_t> path,
                                   int64_t pending) const;

  const TargetOptions& options() const { return options_; }

 private:
  absl::Status CommitLocked(SequenceState& state, absl::Span<const int64_t> path) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Copies the K/V of `rows` (tree rows written to slots first_slot + row, ascending) to positions
  // to, to + 1, ... through kept_rows_, sized for `pending` rows at least.
  absl::Status MoveKeptRows(backend::KvCacheHandle& kv, int64_t first_slot,
                            absl::Span<const int64_t> rows, int64_t to, int64_t pending) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RunBatch(absl::Span<const SequenceForward> batch) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SaveBlock's copies into `layers` (one entry per decoder layer).
  absl::Status SaveLayers(const SequenceState& state, int64_t first, int64_t rows,
                          std::vector<PrefixBlock::Layer>& layers) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // LoadBlocks's copies, after its checks.
  absl::Status LoadLayers(SequenceState& state, absl::Span<const PrefixBlock* const> blocks) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction. The checkpoint comes first and the backend second so they are
  // destroyed after every handle that points into them.
  std::shared_ptr<const Checkpoint> checkpoint_;
  ModelBackend backend_;
  TargetConfig config_;
  TargetOptions options_;
  DecoderHandles weights_;

  // Serializes every use of the backend, which runs one op stream and is not thread-safe.
  mutable absl::Mutex mu_;
  // A tree commit's kept rows on their way to their positions (MoveKeptRows).
  mutable std::unique_ptr<backend::KvCacheHandle> kept_rows_ ABSL_GUARDED_BY(mu_);
};

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_DECODER_MODEL_H_
