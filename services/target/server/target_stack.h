// Everything one target process serves with, built from flags: the model, tokenizer, sampler, the
// drafter link (gRPC, in-process, or none), the lane engine and the public API backend. The
// twinspan-target binary and the router's single-process mode both use it.
#ifndef TWINSPAN_SERVICES_TARGET_SERVER_TARGET_STACK_H_
#define TWINSPAN_SERVICES_TARGET_SERVER_TARGET_STACK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/draft_link/draft_channel.h"
#include "services/draft_link/draft_model.h"
#include "services/security/channel_security.h"
#include "services/target/engine/lane_engine.h"
#include "services/target/server/target_backend.h"

namespace twinspan::metrics {
class ServingMetrics;
}

namespace twinspan::serving {

// --context when not given: a stream's positions, unless the model has fewer.
inline constexpr int64_t kDefaultContext = 4096;

struct TargetStackOptions {
  std::string model_dir;
  std::string name = "target";
  // Positions per stream; 0: the model's max_position_embeddings, at most kDefaultContext.
  int64_t context = 0;
  int parallel = 4;  // live streams per round
  int threads = 0;   // CPU threads; 0: hardware concurrency
  int64_t prefill_chunk_rows = 256;
  // --prefix-cache-mb / --prefix-block-tokens: recent prompts' caches kept by blocks of tokens
  // (0 MiB: none); the in-process drafter keeps its context the same way, in as many MiB.
  int64_t prefix_cache_mb = 1024;
  int64_t prefix_block_tokens = 256;
  int context_copy_ngram = 8;        // --context-copy-ngram (0: no context-copy drafts)
  int context_copy_max_tokens = 15;  // --context-copy-max-tokens
  // --device: "cpu", or "cuda:N" (the CUDA backend on visible device N; the router's placement
  // makes a worker's one GPU cuda:0). On a GPU the logits stay there and every row is sampled
  // there; the tap rows leave it only as the drafter needs them.
  std::string device = "cpu";
  // --drafter-device: where the in-process drafter runs; empty: on --device.
  std::string drafter_device;
  std::string drafter_address;                 // a twinspan-drafter (split mode)
  security::ChannelSecurity drafter_security;  // how drafter_address is dialled
  std::string drafter_model_dir;          // or a drafter run in this process (single-process mode)
  std::string head_variant = "two-span";  // of the in-process drafter
  int draft_tree_nodes = -1;  // of the in-process drafter: -1 its default, 0 chains, N a tree
  // Split mode: the drafter checkpoint whose fc + hidden_norm this target applies before sending
  // tap rows (fused form, 5x fewer bytes for five taps); empty sends raw rows.
  std::string fuse_taps_drafter_dir;
  bool bf16_taps = false;  // split mode: tap rows as BF16 (half the bytes)
  absl::Duration draft_timeout = absl::Milliseconds(500);
  // --draft-window: how many proposals a round verifies (engine/draft_window.h): "all",
  // "adaptive", a count N, or "auto": adaptive on a CPU target, all on a GPU.
  std::string draft_window = "auto";
  int max_waiting = 64;
  int64_t max_prompt_tokens = 0;  // 0: context - 1
  int max_tokens_limit = 4096;
  int default_max_tokens = 256;
  int max_message_bytes = 64 << 20;
  bool log_prompts = false;  // --log-prompts: each request's prompt text in the log
};

// Opens an in-process drafter for `target_dir`'s model: set by the drafter server library when it
// is linked (single-process mode). Null means the binary was built without it.
using DraftModelOpener = absl::StatusOr<std::unique_ptr<engine::DraftModel>> (*)(
    const std::string& drafter_dir, const std::string& target_dir, const std::string& head_variant,
    int64_t context, int threads, const std::string& device, int64_t prefix_cache_bytes,
    int64_t prefix_block_tokens, int tree_nodes);

// Owns the parts; destroy before the server that serves `backend()` is gone.
class TargetStack {
 public:
  // Errors: those of the model, tokenizer and drafter loaders; InvalidArgument for flags out of
  // range, a --device this build or machine does not have (naming the flag), or both
  // drafter_address and drafter_model_dir.
  static absl::StatusOr<std::unique_ptr<TargetStack>> Open(const TargetStackOptions& options,
                                                           metrics::ServingMetrics* metrics,
                                                           DraftModelOpener open_drafter);
  ~TargetStack();

  TargetBackend& backend() { return *backend_; }
  engine::LaneEngine& engine() { return *engine_; }
  // Blocks until the gRPC drafter handshake is done (true) or the timeout passes (false); true
  // at once without a gRPC drafter.
  bool WaitDrafter(absl::Duration timeout);

  struct Parts;

 private:
  TargetStack() = default;
  std::unique_ptr<Parts> parts_;
  std::unique_ptr<engine::LaneEngine> engine_;
  std::unique_ptr<TargetBackend> backend_;
};

}  // namespace twinspan::serving

#endif  // TWINSPAN_SERVICES_TARGET_SERVER_TARGET_STACK_H_
