// twinspan-draft's work: run the target over a prompt, feed its taps to the drafter, draft one
// block after the target's greedy next token, and write the block's span logits and proposals.
#ifndef TWINSPAN_TOOLS_DRAFT_DRAFT_BLOCK_H_
#define TWINSPAN_TOOLS_DRAFT_DRAFT_BLOCK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/cpu/kv_cache.h"

namespace twinspan::tools {

struct DraftBlockOptions {
  std::string target_dir;
  std::string drafter_dir;
  std::vector<int32_t> ids;       // The prompt.
  std::string head = "two-span";  // "full", "two-span" or "a:b,c:d".
  int64_t block_size = 0;         // 0: the checkpoint's own.
  float temperature = 0.0f;       // DFlash2 only: sample the selector walk.
  uint64_t seed = 0;              // Keys the sampled walk.
  int threads = 1;
  cpu::KvDtype kv_dtype = cpu::KvDtype::kF32;
  std::string out_path;
};

// Writes `out_path` with: logits F32 [B-1, columns] (the head's span columns, after the drafter's
// output scaling), column_ids I64 [columns] (global id of each column), proposals I64 [B-1],
// pending I64 [1] (the target's argmax after the prompt), and for DFlash2 candidate_ids I64
// [B-1, top_k] and walk_scores F32 [B-1, top_k]. Errors from the loaders, the models and the
// writer.
absl::Status DraftBlock(const DraftBlockOptions& options);

}  // namespace twinspan::tools

#endif  // TWINSPAN_TOOLS_DRAFT_DRAFT_BLOCK_H_
