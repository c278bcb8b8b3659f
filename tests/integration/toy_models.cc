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
    log_->RecordVerify();
    if (!pending_.empty()) return absl::FailedPreconditionError("toy: rows pending");
    ABSL_RETURN_IF_ERROR(Run(window, taps, out));
    pending_.assign(window.begin(), window.end());
    return absl::OkStatus();
  }
  absl::Status Commit(int64_t n_keep) override {
    if (n_keep < 0 || n_keep > static_cast<int64_t>(pending_.size())) {
      return absl::InvalidArgumentError("toy: bad n_keep");
    }
    committed_.insert(committed_.end(), pending_.begin(), pending_.begin() + n_keep);
    pending_.clear();
    return absl::OkStatus();
  }

 private:
  absl::Status Run(absl::Span<const uint32_t> rows, const std::vector<int64_t>& taps,
                   engine::WindowOutput* out) {
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
      prefix.push_back(rows[r]);
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
};

class ToySession : public engine::DraftSession {
 public:
  ToySession(const engine::DrafterInfo* info, int miss_every)
      : info_(info), miss_every_(miss_every) {}
  absl::StatusOr<std::vector<uint32_t>> Open(absl::Span<const uint32_t> prompt_ids,
                                             const engine::TapRows& taps,
                                             uint32_t pending) override {
    ABSL_RETURN_IF_ERROR(Check(prompt_ids, taps));
    context_.assign(prompt_ids.begin(), prompt_ids.end());
    return Propose(pending);
  }
  absl::StatusOr<std::vector<uint32_t>> Commit(absl::Span<const uint32_t> ids,
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
  std::vector<uint32_t> Propose(uint32_t pending) {
    std::vector<uint32_t> prefix = context_;
    prefix.push_back(pending);
    std::vector<uint32_t> out;
    std::vector<float> row(info_->vocab_size);
    for (int i = 0; i + 1 < info_->block_size; ++i) {
      ToyLogits(prefix, info_->vocab_size, row.data());
      uint32_t id = Argmax(row);
      if (miss_every_ > 0 && ++proposed_ % miss_every_ == 0) id = (id + 1) % info_->vocab_size;
      out.push_back(id);
      prefix.push_back(id);
    }
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
                       int64_t fused_width)
    : miss_every_(miss_every) {
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
