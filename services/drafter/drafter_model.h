// The DFlash / DFlash2 block decoder: fuses target taps into context K/V and runs one block
// [pending, MASK x (B-1)] non-causally over that context. Head and selector live in DraftHead and
// Drafter; this class ends at the final norm.
//
// A layer (pre-norm, residual over the block only; DFlash2 adds the two dynamic convs):
//   x = input_norm(h); y = conv.side0(x); h += conv.side1(o_proj(attn(q(y), [ctx_kv ; kv(y)])))
//   x = post_norm(h);  y = conv.side0(x); h += conv.side1(mlp(y))
//
// Everything runs on a backend::Backend: the weights are uploaded at Create, each stream's context
// K/V are backend KV caches, and every intermediate lives in backend buffers (DrafterScratch).
#ifndef TWINSPAN_SERVICES_DRAFTER_DRAFTER_MODEL_H_
#define TWINSPAN_SERVICES_DRAFTER_DRAFTER_MODEL_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/config/drafter_config.h"
#include "kernels/backend/backend.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/cpu/parallel.h"
#include "services/draft_link/fuse_tap_rows.h"
#include "services/drafter/context_block.h"
#include "services/drafter/draft_stream.h"
#include "services/drafter/drafter_device_weights.h"
#include "services/drafter/drafter_scratch.h"
#include "services/drafter/drafter_weights.h"

namespace twinspan::drafter {

struct DrafterModelOptions {
  // The backend the model runs on; not owned, must outlive the model and its streams. The model
  // issues its ops under its own lock (mu()), so nothing else (a target sharing the backend
  // included) may use it while a call of the drafter runs. Null: the model makes and owns a CPU
  // backend over `pool`.
  backend::Backend* backend = nullptr;
  // Threads of that default CPU backend; not owned, must outlive the model. Null runs on the
  // caller's thread. REQUIRES: null when `backend` is given (its pool is the backend's business).
  cpu::ThreadPool* pool = nullptr;
  // Context K/V element type: bf16 serves; f32 for golden tests against fp32 references.
  cpu::KvDtype kv_dtype = cpu::KvDtype::kBF16;
  // Positions per stream (context plus one block); a longer stream is ResourceExhausted.
  int64_t context = 4096;
  // kQ4 quantizes the dense linears to Q4 at Open (--drafter-bits 4); proposals may change with
  // the drafter's precision, the target's output never does.
  LinearBits linear_bits = LinearBits::kAsStored;
};

// How the target's tap rows arrive.
enum class TapForm {
  kRaw,    // [rows, n_f * H]: the tapped target hidden states, concatenated per row.
  kFused,  // [rows, H]: hidden_norm(fc(raw)), computed by the sender (5x fewer bytes for n_f = 5).
};

// Every intermediate of one block forward, per layer [L][B * width], for golden tests.
struct BlockTrace {
  std::vector<std::vector<float>> attn_norm, attn_dynamic, attn_conv_in, attn_out, attn_conv_out;
  std::vector<std::vector<float>> mlp_norm, mlp_dynamic, mlp_conv_in, mlp_out, mlp_conv_out;
  std::vector<std::vector<float>> layer_outputs;
};

// Immutable after Create apart from its scratch, which mu() guards: any number of threads may call
// the public methods on distinct DraftStreams; they take turns on the backend.
class DrafterModel {
 public:
  // Takes the parsed config and its loaded weights and uploads them. InvalidArgument for a bad
  // options.context or both options.backend and options.pool; the backend's errors
  // (ResourceExhausted naming the bytes).
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
  // The host weights as loaded (the CPU backend shares the linears' memory with them).
  const DrafterWeights& weights() const { return weights_; }
  const DrafterDeviceWeights& device_weights() const { return device_; }
  backend::Backend& backend() const { return *backend_; }
  // Every issuer of ops on backend() holds it: the model's methods, and the Drafter around them.
  absl::Mutex& mu() const ABSL_LOCK_RETURNED(mu_) { return mu_; }

  // A fresh stream with no context. ResourceExhausted naming the bytes if the caches don't fit.
  absl::StatusOr<std::unique_ptr<DraftStream>> NewStream() const ABSL_LOCKS_EXCLUDED(mu_);

  // ---- the prefix cache's copies ----------------------------------------------------------------
  // A copy of context positions [first, first + rows) of every layer. InvalidArgument for rows < 1
  // or a range past context_length(); the backend's ResourceExhausted.
  absl::StatusOr<std::unique_ptr<ContextBlock>> SaveContext(const DraftStream& stream,
                                                            int64_t first, int64_t rows) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Restores into the empty `stream` the context `blocks` hold, in order from position 0.
  // FailedPrecondition for a stream with context; InvalidArgument for no blocks, blocks that do
  // not follow each other from 0 or of another model; ResourceExhausted past the capacity.
  absl::Status LoadContext(DraftStream& stream, std::span<const ContextBlock* const> blocks) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // ---- host-memory conveniences (tests, tools): upload, run, download ---------------------------
  // fused[rows, H] = hidden_norm(fc(raw[rows, n_f * H])): the part of the context either side of a
  // network boundary may compute. InvalidArgument for rows < 0.
  absl::Status FuseTaps(const float* raw, int64_t rows, float* fused) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Appends fused context rows at positions [context_length, context_length + rows): each layer's
  // k_norm'd, rotated K and its V. ResourceExhausted when the stream's capacity would be exceeded.
  absl::Status AppendContext(DraftStream& stream, const float* fused, int64_t rows) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Runs a block of `rows` input embeddings [rows, H] at positions context_length + [0, rows) and
  // writes the final-normed hidden states [rows, H]. Uses the stream's slots past its context as
  // scratch; the committed context is untouched. `trace` (optional) receives every intermediate.
  // InvalidArgument for rows outside [1, kScratchRows]; ResourceExhausted past the capacity.
  absl::Status ForwardBlock(DraftStream& stream, const float* embeddings, int64_t rows,
                            float* hidden, BlockTrace* trace = nullptr) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // ---- backend-memory steps (the Drafter's round), REQUIRES: mu() held --------------------------
  // Appends `taps` rows in `form` (raw rows are fused first), kScratchRows at a time: host rows
  // are uploaded, rows `in_backend` memory (a target's taps_out on this backend) copied there.
  // InvalidArgument for rows < 0; ResourceExhausted past the capacity, before anything is written;
  // the backend's errors (the CPU backend's InvalidArgument for memory not its own).
  absl::Status AppendTapsLocked(DraftStream& stream, TapForm form, const float* taps, int64_t rows,
                                bool in_backend = false) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The block's input rows [kScratchRows, H]: write `rows` embeddings here before ForwardLocked.
  float* block_input() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return scratch_.state->floats(); }
  backend::Buffer* block_input_buffer() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return scratch_.state.get();
  }
  // Runs the block in block_input() and leaves its final-normed rows in block_hidden().
  // Errors as ForwardBlock.
  absl::Status ForwardLocked(DraftStream& stream, int64_t rows, BlockTrace* trace) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const float* block_hidden() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return scratch_.hidden->floats();
  }

 private:
  DrafterModel(DrafterConfig config, DrafterWeights weights, const DrafterModelOptions& options)
      : config_(std::move(config)), weights_(std::move(weights)), options_(options) {}

  // fc and hidden_norm as uploaded, for FuseTapRows (the target's TapFuser runs the same step).
  engine::TapFusionWeights FusionWeights() const;
  // fused <- hidden_norm(fc(raw)) for `rows` <= kScratchRows rows already in scratch_.raw.
  absl::Status FuseLocked(int64_t rows) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends `rows` <= kScratchRows rows of scratch_.fused at the stream's end.
  absl::Status AppendFusedLocked(DraftStream& stream, int64_t rows) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // scratch_.cos / sin <- the rotary angles of `positions`.
  absl::Status UploadAngles(std::span<const int64_t> positions) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // k, v [rows, nKV * D] <- rotated, k_norm'd keys and values of x [rows, H] (angles uploaded);
  // with q, also q [rows, nH * D] <- x's queries as projected (the three linears one call).
  absl::Status ProjectKv(const DeviceLayer& layer, const float* x, int64_t rows,
                         float* q = nullptr) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One layer over the block in scratch_.state.
  absl::Status Layer(int64_t index, DraftStream& stream, std::span<const int64_t> positions,
                     BlockTrace* trace) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One sublayer's dynamic conv side (0: mixes its input, 1: its output) from scratch_.dynamic.
  absl::Status ConvMix(const DeviceConv& conv, int side, const float* in, int64_t rows,
                       float* out) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const DrafterConfig config_;
  const DrafterWeights weights_;
  const DrafterModelOptions options_;
  std::unique_ptr<backend::Backend> owned_backend_;  // When options.backend is null.
  backend::Backend* backend_ = nullptr;              // Constant after Create.
  DrafterDeviceWeights device_;                      // Constant after Create.
  mutable absl::Mutex mu_;  // The backend takes one issuer at a time; the scratch is shared.
  DrafterScratch scratch_ ABSL_GUARDED_BY(mu_);
};

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_DRAFTER_MODEL_H_
