#include "services/target/engine/lane_engine.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/error_reason.h"
#include "common/metrics/serving_metrics.h"
#include "common/status.h"
#include "kernels/cpu/mask_logits.h"
#include "services/draft_link/accept_walk.h"
#include "services/target/engine/context_copy.h"
#include "services/target/engine/draft_picker.h"
#include "services/target/engine/proposal_box.h"
#include "spdlog/spdlog.h"

namespace twinspan::engine {

struct LaneEngine::Stream {
  EngineRequest request;
  std::shared_ptr<StreamSink> sink;
  uint64_t id = 0;
  absl::Time arrival;
  absl::Time first_token_time;
  absl::Time last_emit_time;
  std::unique_ptr<VerifierSequence> sequence;
  uint32_t pending = 0;
  uint32_t round = 0;  // verify rounds done
  bool drafting = false;
  uint64_t draft_epoch = 0;
  std::vector<int64_t> tap_layer_ids;
  DraftProposal proposal;               // this round's drafts, verified
  std::vector<int32_t> window_parents;  // a tree window's row parents; empty for a chain
  std::vector<TokenMask> allowed;       // this round's, one per window row (structured output)
  std::optional<DraftWindow> window;
  // Context-copy drafts: the stream's context (prompt and completion) indexed by n-grams; null
  // when off for this stream. This round's source, and each source's proposal, to learn from (a
  // tree's is its main chain, its likeliest path).
  std::unique_ptr<ContextCopyIndex> copy_index;
  DraftPicker picker;
  DraftSource source = DraftSource::kDrafter;
  std::vector<uint32_t> drafter_proposal, copy_proposal;
  WindowOutput window_out;
  std::vector<float> kept_taps;  // the committed rows' taps when the model deferred them
  StreamSummary summary;
  bool done = false;
};

namespace {

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

// Floats per tap row of `out` (raw rows unless the model said otherwise).
int64_t TapWidth(const WindowOutput& out, size_t n_taps, int hidden) {
  return out.tap_width > 0 ? out.tap_width : static_cast<int64_t>(n_taps) * hidden;
}

}  // namespace

std::string LaneEngine::DeadlineMessage(const Stream& s, absl::string_view when) {
  return absl::StrCat(
      "request ", s.request.request_id, ": its deadline ",
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", s.request.deadline, absl::UTCTimeZone()), " (",
      absl::FormatDuration(s.request.deadline - s.arrival), " after it arrived) passed ", when,
      "; ", s.summary.completion_ids.size(), " tokens were streamed");
}

absl::Status LaneEngine::StopCheck(const Stream& s, absl::string_view when) const {
  bool aborted = false;
  {
    absl::MutexLock lock(&mu_);
    aborted = stopping_ || aborts_.count(s.request.request_id) > 0;
  }
  if (aborted || s.sink->Cancelled()) {
    return absl::CancelledError(
        absl::StrCat("request ", s.request.request_id, ": aborted or cancelled ", when));
  }
  if (absl::Now() > s.request.deadline) {
    return absl::DeadlineExceededError(DeadlineMessage(s, when));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> LaneEngine::RowToken(const WindowOutput& out, int64_t row,
                                              int64_t logits_row, const SamplingOptions& sampling,
                                              int64_t position, const TokenMask* allowed) const {
  const int vocab = model_->info().vocab_size;
  if (!out.tokens.empty()) {  // The model drew it where its logits are.
    if (row >= static_cast<int64_t>(out.tokens.size()) ||
        out.tokens[row] >= static_cast<uint32_t>(vocab)) {
      return absl::InternalError(absl::StrCat("verifier: ", out.tokens.size(), " draws for row ",
                                              row, " or an id past the vocabulary"));
    }
    return out.tokens[row];
  }
  if (logits_row < 0 || static_cast<int64_t>(out.logits.size()) < (logits_row + 1) * vocab) {
    return absl::InternalError(
        absl::StrCat("verifier: ", out.logits.size(), " logits for row ", logits_row));
  }
  const absl::Span<const float> logits =
      absl::MakeConstSpan(out.logits).subspan(logits_row * vocab, vocab);
  if (allowed == nullptr) return sampler_->Sample(logits, sampling, position);
  // Masked like the device samplers mask: the disallowed ids' logits become -inf.
  std::vector<float> masked(logits.begin(), logits.end());
  absl::Status status = cpu::MaskLogits({}, masked.data(), vocab, vocab, allowed->words.data(), 1);
  if (!status.ok()) return status;
  return sampler_->Sample(masked, sampling, position);
}

absl::Status LaneEngine::ConstrainWindow(Stream& s) {
  s.allowed.clear();
  if (s.request.constraint == nullptr) return absl::OkStatus();
  // REQUIRES: a chain proposal (RunRound verifies a constrained stream's tree as its main chain).
  std::unique_ptr<TokenConstraint> ahead = s.request.constraint->Clone();
  for (size_t row = 0;; ++row) {
    TokenMask mask;
    if (absl::Status status = ahead->AllowedNext(&mask); !status.ok()) return status;
    if (mask.empty()) {
      if (row == 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "request ", s.request.request_id,
            ": structured output: no token of the vocabulary can continue the output"));
      }
      // The draft before ended the output (an end id): verify without it, nothing may follow.
      // Its row keeps its mask: the window's last row still draws under the grammar.
      s.proposal.ids.resize(row - 1);
      return absl::OkStatus();
    }
    s.allowed.push_back(std::move(mask));
    if (row == s.proposal.ids.size()) return absl::OkStatus();
    if (!s.allowed.back().allows(s.proposal.ids[row]) ||
        !ahead->Advance(s.proposal.ids[row]).ok()) {
      s.proposal.ids.resize(row);  // the masked draw could never equal it
      return absl::OkStatus();
    }
  }
}

absl::StatusOr<std::unique_ptr<LaneEngine>> LaneEngine::Start(const EngineOptions& options,
                                                              const VerifierModel* model,
                                                              const TokenSampler* sampler,
                                                              DraftChannel* channel,
                                                              metrics::ServingMetrics* metrics) {
  if (options.parallel < 1 || options.parallel > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("engine: --parallel must be in [1, 1024], got ", options.parallel));
  }
  if (options.max_waiting < 0 || options.max_tokens_limit < 1) {
    return absl::InvalidArgumentError("engine: max_waiting >= 0 and max_tokens_limit >= 1");
  }
  if (options.max_draft_nodes < 0 || options.max_draft_nodes > 255) {
    return absl::InvalidArgumentError(absl::StrCat(
        "engine: max_draft_nodes must be in [0, 255] (a window of at most 256 rows), got ",
        options.max_draft_nodes));
  }
  if (options.context_copy_ngram < 0 || options.context_copy_ngram > kMaxContextCopyNgram ||
      options.context_copy_max_tokens < 1 || options.context_copy_max_tokens > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "engine: --context-copy-ngram must be in [0, ", kMaxContextCopyNgram, "] (got ",
        options.context_copy_ngram, ") and --context-copy-max-tokens in [1, 64] (got ",
        options.context_copy_max_tokens, ")"));
  }
  if (model == nullptr || sampler == nullptr) {
    return absl::InvalidArgumentError("engine: a model and a sampler are required");
  }
  auto engine =
      std::unique_ptr<LaneEngine>(new LaneEngine(options, model, sampler, channel, metrics));
  engine->thread_ = std::thread([e = engine.get()] { e->Loop(); });
  return engine;
}

LaneEngine::LaneEngine(const EngineOptions& options, const VerifierModel* model,
                       const TokenSampler* sampler, DraftChannel* channel,
                       metrics::ServingMetrics* metrics)
    : options_(options), model_(model), sampler_(sampler), channel_(channel), metrics_(metrics) {}

LaneEngine::~LaneEngine() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

absl::Status LaneEngine::Submit(EngineRequest request, std::shared_ptr<StreamSink> sink) {
  const VerifierInfo& info = model_->info();
  if (request.prompt_ids.empty()) {
    return WithErrorReason(absl::InvalidArgumentError("request: the prompt is empty"),
                           {"", "prompt"});
  }
  for (uint32_t id : request.prompt_ids) {
    if (id >= static_cast<uint32_t>(info.vocab_size)) {
      return WithErrorReason(absl::InvalidArgumentError(absl::StrCat(
                                 "request: prompt token id ", id,
                                 " is outside the vocabulary (size ", info.vocab_size, ")")),
                             {"", "prompt_ids"});
    }
  }
  ABSL_RETURN_IF_ERROR(CheckPromptLength(static_cast<int64_t>(request.prompt_ids.size()),
                                         options_.max_prompt_tokens, info.max_context, "prompt"));
  if (request.max_tokens < 1 || request.max_tokens > options_.max_tokens_limit) {
    return WithErrorReason(absl::InvalidArgumentError(
                               absl::StrCat("request: max_tokens ", request.max_tokens,
                                            " is outside [1, ", options_.max_tokens_limit, "]")),
                           {"", "sampling.max_tokens"});
  }
  auto stream = std::make_unique<Stream>();
  stream->request = std::move(request);
  stream->sink = std::move(sink);
  stream->arrival = absl::Now();
  absl::MutexLock lock(&mu_);
  if (draining_ || stopping_) return absl::UnavailableError("engine: draining, not accepting");
  if (static_cast<int>(waiting_.size()) >= options_.max_waiting) {
    return WithErrorReason(absl::ResourceExhaustedError(absl::StrCat(
                               "engine: ", running_, " requests running and ", waiting_.size(),
                               " waiting: the queue is full (--max-waiting ", options_.max_waiting,
                               "); retry later or on another worker")),
                           {kOverloaded, ""});
  }
  waiting_.push_back(std::move(stream));
  if (metrics_ != nullptr) metrics_->SetRequestsWaiting(static_cast<int>(waiting_.size()));
  return absl::OkStatus();
}

bool LaneEngine::Abort(const std::string& request_id) {
  absl::MutexLock lock(&mu_);
  bool known = live_ids_.count(request_id) > 0;
  for (const auto& stream : waiting_) known = known || stream->request.request_id == request_id;
  // The loop finishes it between rounds, so the sink is only ever called on the loop's thread.
  if (known) aborts_.insert(request_id);
  return known;
}

EngineLoad LaneEngine::load() const {
  absl::MutexLock lock(&mu_);
  EngineLoad load;
  load.running = running_;
  load.waiting = static_cast<int>(waiting_.size());
  load.parallel = options_.parallel;
  load.drafter_ready = channel_ != nullptr && channel_->ready();
  load.draining = draining_;
  return load;
}

void LaneEngine::Drain() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
}

void LaneEngine::StopAll(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  stop_all_ = status;
}

bool LaneEngine::WaitIdle(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto idle = [this]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_ == 0 && waiting_.empty(); };
  return mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
}

void LaneEngine::Loop() {
  while (true) {
    std::vector<std::unique_ptr<Stream>> admit;
    absl::Status stopped;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !waiting_.empty() || !live_.empty();
      };
      mu_.Await(absl::Condition(&has_work));
      if (stopping_) break;
      if (!stop_all_.ok()) {
        for (auto& stream : waiting_) admit.push_back(std::move(stream));
        waiting_.clear();
        stopped = stop_all_;
      }
      while (!waiting_.empty() &&
             static_cast<int>(live_.size() + admit.size()) < options_.parallel) {
        live_ids_.insert(waiting_.front()->request.request_id);
        admit.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
      }
      running_ = static_cast<int>(live_.size() + admit.size());
    }
    if (!stopped.ok()) {
      for (auto& stream : live_) Fail(*stream, stopped);
      for (auto& stream : admit) Fail(*stream, stopped);
      PublishLoad();
      continue;
    }
    for (auto& stream : admit) Admit(std::move(stream));
    if (!live_.empty()) RunRound();
    PublishLoad();
  }
  // Stopping: end everything still open.
  std::deque<std::unique_ptr<Stream>> waiting;
  {
    absl::MutexLock lock(&mu_);
    waiting.swap(waiting_);
  }
  for (auto& stream : live_) Finish(*stream, FinishReason::kAborted);
  for (auto& stream : waiting) Finish(*stream, FinishReason::kAborted);
  live_.clear();
}

void LaneEngine::PublishLoad() {
  std::vector<std::string> finished;
  for (const auto& s : live_) {
    if (s->done) finished.push_back(s->request.request_id);
  }
  live_.erase(std::remove_if(live_.begin(), live_.end(), [](const auto& s) { return s->done; }),
              live_.end());
  // Set before running_ drops, so a caller that saw the engine idle sees the final values.
  if (metrics_ != nullptr) {
    metrics_->SetKvCacheUsage(KvCacheUsage());
    metrics_->SetPrefixCacheBytes("target", model_->prefix_cache_use().bytes);
    metrics_->SetRequestsRunning(static_cast<int>(live_.size()));
  }
  int waiting = 0;
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& id : finished) {
      live_ids_.erase(id);
      aborts_.erase(id);
    }
    running_ = static_cast<int>(live_.size());
    waiting = static_cast<int>(waiting_.size());
  }
  if (metrics_ != nullptr) metrics_->SetRequestsWaiting(waiting);
}

double LaneEngine::KvCacheUsage() const {
  int64_t used = 0, allocated = 0;
  for (const auto& s : live_) {
    if (s->sequence == nullptr) continue;
    used += s->sequence->length();
    allocated += model_->info().max_context;
  }
  return allocated == 0 ? 0.0 : static_cast<double>(used) / static_cast<double>(allocated);
}

void LaneEngine::Admit(std::unique_ptr<Stream> owned) {
  Stream& s = *owned;
  live_.push_back(std::move(owned));
  s.id = next_stream_id_++;
  s.summary.prompt_tokens = static_cast<int>(s.request.prompt_ids.size());
  s.summary.seed = s.request.sampling.seed;
  s.summary.head_variant = "none";
  s.summary.queue_seconds = Seconds(absl::Now() - s.arrival);
  s.window.emplace(options_.draft_window);
  bool aborted = false;
  {
    absl::MutexLock lock(&mu_);
    aborted = aborts_.erase(s.request.request_id) > 0;
  }
  if (aborted || s.sink->Cancelled()) return Finish(s, FinishReason::kAborted);
  absl::StatusOr<std::unique_ptr<VerifierSequence>> sequence = model_->NewSequence();
  if (!sequence.ok()) return Fail(s, sequence.status());
  s.sequence = *std::move(sequence);

  // Taps are only needed when this stream will talk to a drafter.
  s.drafting = s.request.draft && channel_ != nullptr && channel_->ready();
  // Asked to draft on a worker that has a drafter, but it is down: the reply must say so.
  if (s.request.draft && channel_ != nullptr && !s.drafting) s.summary.draft_degraded = true;
  DrafterInfo peer;
  if (s.drafting) {
    peer = channel_->peer();
    s.tap_layer_ids = peer.target_layer_ids;
    s.draft_epoch = channel_->epoch();
  }
  const absl::Time prefill_start = absl::Now();
  WindowOutput out;
  PrefillControl control;
  control.sampling = &s.request.sampling;
  absl::Status constrained = ConstrainWindow(s);  // no drafts yet: the first token's mask
  if (!constrained.ok()) return Fail(s, constrained);
  control.allowed = s.allowed.empty() ? nullptr : &s.allowed[0];
  if (s.drafting) control.drafter_epoch = s.draft_epoch;
  bool stopped = false;  // by the check below, not by the model
  control.keep_going = [this, &s, &stopped]() {
    absl::Status go = StopCheck(s, "during its prefill");
    stopped = !go.ok();
    return go;
  };
  absl::Status status = s.sequence->Prefill(s.request.prompt_ids, s.tap_layer_ids, control, &out);
  if (!status.ok()) {
    spdlog::info("[{}] prefill stopped: {}", s.request.request_id, status.ToString());
    return stopped && absl::IsCancelled(status) ? Finish(s, FinishReason::kAborted)
                                                : Fail(s, status);
  }
  s.summary.prefill_seconds = Seconds(absl::Now() - prefill_start);
  s.summary.cached_prompt_tokens = static_cast<int>(out.first_row);
  if (metrics_ != nullptr) metrics_->RecordPrefixLookup("target", out.first_row);
  const int vocab = model_->info().vocab_size;
  const int64_t position = static_cast<int64_t>(s.request.prompt_ids.size());
  absl::StatusOr<uint32_t> first =
      RowToken(out, 0, static_cast<int64_t>(out.logits.size()) / vocab - 1, s.request.sampling,
               position, control.allowed);
  if (!first.ok()) return Fail(s, first.status());
  if (s.request.constraint != nullptr) {
    if (absl::Status status = s.request.constraint->Advance(*first); !status.ok()) {
      return Fail(s, status);
    }
  }
  s.pending = *first;
  if (s.request.draft && s.request.context_copy && options_.context_copy_ngram > 0) {
    s.copy_index = std::make_unique<ContextCopyIndex>(options_.context_copy_ngram);
    s.copy_index->Append(s.request.prompt_ids);
  }
  if (Emit(s, {*first}, /*round=*/false)) return;
  if (s.drafting) {
    const int64_t width = TapWidth(out, s.tap_layer_ids.size(), model_->info().hidden_size);
    DraftOpen open{s.id, s.request.request_id, s.request.prompt_ids,
                   TapRows{out.rows, width, out.taps, out.taps_fused, out.first_row}, s.pending};
    absl::Status sent = channel_->Open(open);
    if (!sent.ok()) {
      spdlog::warn("[{}] drafter open failed, decoding without drafts: {}", s.request.request_id,
                   sent.ToString());
      s.drafting = false;
      s.summary.draft_degraded = true;
    }
  }
}

bool LaneEngine::Emit(Stream& s, std::vector<uint32_t> ids, bool round, int* emitted) {
  const VerifierInfo& info = model_->info();
  std::optional<FinishReason> reason;
  size_t keep = 0;
  for (; keep < ids.size();) {
    const uint32_t id = ids[keep++];
    s.summary.completion_ids.push_back(id);
    const bool eos = !s.request.ignore_eos &&
                     std::find(info.eos_ids.begin(), info.eos_ids.end(), id) != info.eos_ids.end();
    const bool stop = std::find(s.request.stop_token_ids.begin(), s.request.stop_token_ids.end(),
                                id) != s.request.stop_token_ids.end();
    if (eos || stop) {
      reason = eos ? FinishReason::kEos : FinishReason::kStop;
      break;
    }
    if (static_cast<int>(s.summary.completion_ids.size()) >= s.request.max_tokens) {
      reason = FinishReason::kLength;
      break;
    }
  }
  ids.resize(keep);
  const absl::Time now = absl::Now();
  if (s.summary.completion_ids.size() == ids.size()) {
    s.first_token_time = now;
    s.summary.first_token_seconds = Seconds(now - s.arrival);
    if (metrics_ != nullptr) metrics_->RecordFirstToken(s.summary.first_token_seconds);
  } else if (metrics_ != nullptr && !ids.empty()) {
    metrics_->RecordInterToken(Seconds(now - s.last_emit_time) / ids.size());
  }
  s.last_emit_time = now;
  const SinkVerdict verdict = s.sink->OnTokens(ids, s.round);
  const int kept = std::clamp(verdict.keep, 0, static_cast<int>(ids.size()));
  if (s.copy_index != nullptr) s.copy_index->Append(absl::MakeConstSpan(ids).subspan(0, kept));
  if (verdict.stop || kept < static_cast<int>(ids.size())) {
    s.summary.completion_ids.resize(s.summary.completion_ids.size() - ids.size() + kept);
    reason = FinishReason::kStop;
  }
  // What an EOS, stop or max_tokens cut from the round never reached the client.
  if (round) s.summary.tokens_per_round.push_back(static_cast<uint32_t>(kept));
  if (emitted != nullptr) *emitted = kept;
  if (reason) {
    Finish(s, *reason);
    return true;
  }
  return false;
}

int64_t LaneEngine::ContextRoom(const Stream& s) const {
  return std::max<int64_t>(0, model_->info().max_context - s.sequence->length() - 1);
}

int64_t LaneEngine::DraftRoom(const Stream& s) const {
  // Drafts past max_tokens or the context could never be emitted.
  const int64_t room_tokens =
      s.request.max_tokens - static_cast<int64_t>(s.summary.completion_ids.size()) - 1;
  return std::max<int64_t>(0, std::min(room_tokens, ContextRoom(s)));
}

void LaneEngine::PickContextCopy(Stream& s) const {
  s.source = DraftSource::kDrafter;
  s.copy_proposal.clear();
  if (s.done || s.copy_index == nullptr) return;
  s.drafter_proposal = s.proposal.is_tree() ? s.proposal.MainChain().ids : s.proposal.ids;
  const int64_t room = std::min<int64_t>(options_.context_copy_max_tokens, DraftRoom(s));
  s.copy_proposal = s.copy_index->Propose(static_cast<int>(room));
  if (s.picker.Pick(static_cast<int64_t>(s.drafter_proposal.size()),
                    static_cast<int64_t>(s.copy_proposal.size())) == DraftSource::kContextCopy) {
    s.proposal = DraftProposal{s.copy_proposal, {}};
    s.source = DraftSource::kContextCopy;
  }
}

void LaneEngine::ReleaseDraft(Stream& s) {
  if (s.drafting && channel_ != nullptr) channel_->Close(s.id);
  s.drafting = false;
}

void LaneEngine::Finish(Stream& s, FinishReason reason) {
  if (s.done) return;
  s.done = true;
  ReleaseDraft(s);
  s.sequence.reset();
  s.summary.finish_reason = reason;
  s.summary.rounds = static_cast<int>(s.round);
  s.summary.total_seconds = Seconds(absl::Now() - s.arrival);
  if (metrics_ != nullptr) {
    metrics_->RecordRequestDone(FinishReasonName(reason), s.summary.total_seconds,
                                s.summary.prompt_tokens,
                                static_cast<int>(s.summary.completion_ids.size()));
  }
  spdlog::info("[{}] finished: {} tokens, {} rounds, {} drafted, {} accepted, reason {}",
               s.request.request_id, s.summary.completion_ids.size(), s.summary.rounds,
               s.summary.drafted, s.summary.accepted, FinishReasonName(reason));
  s.sink->OnFinish(std::move(s.summary));
}

void LaneEngine::Fail(Stream& s, const absl::Status& status) {
  if (s.done) return;
  s.done = true;
  ReleaseDraft(s);
  s.sequence.reset();
  spdlog::warn("[{}] failed: {}", s.request.request_id, status.ToString());
  if (metrics_ != nullptr) {
    metrics_->RecordRequestDone("error", Seconds(absl::Now() - s.arrival), s.summary.prompt_tokens,
                                static_cast<int>(s.summary.completion_ids.size()));
  }
  s.sink->OnFinish(status);
}

void LaneEngine::RunRound() {
  const VerifierInfo& info = model_->info();
  const int vocab = info.vocab_size;
  const absl::Time now = absl::Now();
  // Cancellation, aborts and deadlines are checked between rounds (and prefill chunks).
  std::vector<Stream*> aborted;
  {
    absl::MutexLock lock(&mu_);
    for (auto& s : live_) {
      if (!s->done && aborts_.erase(s->request.request_id) > 0) aborted.push_back(s.get());
    }
  }
  for (Stream* s : aborted) Finish(*s, FinishReason::kAborted);
  for (auto& s : live_) {
    if (s->done) continue;
    if (s->sink->Cancelled()) {
      Finish(*s, FinishReason::kAborted);
    } else if (now > s->request.deadline) {
      Fail(*s, absl::DeadlineExceededError(DeadlineMessage(*s, "between rounds")));
    }
  }

  // 1. Proposals: one deadline for all streams of the round, cut short by a request's own.
  const absl::Time draft_start = absl::Now();
  const absl::Time draft_deadline = draft_start + options_.draft_timeout;
  for (auto& sp : live_) {
    Stream& s = *sp;
    s.proposal = DraftProposal{};
    s.window_parents.clear();
    if (s.done || !s.drafting) continue;
    if (!channel_->ready() || channel_->epoch() != s.draft_epoch) {
      s.drafting = false;  // the drafter restarted or left: this stream's context there is gone
      s.summary.draft_degraded = true;
      if (metrics_ != nullptr) metrics_->RecordDraftFallback(s.summary.head_variant);
      continue;
    }
    const bool request_first = s.request.deadline < draft_deadline;
    absl::StatusOr<DraftProposal> proposal =
        channel_->Await(s.id, s.round + 1, request_first ? s.request.deadline : draft_deadline);
    if (request_first && absl::IsDeadlineExceeded(proposal.status())) {
      // The request ran out, not the drafter: no fallback, and no verify it could not emit.
      Fail(s, absl::DeadlineExceededError(DeadlineMessage(s, "while it waited for proposals")));
      continue;
    }
    if (proposal.ok()) {
      // The drafter took the prompt: later streams of its epoch may resume the cached prefix.
      if (s.round == 0) model_->GaveDrafterPrefix(s.request.prompt_ids, s.draft_epoch);
      const int block = channel_->peer().block_size;
      // A bad drafter never reaches the verifier: a malformed proposal drafts nothing.
      const bool usable = proposal->is_tree()
                              ? proposal->Validate(vocab, options_.max_draft_nodes).ok()
                              : UsableProposal(proposal->ids, vocab, block);
      if (usable) {
        s.proposal = *std::move(proposal);
      } else {
        if (!s.summary.draft_degraded) {
          spdlog::warn(
              "[{}] the drafter proposed {} ids for a block of {} (vocabulary {}): too many, an "
              "id outside the vocabulary or a parent that is not an earlier row; rounds run "
              "without those drafts",
              s.request.request_id, proposal->ids.size(), block, vocab);
        }
        s.summary.draft_degraded = true;
        if (metrics_ != nullptr) metrics_->RecordDraftFallback(s.summary.head_variant);
      }
      if (s.proposal.is_tree() && !info.verifies_trees) s.proposal = s.proposal.MainChain();
    } else {
      s.summary.draft_degraded = true;
      if (metrics_ != nullptr) metrics_->RecordDraftFallback(channel_->peer().head_variant);
      if (s.round == 0 && s.summary.cached_prompt_tokens > 0 &&
          absl::IsFailedPrecondition(proposal.status())) {
        // The drafter lost the prefix this stream resumed: the next stream gives it again.
        model_->ForgetDrafterPrefix(s.request.prompt_ids);
      }
      if (!absl::IsDeadlineExceeded(proposal.status())) {
        spdlog::warn("[{}] drafter lost, decoding without drafts: {}", s.request.request_id,
                     proposal.status().ToString());
        ReleaseDraft(s);
      }
    }
    // Drafts past max_tokens could never be emitted; a window needs a context slot per row. The
    // draft window is a node budget: a tree keeps its best-first drafts up to it (still a tree,
    // so the accept walk gives plain decoding's tokens), a chain its first drafts.
    const int64_t window = s.window->Size(static_cast<int>(s.proposal.ids.size()));
    s.proposal.Prune(DraftRoom(s), std::min(window, ContextRoom(s)));
  }
  // The copy is picked first, so the grammar checks and masks the window that is verified.
  for (auto& sp : live_) {
    PickContextCopy(*sp);
    if (sp->done) continue;
    // Structured output masks the rows of one path: a tree is verified as its main chain.
    if (sp->request.constraint != nullptr && sp->proposal.is_tree()) {
      sp->proposal = sp->proposal.MainChain();
    }
    if (absl::Status status = ConstrainWindow(*sp); !status.ok()) Fail(*sp, status);
    if (sp->proposal.is_tree()) sp->window_parents = sp->proposal.WindowParents();
  }
  const double draft_seconds = Seconds(absl::Now() - draft_start);

  // 2. Verify every live window [pending, d1..dk] in one call: one forward on a batching model.
  const absl::Time verify_start = absl::Now();
  std::vector<Stream*> verifying;
  std::vector<std::vector<uint32_t>> windows;
  for (auto& sp : live_) {
    if (sp->done) continue;
    verifying.push_back(sp.get());
    windows.push_back({sp->pending});
    windows.back().insert(windows.back().end(), sp->proposal.ids.begin(), sp->proposal.ids.end());
  }
  std::vector<VerifyJob> jobs(verifying.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    Stream& s = *verifying[i];
    jobs[i] = VerifyJob{s.sequence.get(),    windows[i], s.tap_layer_ids, &s.window_out, {},
                        &s.request.sampling, s.allowed,  s.window_parents};
  }
  if (!jobs.empty()) model_->VerifyBatch(absl::MakeSpan(jobs));
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].status.ok()) Fail(*verifying[i], jobs[i].status);
  }
  const double verify_seconds = Seconds(absl::Now() - verify_start);
  if (metrics_ != nullptr) {
    metrics_->RecordPhase(metrics::RoundPhase::kDraft, draft_seconds);
    metrics_->RecordPhase(metrics::RoundPhase::kVerify, verify_seconds);
  }

  // 3. Accept, emit, commit; 4. tell the drafter.
  double rpc_seconds = 0;
  for (auto& sp : live_) {
    Stream& s = *sp;
    if (s.done) continue;
    const int64_t length = s.sequence->length();
    const int k = static_cast<int>(s.proposal.ids.size());
    absl::StatusOr<AcceptedPath> path =
        WalkAccepted(s.proposal, [&](int64_t row, int64_t depth) -> absl::StatusOr<uint32_t> {
          ABSL_ASSIGN_OR_RETURN(
              uint32_t token,
              RowToken(s.window_out, row, row, s.request.sampling, length + depth + 1,
                       s.allowed.empty() ? nullptr : &s.allowed[row]));
          if (s.request.constraint != nullptr) {
            ABSL_RETURN_IF_ERROR(s.request.constraint->Advance(token));
          }
          return token;
        });
    if (!path.ok()) {
      Fail(s, path.status());
      continue;
    }
    const int accepted = path->accepted();
    s.window->Record(k, accepted);
    if (s.copy_index != nullptr) {  // Both sources learn from what the target emitted.
      s.picker.Learn(DraftSource::kDrafter, s.drafter_proposal, path->tokens);
      s.picker.Learn(DraftSource::kContextCopy, s.copy_proposal, path->tokens);
    }
    s.round += 1;
    s.summary.drafted += k;
    s.summary.accepted += accepted;
    if (s.source == DraftSource::kContextCopy) {
      s.summary.context_copy_drafted += k;
      s.summary.context_copy_accepted += accepted;
    }
    s.summary.verify_seconds += verify_seconds;
    s.summary.draft_seconds += draft_seconds;
    if (k > 0 && s.source == DraftSource::kDrafter) {
      s.summary.head_variant = channel_->peer().head_variant;
    }
    const uint32_t old_pending = s.pending;
    const uint32_t new_pending = path->tokens.back();
    // Emit may finish the stream and hand its summary on: read what the metrics need first.
    const std::string head_variant = s.summary.head_variant;
    const bool tree = s.proposal.is_tree();
    int emitted = 0;
    const bool finished = Emit(s, path->tokens, /*round=*/true, &emitted);
    if (metrics_ != nullptr) {  // tokens per round: what reached the client, as in the reply
      metrics_->RecordRound(head_variant, DraftSourceName(s.source), k, accepted, emitted);
      if (k > 0) metrics_->RecordDraftShape(head_variant, tree, k, accepted);
    }
    if (finished) continue;
    absl::Status status = s.sequence->CommitPath(path->rows);
    if (!status.ok()) {
      Fail(s, status);
      continue;
    }
    s.pending = new_pending;
    if (s.sequence->length() >= info.max_context) {  // no position left for the pending token
      Finish(s, FinishReason::kContext);
      continue;
    }
    if (!s.drafting) continue;
    if (!channel_->ready() || channel_->epoch() != s.draft_epoch)
      continue;                                      // next round falls back
    std::vector<uint32_t> kept_ids = {old_pending};  // The kept rows' tokens, root first.
    for (size_t i = 1; i < path->rows.size(); ++i) {
      kept_ids.push_back(s.proposal.ids[path->rows[i] - 1]);
    }
    const WindowOutput& out = s.window_out;
    const int64_t width = TapWidth(out, s.tap_layer_ids.size(), info.hidden_size);
    absl::Span<const float> kept = absl::MakeConstSpan(out.taps);
    if (out.taps_deferred) {  // Only the kept rows leave the model's device.
      absl::Status read = s.sequence->ReadTapRows(path->rows, &s.kept_taps);
      if (!read.ok()) {
        Fail(s, read);
        continue;
      }
      kept = s.kept_taps;
    } else if (s.proposal.is_tree()) {  // The kept path's rows, back to back.
      s.kept_taps.clear();
      for (int64_t row : path->rows) {
        s.kept_taps.insert(s.kept_taps.end(), out.taps.begin() + row * width,
                           out.taps.begin() + (row + 1) * width);
      }
      kept = s.kept_taps;
    }
    const absl::Time rpc_start = absl::Now();
    DraftCommit commit{
        s.id, s.round, kept_ids,
        TapRows{accepted + 1, width, kept.subspan(0, static_cast<size_t>((accepted + 1) * width)),
                out.taps_fused},
        s.pending};
    absl::Status sent = channel_->Commit(commit);
    rpc_seconds += Seconds(absl::Now() - rpc_start);
    if (!sent.ok()) {
      spdlog::warn("[{}] drafter commit failed, decoding without drafts: {}", s.request.request_id,
                   sent.ToString());
      s.summary.draft_degraded = true;
      ReleaseDraft(s);
    }
  }
  if (metrics_ != nullptr) metrics_->RecordPhase(metrics::RoundPhase::kRpc, rpc_seconds);
}

}  // namespace twinspan::engine
