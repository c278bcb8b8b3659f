// The drafter a service holds: the block decoder, the target's embedding and head (two-span or
// full), and the proposal rule (argmax for DFlash; the candidate selector walk for DFlash2).
//
// One round for a stream: AppendTaps(the committed rows' taps), then Propose(pending). The context
// only grows; the block is scratch, so a rejection never rolls anything back.
// Free of threads and I/O beyond Open. Everything runs on the model's backend: the embedding and
// the head's spans are uploaded at Create, a round's intermediates live in backend buffers, and
// only the taps (in) and the proposals (out) cross to the host.
#ifndef TWINSPAN_SERVICES_DRAFTER_DRAFTER_H_
#define TWINSPAN_SERVICES_DRAFTER_DRAFTER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/cpu/embedding.h"
#include "services/drafter/draft_head.h"
#include "services/drafter/draft_stream.h"
#include "services/drafter/drafter_model.h"

namespace twinspan::drafter {

struct DrafterOptions {
  DrafterModelOptions model;
  // Head variant: "full", "two-span" or a span list "a:b,c:d" (see MakeHeadVariant).
  std::string head = "two-span";
  // Load a DFlash2 checkpoint as DFlash v1 (no convs, no selector).
  bool as_dflash_v1 = false;
};

struct ProposeOptions {
  int64_t block_size = 0;    // B in [2, 16]; 0 uses the checkpoint's own.
  float temperature = 0.0f;  // DFlash2: > 0 samples the selector walk; DFlash: must be 0.
  // Sampled walks draw one uniform per proposal: WalkUniform(walk_seed, its absolute position),
  // so a draw never depends on batching. A caller may pass its own draws in walk_uniforms instead.
  uint64_t walk_seed = 0;
  std::span<const float> walk_uniforms;
  bool want_logits = false;  // Return the head's span logits.
  // DFlash2, greedy: > 0 proposes a tree of this many drafts built best first from the selector's
  // candidates (draft_tree.h) instead of the walk's chain; 0: the chain.
  int64_t tree_nodes = 0;
};

struct Proposal {
  std::vector<int32_t> ids;  // [B-1] global token ids following `pending` (a tree's nodes).
  // A tree (ProposeOptions::tree_nodes): the window row each id follows (0: pending, j: ids[j-1]).
  // Empty: ids are a chain.
  std::vector<int32_t> tree_parents;
  int64_t columns = 0;              // Head columns per logits row.
  std::vector<float> logits;        // [B-1, columns] when want_logits (after scaling/capping).
  std::vector<int32_t> column_ids;  // [columns] global id of each logits column, when want_logits.
  std::vector<int32_t> candidate_ids;      // DFlash2: [B-1, top_k], sorted by logit descending.
  std::vector<float> candidate_logits;     // DFlash2: [B-1, top_k] unary logits.
  std::vector<float> selector_projection;  // DFlash2: [B-1, rank] hidden_projection(hidden).
  std::vector<float> walk_scores;          // DFlash2: [B-1, top_k] selector scores as walked.
  std::vector<float> probabilities;        // DFlash2 sampled: [B-1, top_k] softmax(score / T).
};

// Immutable after Create apart from its round buffers, which the model's mu() guards: any number of
// threads may call it on distinct streams; they take turns on the backend.
class Drafter {
 public:
  // `embedding` [V, H] and `lm_head` [V, H] are the target's, uploaded to the model's backend
  // (shared, not copied, by the CPU backend). InvalidArgument when their shapes disagree with the
  // drafter config or the head variant; the backend's upload errors.
  static absl::StatusOr<std::unique_ptr<Drafter>> Create(std::unique_ptr<DrafterModel> model,
                                                         const cpu::EmbeddingTable& embedding,
                                                         const cpu::LinearWeight& lm_head,
                                                         const std::string& head);

  // Opens the drafter in `drafter_dir` over the target checkpoint in `target_dir` (its embedding
  // and lm_head only, read-only). Errors of the loaders, naming file and tensor.
  static absl::StatusOr<std::unique_ptr<Drafter>> Open(const std::string& drafter_dir,
                                                       const std::string& target_dir,
                                                       const DrafterOptions& options);

  Drafter(const Drafter&) = delete;
  Drafter& operator=(const Drafter&) = delete;

  const DrafterConfig& config() const { return model_->config(); }
  const DrafterModel& model() const { return *model_; }
  const DraftHead& head() const { return head_; }

  absl::StatusOr<std::unique_ptr<DraftStream>> NewStream() const { return model_->NewStream(); }

  // Appends `rows` committed tokens' taps (in `form`) to the stream's context.
  // InvalidArgument when taps.size() != rows * width; ResourceExhausted past the capacity.
  absl::Status AppendTaps(DraftStream& stream, TapForm form, std::span<const float> taps,
                          int64_t rows) const;
  // The same for `rows` rows already in the model's backend memory, from `taps` on (a target on
  // this backend with ForwardRequest::taps_out): copied there, never through the host.
  // InvalidArgument for rows < 0; ResourceExhausted past the capacity; the backend's errors.
  absl::Status AppendTapsInBackend(DraftStream& stream, TapForm form, const float* taps,
                                   int64_t rows) const;

  // Drafts B-1 tokens after `pending` (the token at position stream.context_length()), or a tree
  // of options.tree_nodes of them. InvalidArgument for a pending id outside the vocabulary, a
  // block size outside [2, 16], sampling a DFlash v1 drafter, walk_uniforms neither empty nor one
  // per proposal, or a tree of a DFlash v1 drafter, a sampled walk or more than kMaxTreeNodes.
  absl::StatusOr<Proposal> Propose(DraftStream& stream, int32_t pending,
                                   const ProposeOptions& options) const;

 private:
  // A round's buffers past the block forward, for up to kMaxHeadRows proposals. What the host
  // reads back sits in one buffer, so a round ends with one Download.
  struct RoundBuffers {
    std::unique_ptr<backend::Buffer> logits;     // [slots, columns]
    std::unique_ptr<backend::Buffer> top_local;  // int32 [slots, k] head columns
    std::unique_ptr<backend::Buffer> results;    // the sections below, 4-byte elements
    int64_t candidates = 0;     // int32 [slots, k] global ids (DFlash: the proposals)
    int64_t top_values = 0;     // [slots, k]
    int64_t proposals = 0;      // int32 [slots] (DFlash2)
    int64_t scores = 0;         // [slots, k]
    int64_t probabilities = 0;  // [slots, k]
    int64_t projected = 0;      // [slots, r]
    int64_t table = 0;          // [slots, k, k] selector scores of a tree, last: a chain skips it
    int64_t elements = 0;       // the sections' total

    template <typename T>
    T* at(int64_t section) const {
      return static_cast<T*>(results->data()) + section;
    }
  };

  Drafter(std::unique_ptr<DrafterModel> model, std::unique_ptr<backend::EmbeddingHandle> embedding,
          DraftHead head, RoundBuffers round)
      : model_(std::move(model)),
        embedding_(std::move(embedding)),
        head_(std::move(head)),
        round_(std::move(round)) {}

  // The reference's compute_logits on round_.logits: scale, then tanh soft-cap (a host round trip;
  // no published checkpoint sets either).
  absl::Status ScaleAndCap(int64_t rows, int64_t columns) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(model_->mu());

  std::unique_ptr<DrafterModel> model_;
  std::unique_ptr<backend::EmbeddingHandle> embedding_;
  DraftHead head_;
  RoundBuffers round_;
  // Keeps an EXL3 head's memory map alive when Open loaded it.
  std::shared_ptr<const void> target_checkpoint_;
};

// Largest block a Propose accepts: the anchors' production range.
inline constexpr int64_t kMaxBlockSize = 16;
// Largest tree a Propose builds (a verify window of 128 rows).
inline constexpr int64_t kMaxTreeNodes = 127;

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_DRAFTER_H_
