// The lane engine: one thread runs rounds over every live stream. A round awaits each stream's
// proposals, verifies every stream's window [pending, d1..dk] (a chain, or a tree of drafts) in
// one VerifierModel::VerifyBatch call (one forward on the target), samples every row with the
// keyed sampler, accepts the drafts the draws agree with plus one token (accept_walk.h), commits
// that path, and sends the drafter the kept rows' taps. Streams
// are admitted between rounds. A drafter that fails or misses the deadline only costs drafts: the
// tokens are those of plain decoding. Aborts, cancels and request deadlines are checked between
// rounds and between prefill chunks, and cut a round's wait for proposals short.
#ifndef TWINSPAN_SERVICES_TARGET_ENGINE_LANE_ENGINE_H_
#define TWINSPAN_SERVICES_TARGET_ENGINE_LANE_ENGINE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/draft_link/draft_channel.h"
#include "services/target/engine/draft_window.h"
#include "services/target/engine/engine_request.h"
#include "services/target/engine/verifier_model.h"

namespace twinspan::metrics {
class ServingMetrics;
}

namespace twinspan::engine {

struct EngineOptions {
  int parallel = 4;                                        // live streams per round
  int max_waiting = 64;                                    // queued beyond that: ResourceExhausted
  int64_t max_prompt_tokens = 0;                           // 0: the model's context - 1
  int max_tokens_limit = 4096;                             // the largest max_tokens accepted
  absl::Duration draft_timeout = absl::Milliseconds(500);  // per round, all streams together
  DraftWindowOptions draft_window;                         // how many proposals a round verifies
  // Drafts one proposal may hold (a tree's nodes, a chain's length); a larger one drafts nothing.
  int max_draft_nodes = 64;
  std::string name = "target";  // for logs
  // Context-copy drafts: when the context's last n tokens occurred earlier, the tokens after that
  // occurrence are a draft, verified instead of the drafter's block when its expected accept is
  // longer (DraftPicker). n in [1, 64]; 0 turns them off.
  int context_copy_ngram = 8;
  int context_copy_max_tokens = 15;  // longest copy proposed, in [1, 64]
};

struct EngineLoad {
  int running = 0;
  int waiting = 0;
  int parallel = 0;
  bool drafter_ready = false;
  bool draining = false;
};

// Thread-safe. Models, sampler, channel and metrics are not owned and must outlive the engine.
class LaneEngine {
 public:
  // `channel` and `metrics` may be null (no drafter; no metrics). Starts the round thread.
  // InvalidArgument for options out of range.
  static absl::StatusOr<std::unique_ptr<LaneEngine>> Start(const EngineOptions& options,
                                                           const VerifierModel* model,
                                                           const TokenSampler* sampler,
                                                           DraftChannel* channel,
                                                           metrics::ServingMetrics* metrics);
  // Finishes live streams as kAborted and joins the thread.
  ~LaneEngine();
  LaneEngine(const LaneEngine&) = delete;
  LaneEngine& operator=(const LaneEngine&) = delete;

  // Queues a request; its results go to `sink`. Errors (sink untouched): InvalidArgument for an
  // empty prompt, an id outside the vocabulary or max_tokens out of range; ResourceExhausted for
  // a prompt over max_prompt_tokens, a full queue; Unavailable while draining.
  absl::Status Submit(EngineRequest request, std::shared_ptr<StreamSink> sink);
  // Ends the stream with this request id (waiting or live) as kAborted. False when unknown.
  bool Abort(const std::string& request_id);
  EngineLoad load() const;
  const VerifierModel& model() const { return *model_; }
  DraftChannel* channel() const { return channel_; }
  // Refuses new requests; live and queued ones run to completion. WaitIdle blocks until none.
  void Drain();
  bool WaitIdle(absl::Duration timeout);
  // Ends every live and queued stream with `status` (between rounds), e.g. when a drain's grace
  // period ran out, so each client learns why instead of seeing its call cut.
  void StopAll(const absl::Status& status);

 private:
  struct Stream;
  LaneEngine(const EngineOptions& options, const VerifierModel* model, const TokenSampler* sampler,
             DraftChannel* channel, metrics::ServingMetrics* metrics);
  void Loop();
  void Admit(std::unique_ptr<Stream> stream);
  void RunRound();
  // Emits `ids` (the prefill's token, or one round's) to the stream, a round's emitted count into
  // its tokens_per_round; returns true when the stream finished.
  // `emitted`, when given, receives how many of `ids` reached the client.
  bool Emit(Stream& stream, std::vector<uint32_t> ids, bool round, int* emitted = nullptr);
  // Rows this round's window may add: the context leaves room.
  int64_t ContextRoom(const Stream& stream) const;
  // Drafts this round's window may hold: max_tokens and the context both leave room.
  int64_t DraftRoom(const Stream& stream) const;
  // Replaces the stream's drafts by a context copy when the copy's expected accept is longer.
  void PickContextCopy(Stream& stream) const;
  void Finish(Stream& stream, FinishReason reason);
  void Fail(Stream& stream, const absl::Status& status);
  void ReleaseDraft(Stream& stream);
  // Drops finished streams from live_; sets the running, waiting and KV-cache gauges.
  void PublishLoad();
  // Committed positions of the live streams over the positions their caches hold (each stream's
  // sequence holds info().max_context); 0 without live streams.
  double KvCacheUsage() const;
  // Why `stream` must stop now (`when` says where it is): Cancelled for an abort, a cancel or
  // the engine stopping; DeadlineExceeded naming the deadline; OK to go on.
  absl::Status StopCheck(const Stream& stream, absl::string_view when) const;
  static std::string DeadlineMessage(const Stream& stream, absl::string_view when);
  // Row `row`'s token: the model's own draw when it made one, else the sampler's over logits row
  // `logits_row`, masked to `allowed` (structured output; null: any id).
  absl::StatusOr<uint32_t> RowToken(const WindowOutput& out, int64_t row, int64_t logits_row,
                                    const SamplingOptions& sampling, int64_t position,
                                    const TokenMask* allowed) const;
  // Structured output: this round's masks (row r: the ids allowed after the output and the first
  // r drafts), cutting the drafts at the first one the grammar refuses (never acceptable).
  absl::Status ConstrainWindow(Stream& stream);

  const EngineOptions options_;
  const VerifierModel* model_;
  const TokenSampler* sampler_;
  DraftChannel* channel_;
  metrics::ServingMetrics* metrics_;

  mutable absl::Mutex mu_;
  std::deque<std::unique_ptr<Stream>> waiting_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> aborts_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> live_ids_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status stop_all_ ABSL_GUARDED_BY(mu_);  // not OK: StopAll was called

  // Engine thread only.
  std::vector<std::unique_ptr<Stream>> live_;
  uint64_t next_stream_id_ = 1;
  std::thread thread_;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_TARGET_ENGINE_LANE_ENGINE_H_
