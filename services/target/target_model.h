// The target model interface the lane engine drives: Forward a window of rows, then Commit the kept
// prefix. Families (qwen3, qwen3_5) implement it on a backend::Backend; OpenTargetModel picks one
// from config.json.
//
// Exactness: a row's logits and taps depend only on the committed tokens before it and its own
// token, never on how many rows share the forward, on other sequences, or on threads. So
// verify([pending, d1..dk]) equals k + 1 single-row steps bit for bit, a ForwardBatch equals each
// sequence's own Forward, and Commit(n) leaves the state serial decoding of those n rows would.
#ifndef TWINSPAN_SERVICES_TARGET_TARGET_MODEL_H_
#define TWINSPAN_SERVICES_TARGET_TARGET_MODEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/config/target_config.h"
#include "kernels/backend/backend.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/cpu/parallel.h"
#include "services/target/prefix_block.h"
#include "services/target/prefix_cache.h"
#include "services/target/sequence_state.h"

namespace twinspan::target {

struct TargetOptions {
  // Where the weights, caches and ops live; not owned, must outlive the model. The model issues
  // its ops under its own lock; nothing else may use the backend while a call of the model runs.
  // Null: the model makes and owns a CPU backend over `pool`.
  backend::Backend* backend = nullptr;
  // Threads of that default CPU backend; not owned, must outlive the model. Null runs on the
  // caller's thread. REQUIRES: null when `backend` is given (its pool is the backend's business).
  cpu::ThreadPool* pool = nullptr;
  // KV cache element type. bf16 is the serving default; golden tests against fp32 references use
  // kF32 because bf16 rounding of K/V alone exceeds their 1e-4 tolerance.
  cpu::KvDtype kv_dtype = cpu::KvDtype::kBF16;
  // Positions per sequence (prompt + generated); a forward past it is ResourceExhausted.
  int64_t context = 4096;
  // A drafter will be attached: MoE checkpoints are refused (FailedPrecondition), as the anchor
  // does.
  bool drafter_configured = false;

  // InvalidArgument naming the field for context < 1, or both backend and pool.
  absl::Status Validate() const;
};

// Which rows of a forward get logits.
enum class LogitsRows { kAll, kLast, kNone };

struct ForwardRequest {
  // One row per token, at positions state.length() .. state.length() + tokens.size() - 1.
  absl::Span<const int32_t> tokens;
  // Empty: the rows are a chain, as above. Else one parent per token, and the rows are a tree of
  // drafts (kernels/cpu/tree_rows.h): row r at position state.length() + depth(r), seeing the
  // committed rows and its ancestors only, so it gets the logits and taps a chain forward of its
  // path gives that path's last row, bit for bit. CommitPath then keeps one path.
  absl::Span<const int32_t> parents = {};
  LogitsRows logits = LogitsRows::kAll;
  // Decoder layers whose outputs are tapped: id i is the output of layer i, i.e. HF
  // hidden_states[i + 1] (hidden_states[0] is the embedding). Each id in [0, num_layers).
  std::vector<int64_t> tap_layer_ids;
  // Also return the embedding, every layer's raw output and the final norm (golden tests, tools).
  bool capture_hidden_states = false;
  // When set, the logits stay in this buffer of the model's backend ([logit_rows, vocab] floats
  // from row logits_out_row on) and ForwardResult::logits is left empty, so a device-side sampler
  // reads them where they are. Not owned. InvalidArgument when it is too small.
  backend::Buffer* logits_out = nullptr;
  int64_t logits_out_row = 0;
  // When set (and taps are asked for), the taps stay in this buffer of the model's backend
  // ([rows, tap_layer_ids.size(), hidden] floats from its start) and ForwardResult::taps is left
  // empty, so only the rows a caller needs leave the device. Not owned. InvalidArgument when it
  // is too small.
  backend::Buffer* taps_out = nullptr;
};

struct ForwardResult {
  int64_t first_position = 0;
  int64_t rows = 0;
  int64_t logit_rows = 0;            // rows (kAll), 1 (kLast) or 0 (kNone).
  std::vector<float> logits;         // [logit_rows, vocab]; kLast gives the last row's. Empty
                                     // when the request set logits_out.
  std::vector<float> taps;           // [rows, tap_layer_ids.size(), hidden], row-major. Empty
                                     // when the request set taps_out.
  std::vector<float> embeddings;     // [rows, hidden] when capture_hidden_states.
  std::vector<float> layer_outputs;  // [num_layers, rows, hidden] when capture_hidden_states.
  std::vector<float> final_norm;     // [rows, hidden] when capture_hidden_states.
};

// One sequence's part of a ForwardBatch. Pointers are not owned.
struct SequenceForward {
  SequenceState* state = nullptr;
  const ForwardRequest* request = nullptr;
  ForwardResult* result = nullptr;
};

// Thread-safe. A backend runs one op stream and is not thread-safe, so every call that uses it
// (NewSequence, Forward, ForwardBatch, Commit, and destroying a SequenceState) holds the model's
// lock: calls from several threads are correct but run one at a time. A SequenceState belongs to
// one caller at a time and must not outlive its model.
class TargetModel {
 public:
  virtual ~TargetModel() = default;

  virtual const TargetConfig& config() const = 0;

  // A fresh, empty state sized for TargetOptions::context.
  // ResourceExhausted naming the bytes when the caches cannot be allocated.
  virtual absl::StatusOr<std::unique_ptr<SequenceState>> NewSequence() const = 0;

  // The errors Forward would return for `request` on `state`, without running anything:
  // FailedPrecondition when rows are pending; ResourceExhausted when the context would overflow;
  // InvalidArgument for an empty request, a token outside the vocabulary, a bad tap id, a
  // logits_out buffer too small, or a state of another model.
  virtual absl::Status CheckForward(const SequenceState& state,
                                    const ForwardRequest& request) const = 0;

  // Runs request.tokens as rows after the committed ones; their caches stay pending until Commit.
  // Errors: those of CheckForward; op errors (the rows are then dropped, the state stays usable).
  virtual absl::Status Forward(SequenceState& state, const ForwardRequest& request,
                               ForwardResult* result) const = 0;

  // Runs every entry's request in ONE forward (rows of all sequences concatenated) with the
  // results of each entry's own Forward, bit for bit. Nothing runs when an entry fails
  // CheckForward (its error, prefixed "batch entry i: ") or a state appears twice
  // (InvalidArgument); an op error drops every entry's rows. An empty batch does nothing.
  virtual absl::Status ForwardBatch(absl::Span<const SequenceForward> batch) const = 0;

  // Keeps the first n_keep rows of the pending forward: attention KV is trimmed to them and
  // recurrent state restored to the state after row n_keep - 1 (or before the forward for 0).
  // InvalidArgument when n_keep is outside [0, pending], or when those rows of a tree forward are
  // not a path from its root.
  virtual absl::Status Commit(SequenceState& state, int64_t n_keep) const = 0;

  // A copy of committed positions [first, first + rows) for the prefix cache: every attention
  // layer's K/V and, for a family with recurrent layers, their live state, which is the state after
  // those rows only when first + rows == state.length(). InvalidArgument for rows < 1, a range
  // past the committed rows, a recurrent family's range that does not end at length(), or a state
  // of another model; FailedPrecondition while rows are pending; the backend's ResourceExhausted.
  virtual absl::StatusOr<std::unique_ptr<PrefixBlock>> SaveBlock(const SequenceState& state,
                                                                 int64_t first,
                                                                 int64_t rows) const = 0;
  // Restores into the empty `state` the positions `blocks` hold, in order from position 0: their
  // K/V, and the last block's recurrent state; the state then has their rows committed, the bits
  // serial prefill of those positions leaves. FailedPrecondition for a state that is not empty;
  // InvalidArgument for no blocks, blocks that do not follow each other from 0, a last block
  // without the recurrent state this family needs, or blocks or state of another model;
  // ResourceExhausted past the context. On an error the state stays empty.
  virtual absl::Status LoadBlocks(SequenceState& state,
                                  absl::Span<const PrefixBlock* const> blocks) const = 0;
  // Keeps the rows of `path` of the pending forward, which become positions length() onwards: the
  // state serial decoding of those rows' tokens leaves. A chain forward's path is 0..n-1; a tree
  // forward's starts at its root (row 0), each row the parent of the next. An empty path keeps
  // nothing. InvalidArgument for anything else (the rows stay pending).
  virtual absl::Status CommitPath(SequenceState& state, absl::Span<const int64_t> path) const = 0;

  // Backend-resident views for a drafter in the same process on the same backend: the
  // unquantized embedding and the head.
  virtual const backend::EmbeddingHandle& embedding() const = 0;
  virtual const backend::LinearHandle& lm_head() const = 0;

  // The backend the model runs on, to allocate ForwardRequest::logits_out. REQUIRES: used only
  // while no call of this model runs on another thread.
  virtual backend::Backend& backend() const = 0;
};

struct PrefillOptions {
  int64_t chunk_rows = 256;  // rows per forward
  std::vector<int64_t> tap_layer_ids;
  // Asked before every chunk but the first: a non-OK status stops the prefill there and is its
  // result (the chunks before stay committed), so an abort, a cancel or a passed deadline need
  // not wait for a long prompt. Runs outside the model's lock. Null: never stops.
  std::function<absl::Status()> keep_going;
  // As ForwardRequest::logits_out (from row 0), for the last row's logits.
  backend::Buffer* logits_out = nullptr;
  // When set (with taps asked for), each chunk's taps stay in this buffer of the model's backend
  // ([chunk rows, taps, hidden] floats from its start; chunk_rows rows must fit) and
  // on_taps(first_row, rows) runs after the chunk, outside the model's lock, before the next chunk
  // overwrites them (first_row counts the rows this prefill ran); ForwardResult::taps stays
  // empty. REQUIRES: on_taps set with taps_out.
  backend::Buffer* taps_out = nullptr;
  std::function<absl::Status(int64_t first_row, int64_t rows)> on_taps;
  // When set, the prefill resumes after the longest prefix of `tokens` this cache holds (the
  // state must be empty) and caches the blocks it runs; its forwards also end at every block
  // boundary. Not owned. Null: every row runs.
  PrefixCache* prefix_cache = nullptr;
  // The stream drafts with the drafter of this link epoch: it resumes only blocks marked as held
  // by that drafter (PrefixCache::Resume).
  std::optional<uint64_t> prefix_drafter_epoch;
};

// Prefills `tokens` in forwards of at most options.chunk_rows rows, committing each; a forward
// ends at every multiple of chunk_rows (and of the prefix cache's block) counted from the state's
// start, so a resumed prefill runs the forwards a fresh one runs after that point. Returns the last
// row's logits and the taps of every row it ran (or leaves them in the options' buffers):
// ForwardResult::first_position is where it started (after a resumed prefix) and rows the rows it
// ran. Errors as Forward; InvalidArgument for an empty prompt, chunk_rows < 1 or taps_out without
// on_taps; FailedPrecondition for a prefix cache with a state that is not empty; the cache's,
// keep_going's and on_taps's.
absl::StatusOr<ForwardResult> Prefill(const TargetModel& model, SequenceState& state,
                                      absl::Span<const int32_t> tokens,
                                      const PrefillOptions& options);

// The same with only chunk_rows and tap_layer_ids set: logits and taps on the host.
absl::StatusOr<ForwardResult> Prefill(const TargetModel& model, SequenceState& state,
                                      absl::Span<const int32_t> tokens, int64_t chunk_rows,
                                      const std::vector<int64_t>& tap_layer_ids);

// Opens the model in `dir` (config.json + safetensors), choosing the family by model_type
// (qwen3; qwen3_5 / qwen3_5_text). Errors: those of the config and checkpoint loaders;
// FailedPrecondition for a MoE checkpoint when options.drafter_configured; InvalidArgument from
// options.Validate().
absl::StatusOr<std::unique_ptr<TargetModel>> OpenTargetModel(const std::string& dir,
                                                             const TargetOptions& options);

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_TARGET_MODEL_H_
