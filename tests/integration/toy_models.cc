#include "tests/integration/toy_models.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status.h"

namespace twinspan::testing {
namespace {

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

uint64_t PrefixHash(absl::Span<const uint32_t> prefix) {
  // Only the last 3 tokens matter, so the toy drafter's guesses are often right.
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  const size_t from = prefix.size() > 3 ? prefix.size() - 3 : 0;
  for (size_t i = from; i < prefix.size(); ++i) h = Mix(h ^ prefix[i]);
  return h;
}

uint32_t Argmax(absl::Span<const float> row) {
  return static_cast<uint32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

class ToySequence : public engine::VerifierSequence {
 public:
  ToySequence(const engine::VerifierInfo* info, ToyVerifyLog* log, ToySlowPrefill slow,
              uint32_t cycle)
      : info_(info), log_(log), id_(log->NewSequenceId()), slow_(slow), cycle_(cycle) {}
  int id() const { return id_; }
  int64_t length() const override { return static_cast<int64_t>(committed_.size()); }

  absl::Status Prefill(absl::Span<const uint32_t> prompt, const std::vector<int64_t>& taps,
                       const engine::PrefillControl& control, engine::WindowOutput* out) override {
    for (int64_t begin = 0; slow_.chunk_rows > 0 && begin < static_cast<int64_t>(prompt.size());
         begin += slow_.chunk_rows) {
      if (begin > 0 && control.keep_going) ABSL_RETURN_IF_ERROR(control.keep_going());
      absl::SleepFor(slow_.per_chunk);
    }
    ABSL_RETURN_IF_ERROR(Run(prompt, taps, out));
    committed_.insert(committed_.end(), prompt.begin(), prompt.end());
    out->logits.erase(out->logits.begin(), out->logits.end() - info_->vocab_size);
    pending_.clear();
    return absl::OkStatus();
  }
  absl::Status Verify(absl::Span<const uint32_t> window, const std::vector<int64_t>& taps,
                      engine::WindowOutput* out) override {
    return VerifyTree(window, {}, taps, out);
  }
  absl::Status VerifyTree(absl::Span<const uint32_t> window, absl::Span<const int32_t> parents,
                          const std::vector<int64_t>& taps, engine::WindowOutput* out) override {
    log_->RecordVerify();
    if (!pending_.empty()) return absl::FailedPreconditionError("toy: rows pending");
    if (!parents.empty() && parents.size() != window.size()) {
      return absl::InvalidArgumentError("toy: parents");
    }
    ABSL_RETURN_IF_ERROR(Run(window, taps, out, parents));
    pending_.assign(window.begin(), window.end());
    pending_parents_.assign(parents.begin(), parents.end());
    return absl::OkStatus();
  }
  absl::Status Commit(int64_t n_keep) override {
    std::vector<int64_t> path(std::max<int64_t>(n_keep, 0));
    for (size_t i = 0; i < path.size(); ++i) path[i] = static_cast<int64_t>(i);
    return CommitPath(path);
  }
  absl::Status CommitPath(absl::Span<const int64_t> path) override {
    if (path.size() > pending_.size()) return absl::InvalidArgumentError("toy: bad n_keep");
    for (size_t i = 0; i < path.size(); ++i) {
      const int64_t parent = i == 0 ? -1 : path[i - 1];
      const bool ok = pending_parents_.empty()
                          ? path[i] == static_cast<int64_t>(i)
                          : path[i] >= 0 && path[i] < static_cast<int64_t>(pending_.size()) &&
                                pending_parents_[path[i]] == parent;
      if (!ok) return absl::InvalidArgumentError("toy: not a path of the window");
    }
    for (int64_t row : path) committed_.push_back(pending_[row]);
    pending_.clear();
    pending_parents_.clear();
    return absl::OkStatus();
  }

 private:
  // Each row's logits follow the committed tokens and its path (its parents' rows, or the rows
  // before it when `parents` is empty).
  absl::Status Run(absl::Span<const uint32_t> rows, const std::vector<int64_t>& taps,
                   engine::WindowOutput* out, absl::Span<const int32_t> parents = {}) {
    if (rows.empty()) return absl::InvalidArgumentError("toy: empty window");
    if (length() + static_cast<int64_t>(rows.size()) > info_->max_context) {
      return absl::ResourceExhaustedError(absl::StrCat("toy: context ", info_->max_context));
    }
    const int vocab = info_->vocab_size;
    const int64_t width = static_cast<int64_t>(taps.size()) * info_->hidden_size;
    out->rows = static_cast<int64_t>(rows.size());
    out->logits.assign(rows.size() * vocab, 0.0f);
    out->taps.assign(rows.size() * width, 0.0f);
    std::vector<uint32_t> prefix = committed_;
    for (size_t r = 0; r < rows.size(); ++r) {
      if (rows[r] >= static_cast<uint32_t>(vocab)) return absl::InvalidArgumentError("toy: id");
      if (parents.empty()) {
        prefix.push_back(rows[r]);
      } else {
        std::vector<uint32_t> path;
        for (int64_t row = static_cast<int64_t>(r); row >= 0; row = parents[row]) {
          path.insert(path.begin(), rows[row]);
        }
        prefix = committed_;
        prefix.insert(prefix.end(), path.begin(), path.end());
      }
      if (cycle_ > 0) {  // peaked: sampling follows the cycle too
        const uint32_t step = prefix.size() % 50 == 0 ? 2 : 1;
        out->logits[r * vocab + (rows[r] + step) % cycle_] = 30.0f;
      } else {
        ToyLogits(prefix, vocab, &out->logits[r * vocab]);
      }
      for (int64_t c = 0; c < width; ++c) out->taps[r * width + c] = static_cast<float>(rows[r]);
    }
    return absl::OkStatus();
  }

  const engine::VerifierInfo* info_;
  ToyVerifyLog* log_;
  int id_;
  ToySlowPrefill slow_;
  uint32_t cycle_;
  std::vector<uint32_t> committed_;
  std::vector<uint32_t> pending_;
  std::vector<int32_t> pending_parents_;
};

class ToySession : public engine::DraftSession {
 public:
  ToySession(const engine::DrafterInfo* info, int miss_every)
      : info_(info), miss_every_(miss_every) {}
  absl::StatusOr<engine::DraftProposal> Open(absl::Span<const uint32_t> prompt_ids,
                                             const engine::TapRows& taps,
                                             uint32_t pending) override {
    ABSL_RETURN_IF_ERROR(Check(prompt_ids, taps));
    context_.assign(prompt_ids.begin(), prompt_ids.end());
    return Propose(pending);
  }
  absl::StatusOr<engine::DraftProposal> Commit(absl::Span<const uint32_t> ids,
                                               const engine::TapRows& taps,
                                               uint32_t pending) override {
    ABSL_RETURN_IF_ERROR(Check(ids, taps));
    context_.insert(context_.end(), ids.begin(), ids.end());
    return Propose(pending);
  }

 private:
  absl::Status Check(absl::Span<const uint32_t> ids, const engine::TapRows& taps) {
    const int64_t width = taps.fused ? info_->fused_width : info_->tap_width;
    if (taps.rows != static_cast<int64_t>(ids.size()) || taps.width != width) {
      return absl::InvalidArgumentError(absl::StrCat("toy drafter: taps [", taps.rows, ", ",
                                                     taps.width, "] for ", ids.size(), " ids"));
    }
    for (int64_t r = 0; r < taps.rows; ++r) {  // taps must be the rows of exactly these ids
      if (taps.width > 0 && taps.data[r * taps.width] != static_cast<float>(ids[r])) {
        return absl::InvalidArgumentError("toy drafter: tap row does not match its id");
      }
    }
    return absl::OkStatus();
  }
  // The toy target's greedy chain with every miss_every-th draft wrong; a tree drafter also hangs
  // the right token beside each wrong one, with one draft after it (up to tree_nodes drafts).
  engine::DraftProposal Propose(uint32_t pending) {
    std::vector<uint32_t> prefix = context_;
    prefix.push_back(pending);
    engine::DraftProposal out;
    std::vector<std::pair<uint32_t, std::vector<uint32_t>>> fixes;  // (parent row, its prefix)
    std::vector<float> row(info_->vocab_size);
    for (int i = 0; i + 1 < info_->block_size; ++i) {
      ToyLogits(prefix, info_->vocab_size, row.data());
      uint32_t id = Argmax(row);
      if (miss_every_ > 0 && ++proposed_ % miss_every_ == 0) {
        fixes.push_back({static_cast<uint32_t>(i), prefix});
        id = (id + 1) % info_->vocab_size;
      }
      out.ids.push_back(id);
      prefix.push_back(id);
    }
    if (info_->tree_nodes == 0) return out;
    for (size_t i = 0; i < out.ids.size(); ++i) out.parents.push_back(static_cast<uint32_t>(i));
    for (auto& [parent, fixed] : fixes) {
      for (int extra = 0; extra < 2; ++extra) {
        ToyLogits(fixed, info_->vocab_size, row.data());
        out.ids.push_back(Argmax(row));
        out.parents.push_back(extra == 0 ? parent : static_cast<uint32_t>(out.ids.size() - 1));
        fixed.push_back(out.ids.back());
      }
    }
    out.Prune(info_->block_size - 1, info_->tree_nodes);
    return out;
  }
  const engine::DrafterInfo* info_;
  int miss_every_;
  int64_t proposed_ = 0;
  std::vector<uint32_t> context_;
};

}  // namespace

void ToyLogits(absl::Span<const uint32_t> prefix, int vocab, float* out) {
  const uint64_t h = PrefixHash(prefix);
  for (int v = 0; v < vocab; ++v) {
    out[v] = static_cast<float>(Mix(h + v) % 1000) / 100.0f;  // 0 .. 10, peaked enough to repeat
  }
}

ToyVerifier::ToyVerifier(int vocab, int64_t context, uint32_t eos_id, int hidden_size) {
  info_.model_name = "toy";
  info_.model_type = "toy";
  info_.vocab_size = vocab;
  info_.max_context = context;
  info_.eos_ids = {eos_id};
  info_.hidden_size = hidden_size;
  info_.checkpoint_fingerprint = "toy-fingerprint";
  info_.verifies_trees = true;
}

absl::StatusOr<std::unique_ptr<engine::VerifierSequence>> ToyVerifier::NewSequence() const {
  return std::make_unique<ToySequence>(&info_, log_.get(), slow_, cycle_);
}

void ToyVerifier::VerifyBatch(absl::Span<engine::VerifyJob> jobs) const {
  std::vector<int> ids;
  for (const engine::VerifyJob& job : jobs) {
    const auto* toy = dynamic_cast<const ToySequence*>(job.sequence);
    ids.push_back(toy == nullptr ? -1 : toy->id());
  }
  log_->RecordBatch(std::move(ids));
  engine::VerifierModel::VerifyBatch(jobs);
}

int ToyVerifyLog::NewSequenceId() {
  absl::MutexLock lock(&mu_);
  return next_id_++;
}

void ToyVerifyLog::RecordBatch(std::vector<int> sequence_ids) {
  absl::MutexLock lock(&mu_);
  batches_.push_back(std::move(sequence_ids));
}

void ToyVerifyLog::RecordVerify() {
  absl::MutexLock lock(&mu_);
  ++verifies_;
}

std::vector<std::vector<int>> ToyVerifyLog::batches() const {
  absl::MutexLock lock(&mu_);
  return batches_;
}

int64_t ToyVerifyLog::verifies() const {
  absl::MutexLock lock(&mu_);
  return verifies_;
}

ToyDrafter::ToyDrafter(int vocab, int block_size, int miss_every, int tap_width,
                       int64_t fused_width, int tree_nodes)
    : miss_every_(miss_every) {
  info_.tree_nodes = tree_nodes;
  info_.block_size = block_size;
  info_.head_variant = "toy-head";
  info_.vocab_size = vocab;
  info_.tokenizer_sha256 = "toy-tokenizer";
  info_.target_fingerprint = "toy-fingerprint";
  info_.target_layer_ids = {0, 1};
  info_.tap_width = tap_width;
  info_.fused_width = fused_width > 0 ? static_cast<int>(fused_width) : std::max(1, tap_width / 2);
  info_.drafter_fingerprint = "toy-drafter";
  info_.max_streams = 64;
  info_.max_context = 1 << 20;
}

absl::StatusOr<std::unique_ptr<engine::DraftSession>> ToyDrafter::NewSession() const {
  return std::make_unique<ToySession>(&info_, miss_every_);
}

ToyTapFusion::ToyTapFusion(int64_t raw_width, int64_t fused_width, std::string fingerprint)
    : raw_width_(raw_width), fused_width_(fused_width), fingerprint_(std::move(fingerprint)) {}

absl::Status ToyTapFusion::Fuse(const float* raw, int64_t rows, float* fused) const {
  if (rows < 0) return absl::InvalidArgumentError("toy fusion: rows < 0");
  for (int64_t r = 0; r < rows; ++r) {  // keeps column 0 (the row's id), as the toy drafter checks
    for (int64_t c = 0; c < fused_width_; ++c) {
      fused[r * fused_width_ + c] = raw[r * raw_width_ + c % raw_width_];
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> ToySampler::Sample(absl::Span<const float> logits,
                                            const engine::SamplingOptions& options,
                                            int64_t position) const {
  if (options.temperature <= 0.0f) return Argmax(logits);
  const float top = *std::max_element(logits.begin(), logits.end());
  double total = 0;
  std::vector<double> p(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    p[i] = std::exp((logits[i] - top) / options.temperature);
    total += p[i];
  }
  const double u = static_cast<double>(Mix(options.seed * 0x100000001b3ULL ^ Mix(position)) >> 11) /
                   static_cast<double>(1ULL << 53) * total;
  double acc = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    acc += p[i];
    if (u < acc) return static_cast<uint32_t>(i);
  }
  return static_cast<uint32_t>(p.size() - 1);
}

}  // namespace twinspan::testing
