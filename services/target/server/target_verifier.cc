#include "services/target/server/target_verifier.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "kernels/cpu/tree_rows.h"

namespace twinspan::serving {
namespace {

constexpr size_t kFloat = sizeof(float);

std::vector<int32_t> ToInt32(absl::Span<const uint32_t> ids) {
  return std::vector<int32_t>(ids.begin(), ids.end());
}

sampler::SamplingParams Params(const engine::SamplingOptions& o) {
  sampler::SamplingParams p;
  p.temperature = o.temperature;
  p.top_k = o.top_k;
  p.top_p = o.top_p;
  p.min_p = o.min_p;
  return p;
}

// The fuser reads raw rows of exactly its own layers.
absl::Status CheckFusedLayers(const engine::TapFuser& fuser, absl::Span<const int64_t> taps,
                              int64_t hidden) {
  if (std::vector<int64_t>(taps.begin(), taps.end()) != fuser.target_layer_ids() ||
      static_cast<int64_t>(taps.size()) * hidden != fuser.raw_width()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "taps of layers [", absl::StrJoin(taps, ","), "] asked for, but the tap fuser reads [",
        absl::StrJoin(fuser.target_layer_ids(), ","), "] (", fuser.raw_width(), " floats a row)"));
  }
  return absl::OkStatus();
}

target::ForwardRequest VerifyRequest(absl::Span<const int32_t> tokens,
                                     absl::Span<const int32_t> parents,
                                     absl::Span<const int64_t> taps) {
  target::ForwardRequest request;
  request.tokens = tokens;
  request.parents = parents;
  request.logits = target::LogitsRows::kAll;
  request.tap_layer_ids.assign(taps.begin(), taps.end());
  return request;
}

}  // namespace

class TargetVerifier::Sequence : public engine::VerifierSequence {
 public:
  Sequence(const TargetVerifier* verifier, std::unique_ptr<target::SequenceState> state)
      : verifier_(verifier), state_(std::move(state)) {}
  ~Sequence() override {
    absl::MutexLock lock(&verifier_->mu_);  // Frees backend memory.
    taps_.reset();
    state_.reset();
  }

  int64_t length() const override { return state_->length(); }

  absl::Status Prefill(absl::Span<const uint32_t> prompt, const std::vector<int64_t>& taps,
                       const engine::PrefillControl& control, engine::WindowOutput* out) override;

  absl::Status Verify(absl::Span<const uint32_t> window, const std::vector<int64_t>& taps,
                      engine::WindowOutput* out) override {
    return VerifyTree(window, {}, taps, out);
  }

  absl::Status VerifyTree(absl::Span<const uint32_t> window, absl::Span<const int32_t> parents,
                          const std::vector<int64_t>& taps, engine::WindowOutput* out) override {
    engine::VerifyJob job{this, window, taps, out, {}, nullptr, {}, parents};
    verifier_->VerifyBatch(absl::MakeSpan(&job, 1));
    return job.status;
  }

  absl::Status Commit(int64_t n_keep) override {
    absl::MutexLock lock(&verifier_->mu_);
    return verifier_->model_->Commit(*state_, n_keep);
  }

  absl::Status CommitPath(absl::Span<const int64_t> path) override {
    absl::MutexLock lock(&verifier_->mu_);
    return verifier_->model_->CommitPath(*state_, path);
  }

  absl::Status ReadTaps(int64_t rows, std::vector<float>* out) override;
  absl::Status ReadTapRows(absl::Span<const int64_t> rows, std::vector<float>* out) override;

  // Under the verifier's lock, for VerifyBatch.
  const TargetVerifier* verifier() const { return verifier_; }
  target::SequenceState& state() { return *state_; }
  // A fresh buffer for the next forward's raw taps, rows x width floats; nothing is held after.
  absl::StatusOr<backend::Buffer*> TapsFor(int64_t rows, int64_t width) {
    held_rows_ = 0;
    taps_.reset();
    ABSL_ASSIGN_OR_RETURN(taps_, verifier_->model_->backend().AllocateFloats(rows * width));
    return taps_.get();
  }
  void Hold(int64_t rows, int64_t width, bool fused) {
    held_rows_ = rows;
    held_width_ = width;
    held_fused_ = fused;
  }
  void Drop() { held_rows_ = 0; }

 private:
  const TargetVerifier* verifier_;
  std::unique_ptr<target::SequenceState> state_;
  // The last Verify's raw tap rows, in the model's backend: held_rows_ x held_width_ floats.
  std::unique_ptr<backend::Buffer> taps_;
  int64_t held_rows_ = 0;
  int64_t held_width_ = 0;
  bool held_fused_ = false;  // ReadTaps fuses them first
};

absl::Status TargetVerifier::Sequence::Prefill(absl::Span<const uint32_t> prompt,
                                               const std::vector<int64_t>& taps,
                                               const engine::PrefillControl& control,
                                               engine::WindowOutput* out) {
  absl::MutexLock lock(&verifier_->mu_);
  const TargetVerifierOptions& o = verifier_->options_;
  const target::TargetModel& model = *verifier_->model_;
  backend::Backend& be = model.backend();
  const int64_t vocab = model.config().vocab_size, hidden = model.config().hidden_size;
  const bool fuse = o.fuser != nullptr && !taps.empty();
  if (fuse) ABSL_RETURN_IF_ERROR(CheckFusedLayers(*o.fuser, taps, hidden));
  const bool sample = o.sampler != nullptr && control.sampling != nullptr;
  if (sample) ABSL_RETURN_IF_ERROR(Params(*control.sampling).Validate());
  held_rows_ = 0;
  const std::vector<int32_t> tokens = ToInt32(prompt);
  target::PrefillOptions popt;
  popt.chunk_rows = o.prefill_chunk_rows;
  popt.tap_layer_ids = taps;
  popt.keep_going = control.keep_going;
  popt.prefix_cache = o.prefix_cache;
  popt.prefix_drafter_epoch = control.drafter_epoch;
  std::unique_ptr<backend::Buffer> logits, staged, fused;
  if (sample) {
    ABSL_ASSIGN_OR_RETURN(logits, be.AllocateFloats(vocab));
    popt.logits_out = logits.get();
  }
  out->taps.clear();
  const int64_t fused_width = fuse ? o.fuser->fused_width() : 0;
  if (fuse) {  // Each chunk's taps are fused where they are; only fused rows come down.
    // A forward may also end at a prefix-cache block boundary, never past the chunk.
    const int64_t chunk =
        std::min<int64_t>(o.prefill_chunk_rows, static_cast<int64_t>(prompt.size()));
    ABSL_ASSIGN_OR_RETURN(staged, be.AllocateFloats(chunk * o.fuser->raw_width()));
    ABSL_ASSIGN_OR_RETURN(fused, be.AllocateFloats(chunk * fused_width));
    out->taps.resize(prompt.size() * fused_width);
    popt.taps_out = staged.get();
    popt.on_taps = [&](int64_t first, int64_t rows) -> absl::Status {
      ABSL_RETURN_IF_ERROR(o.fuser->FuseOnBackend(staged->floats(), rows, fused->floats()));
      return be.Download(out->taps.data() + first * fused_width, *fused, 0,
                         rows * fused_width * kFloat);
    };
  }
  ABSL_ASSIGN_OR_RETURN(target::ForwardResult result,
                        target::Prefill(model, *state_, tokens, popt));
  if (fuse) out->taps.resize(result.rows * fused_width);  // Rows resumed from the cache have none.
  out->first_row = result.first_position;
  out->rows = result.rows;
  out->logits = std::move(result.logits);
  out->tokens.clear();
  if (!fuse) out->taps = std::move(result.taps);
  out->tap_width = fuse ? fused_width : static_cast<int64_t>(taps.size()) * hidden;
  out->taps_fused = fuse;
  out->taps_deferred = false;
  if (sample) {
    device::RowDraw draw{Params(*control.sampling), control.sampling->seed, state_->length()};
    if (control.allowed != nullptr) draw.allowed = control.allowed->words;
    std::vector<int32_t> drawn;
    ABSL_RETURN_IF_ERROR(o.sampler->Sample(be, *logits, vocab, {draw}, &drawn));
    if (drawn.size() != 1 || drawn[0] < 0) {
      return absl::InvalidArgumentError("prefill: the prompt's last logits row holds a NaN");
    }
    out->tokens = {static_cast<uint32_t>(drawn[0])};
  }
  return absl::OkStatus();
}

absl::Status TargetVerifier::Sequence::ReadTaps(int64_t rows, std::vector<float>* out) {
  if (rows < 0) {
    return absl::InvalidArgumentError(absl::StrCat("ReadTaps: ", rows, " rows asked for"));
  }
  std::vector<int64_t> prefix(rows);
  for (int64_t i = 0; i < rows; ++i) prefix[i] = i;
  return ReadTapRows(prefix, out);
}

absl::Status TargetVerifier::Sequence::ReadTapRows(absl::Span<const int64_t> rows,
                                                   std::vector<float>* out) {
  absl::MutexLock lock(&verifier_->mu_);
  if (held_rows_ == 0 || taps_ == nullptr) {
    return absl::FailedPreconditionError("ReadTaps: the last Verify left no tap rows");
  }
  bool prefix = true;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= held_rows_) {
      return absl::InvalidArgumentError(
          absl::StrCat("ReadTaps: row ", rows[i], " asked for, ", held_rows_, " held"));
    }
    prefix = prefix && rows[i] == static_cast<int64_t>(i);
  }
  if (static_cast<int64_t>(rows.size()) > held_rows_) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReadTaps: ", rows.size(), " rows asked for, ", held_rows_, " held"));
  }
  backend::Backend& be = verifier_->model_->backend();
  const int64_t n = static_cast<int64_t>(rows.size());
  const backend::Buffer* raw = taps_.get();
  std::unique_ptr<backend::Buffer> gathered;  // A tree's kept path, back to back.
  if (!prefix) {
    ABSL_ASSIGN_OR_RETURN(gathered, be.AllocateFloats(n * held_width_));
    ABSL_RETURN_IF_ERROR(be.GatherRows(taps_->floats(), held_width_, rows, held_width_,
                                       gathered->floats(), held_width_));
    raw = gathered.get();
  }
  if (!held_fused_) {
    out->resize(n * held_width_);
    return be.Download(out->data(), *raw, 0, out->size() * kFloat);
  }
  const engine::TapFuser& fuser = *verifier_->options_.fuser;
  out->resize(n * fuser.fused_width());
  if (n == 0) return absl::OkStatus();
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<backend::Buffer> fused,
                        be.AllocateFloats(n * fuser.fused_width()));
  ABSL_RETURN_IF_ERROR(fuser.FuseOnBackend(raw->floats(), n, fused->floats()));
  return be.Download(out->data(), *fused, 0, out->size() * kFloat);
}

namespace {

engine::VerifierInfo WithTrees(engine::VerifierInfo info) {
  info.verifies_trees = true;  // Every family verifies trees (TargetModel::CommitPath).
  return info;
}

}  // namespace

TargetVerifier::TargetVerifier(const target::TargetModel* model, engine::VerifierInfo info,
                               const TargetVerifierOptions& options)
    : model_(model), info_(WithTrees(std::move(info))), options_(options) {}

engine::PrefixCacheUse TargetVerifier::prefix_cache_use() const {
  absl::MutexLock lock(&mu_);
  if (options_.prefix_cache == nullptr) return {};
  const target::PrefixCacheStats stats = options_.prefix_cache->stats();
  return engine::PrefixCacheUse{stats.bytes, stats.blocks};
}

void TargetVerifier::GaveDrafterPrefix(absl::Span<const uint32_t> prompt,
                                       uint64_t drafter_epoch) const {
  absl::MutexLock lock(&mu_);
  if (options_.prefix_cache != nullptr) options_.prefix_cache->Mark(ToInt32(prompt), drafter_epoch);
}

void TargetVerifier::ForgetDrafterPrefix(absl::Span<const uint32_t> prompt) const {
  absl::MutexLock lock(&mu_);
  if (options_.prefix_cache != nullptr) options_.prefix_cache->Unmark(ToInt32(prompt));
}

absl::StatusOr<std::unique_ptr<engine::VerifierSequence>> TargetVerifier::NewSequence() const {
  absl::MutexLock lock(&mu_);
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> state, model_->NewSequence());
  return std::make_unique<Sequence>(this, std::move(state));
}

void TargetVerifier::VerifyBatch(absl::Span<engine::VerifyJob> jobs) const {
  absl::MutexLock lock(&mu_);
  VerifyBatchLocked(jobs);
}

void TargetVerifier::VerifyBatchLocked(absl::Span<engine::VerifyJob> jobs) const {
  backend::Backend& be = model_->backend();
  const int64_t vocab = model_->config().vocab_size, hidden = model_->config().hidden_size;
  const size_t n = jobs.size();
  std::vector<Sequence*> sequences(n, nullptr);
  std::vector<std::vector<int32_t>> tokens(n);
  std::vector<target::ForwardRequest> requests(n);
  std::vector<target::ForwardResult> results(n);
  std::vector<size_t> batched;  // Jobs that passed their own checks, in order.
  // 1. Each job's own checks: a bad one fails alone.
  for (size_t i = 0; i < n; ++i) {
    engine::VerifyJob& job = jobs[i];
    auto* sequence = dynamic_cast<Sequence*>(job.sequence);
    if (sequence == nullptr || sequence->verifier() != this) {
      job.status = absl::InvalidArgumentError("VerifyBatch: a sequence this verifier did not make");
      continue;
    }
    sequence->Drop();
    job.status = absl::OkStatus();
    if (options_.fuser != nullptr && !job.tap_layer_ids.empty()) {
      job.status = CheckFusedLayers(*options_.fuser, job.tap_layer_ids, hidden);
    }
    if (job.status.ok() && options_.sampler != nullptr && job.sampling != nullptr) {
      job.status = Params(*job.sampling).Validate();
    }
    if (job.status.ok() && !job.allowed.empty() && job.allowed.size() != job.window.size()) {
      job.status = absl::InvalidArgumentError(absl::StrCat(
          "VerifyBatch: ", job.allowed.size(), " masks for a window of ", job.window.size()));
    }
    if (job.status.ok() && !job.allowed.empty() && !job.parents.empty()) {
      job.status = absl::InvalidArgumentError(
          "VerifyBatch: structured output masks on a tree window (verify its main chain)");
    }
    if (!job.status.ok()) continue;
    tokens[i] = ToInt32(job.window);
    requests[i] = VerifyRequest(tokens[i], job.parents, job.tap_layer_ids);
    job.status = model_->CheckForward(sequence->state(), requests[i]);
    if (!job.status.ok()) continue;
    sequences[i] = sequence;
    batched.push_back(i);
  }
  // 2. Where the outputs stay: each sequence's taps, and one logits buffer for every sampled row.
  const bool sampling = options_.sampler != nullptr;
  int64_t sampled_rows = 0;
  for (size_t i : batched) {
    if (sampling && jobs[i].sampling != nullptr) {
      requests[i].logits_out_row = sampled_rows;
      sampled_rows += static_cast<int64_t>(tokens[i].size());
    }
  }
  auto fail_all = [&](const absl::Status& status) {
    for (size_t i : batched) jobs[i].status = status;
  };
  std::unique_ptr<backend::Buffer> logits;
  if (sampled_rows > 0) {
    absl::StatusOr<std::unique_ptr<backend::Buffer>> buffer =
        be.AllocateFloats(sampled_rows * vocab);
    if (!buffer.ok()) return fail_all(buffer.status());
    logits = *std::move(buffer);
  }
  std::vector<target::SequenceForward> batch;
  for (size_t i : batched) {
    if (sampling && jobs[i].sampling != nullptr) requests[i].logits_out = logits.get();
    const int64_t width = static_cast<int64_t>(requests[i].tap_layer_ids.size()) * hidden;
    if (width > 0) {
      absl::StatusOr<backend::Buffer*> taps =
          sequences[i]->TapsFor(static_cast<int64_t>(tokens[i].size()), width);
      if (!taps.ok()) return fail_all(taps.status());
      requests[i].taps_out = *taps;
    }
    batch.push_back({&sequences[i]->state(), &requests[i], &results[i]});
  }
  // 3. One forward.
  const absl::Status status = model_->ForwardBatch(batch);
  if (!status.ok()) return fail_all(status);
  for (size_t i : batched) {
    engine::WindowOutput& out = *jobs[i].out;
    const int64_t n_taps = static_cast<int64_t>(requests[i].tap_layer_ids.size());
    const bool fused = options_.fuser != nullptr && n_taps > 0;
    out.rows = results[i].rows;
    out.logits = std::move(results[i].logits);
    out.tokens.clear();
    out.taps.clear();
    out.tap_width = fused ? options_.fuser->fused_width() : n_taps * hidden;
    out.taps_fused = fused;
    out.taps_deferred = n_taps > 0;
    if (n_taps > 0) sequences[i]->Hold(out.rows, n_taps * hidden, fused);
  }
  if (sampled_rows == 0) return;
  // 4. One draw over every sampled row, keyed by (seed, absolute position): only ids come down.
  std::vector<device::RowDraw> draws;
  draws.reserve(sampled_rows);
  for (size_t i : batched) {
    const engine::SamplingOptions* s = jobs[i].sampling;
    if (s == nullptr) continue;
    const int64_t length = sequences[i]->state().length();
    const int64_t rows = static_cast<int64_t>(tokens[i].size());
    const std::vector<int64_t> depth = jobs[i].parents.empty()
                                           ? std::vector<int64_t>()
                                           : cpu::TreeDepths(jobs[i].parents.data(), rows);
    for (int64_t r = 0; r < rows; ++r) {  // A tree's rows draw at their depth's position.
      draws.push_back({Params(*s), s->seed, length + (depth.empty() ? r : depth[r]) + 1});
      if (!jobs[i].allowed.empty()) draws.back().allowed = jobs[i].allowed[r].words;
    }
  }
  std::vector<int32_t> drawn;
  const absl::Status sampled = options_.sampler->Sample(be, *logits, vocab, draws, &drawn);
  for (size_t i : batched) {
    if (jobs[i].sampling == nullptr) continue;
    if (!sampled.ok()) {
      jobs[i].status = sampled;
      continue;
    }
    engine::WindowOutput& out = *jobs[i].out;
    const int64_t first = requests[i].logits_out_row;
    for (size_t r = 0; r < tokens[i].size(); ++r) {
      const int32_t id = drawn[first + r];
      if (id < 0) {
        jobs[i].status = absl::InvalidArgumentError(
            absl::StrCat("VerifyBatch: logits row ", r, " of the window hold a NaN"));
        break;
      }
      out.tokens.push_back(static_cast<uint32_t>(id));
    }
  }
}

}  // namespace twinspan::serving
