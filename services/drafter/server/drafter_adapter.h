// engine::DraftModel over drafter::Drafter: raw taps in, greedy proposals out (with one-hot drafts,
// accept-if-equal loses no acceptance against rejection sampling): a DFlash2 drafter's best-first
// tree of candidates by default, or the selector walk's chain.
#ifndef TWINSPAN_SERVICES_DRAFTER_SERVER_DRAFTER_ADAPTER_H_
#define TWINSPAN_SERVICES_DRAFTER_SERVER_DRAFTER_ADAPTER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "services/draft_link/draft_model.h"

namespace twinspan::serving {

struct DrafterAdapterOptions {
  std::string drafter_dir;
  std::string target_dir;  // the target checkpoint: embedding, lm_head, tokenizer
  std::string head_variant = "two-span";
  int64_t context = 4096;  // positions per stream (context plus one block)
  int threads = 0;         // CPU threads; 0: the machine's (the draft and the verify take turns)
  int max_streams = 256;
  int drafter_bits = 16;  // 16: linears as stored; 4: dense linears quantized to Q4 at load
  // --device: cpu (over `threads` threads) or cuda:N (the CUDA backend on visible device N).
  std::string device = "cpu";
  // The prompt-prefix cache (--prefix-cache-mb, --prefix-block-tokens): recent prompts' context
  // K/V, so a stream the target resumed from its own cache resumes here too. 0 bytes: none.
  int64_t prefix_cache_bytes = 0;
  int64_t prefix_block_tokens = 256;
  // --draft-tree-nodes: drafts per tree proposal; 0: the selector walk's chain of B-1;
  // kAutoTreeNodes: kDefaultTreeNodes for a DFlash2 drafter, chains for DFlash.
  int tree_nodes = kAutoTreeNodes;

  static constexpr int kAutoTreeNodes = -1;
  // docs/perf.md, "Tree drafts": the demo pair's tokens per round against the node budget.
  static constexpr int kDefaultTreeNodes = 15;
};

// Opens the drafter and the target views on o.device. On a GPU it drafts one block at once, so a
// backend that lacks one of the drafter's ops refuses to start (FailedPrecondition naming the op
// and --device) instead of failing every stream. Errors: InvalidArgument for --device,
// negative --threads, --drafter-bits, or --draft-tree-nodes outside [0, 127] or above 0 for a
// DFlash drafter; those of Drafter::Open, of reading the target's tokenizer.json, and of
// CheckpointFingerprint.
absl::StatusOr<std::unique_ptr<engine::DraftModel>> OpenDrafterAdapter(
    const DrafterAdapterOptions& options);

// The target stack's hook for single-process mode (signature of serving::DraftModelOpener).
absl::StatusOr<std::unique_ptr<engine::DraftModel>> OpenInProcessDrafter(
    const std::string& drafter_dir, const std::string& target_dir, const std::string& head_variant,
    int64_t context, int threads, const std::string& device, int64_t prefix_cache_bytes,
    int64_t prefix_block_tokens, int tree_nodes);

}  // namespace twinspan::serving

#endif  // TWINSPAN_SERVICES_DRAFTER_SERVER_DRAFTER_ADAPTER_H_
