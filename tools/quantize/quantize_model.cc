#include "tools/quantize/quantize_model.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/exl3/quantize/tile_encoder.h"
#include "common/files/staged_dir.h"
#include "common/status.h"
#include "common/tokenizer/tokenizer.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/rms_norm.h"
#include "services/target/target_model.h"
#include "services/weights/weight_loader.h"
#include "tools/quantize/calibration.h"
#include "tools/quantize/capture_backend.h"
#include "tools/quantize/exl3_writer.h"
#include "tools/quantize/model_plan.h"
#include "tools/quantize/open_encoder.h"

namespace twinspan::quantize {
namespace {

namespace fs = std::filesystem;
using exl3::quantize::QuantizedLinear;

// A tensor's own sign-flip seed: the run's seed mixed with its name (FNV-1a, then splitmix64).
uint64_t TensorSeed(uint64_t seed, const std::string& prefix) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : prefix) h = (h ^ c) * 0x100000001b3ull;
  uint64_t z = seed + h + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

nlohmann::ordered_json QuantizationConfig(const QuantizeOptions& o, const ModelPlan& plan) {
  nlohmann::ordered_json q;
  q["quant_method"] = "exl3";
  q["version"] = kFormatVersion;
  q["bits"] = std::round(plan.average_bits * 100.0) / 100.0;
  q["head_bits"] = o.head_bits;
  q["calibration"] = {{"rows", o.cal_rows}, {"cols", o.cal_cols}};
  q["out_scales"] = o.out_scales ? "always" : "never";
  q["codebook"] = std::string(exl3::CodebookName(o.codebook));
  q["quantizer"] = kQuantizerName;
  q["hessian"] = o.hessian_basis == exl3::quantize::HessianBasis::kScales ? "matched" : "signs";
  q["seed"] = o.seed;
  return q;
}

// Quantizes planned linears on request and keeps their results.
class LinearQuantizer {
 public:
  LinearQuantizer(const QuantizeOptions& o, const Checkpoint& ckpt, cpu::ThreadPool* pool,
                  const exl3::quantize::TileEncoder& encoder, Progress& progress)
      : options_(o), ckpt_(ckpt), pool_(pool), encoder_(encoder), progress_(progress) {}

  absl::StatusOr<cpu::LinearWeight> Quantize(const PlannedLinear& l,
                                             const exl3::quantize::HessianAccumulator& h) {
    progress_.Begin(l.prefix);
    const auto start = std::chrono::steady_clock::now();
    ABSL_ASSIGN_OR_RETURN(const TensorView view, ckpt_.Get(l.source));
    ABSL_ASSIGN_OR_RETURN(const std::vector<float> hf, ToFloat(view));  // [n, k]
    std::vector<float> w(hf.size());                                    // [k, n]
    for (int64_t j = 0; j < l.out; ++j) {
      for (int64_t i = 0; i < l.in; ++i) w[i * l.out + j] = hf[j * l.in + i];
    }
    std::vector<float> bias;
    if (l.has_bias) {
      ABSL_ASSIGN_OR_RETURN(bias, target::LoadFloats(ckpt_, l.prefix + ".bias", l.out));
    }
    if (h.rows() > 0 && h.dropped() * 10 > h.rows() + h.dropped()) {
      return absl::FailedPreconditionError(
          absl::StrFormat("%s: %d of %d calibration rows reaching it are not finite", l.prefix,
                          h.dropped(), h.rows() + h.dropped()));
    }
    const std::vector<float> hessian = h.Mean();
    exl3::quantize::LinearQuantOptions o;
    o.bits = l.bits;
    o.codebook = options_.codebook;
    o.seed = TensorSeed(options_.seed, l.prefix);
    o.out_scales = options_.out_scales;
    o.hessian_basis = options_.hessian_basis;
    absl::StatusOr<QuantizedLinear> q =
        exl3::quantize::QuantizeLinear(pool_, encoder_, {w.data(), l.in, l.out, hessian, bias}, o);
    if (!q.ok()) {
      return absl::Status(q.status().code(),
                          absl::StrFormat("%s: %s", l.prefix, q.status().message()));
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress_.Done(
        l.prefix, l.numel(),
        absl::StrFormat("[k %d, n %d] K=%d proxy error %.6f%s (%.1f s)", l.in, l.out, l.bits,
                        q->proxy_error, q->calibrated ? "" : " (uncalibrated)", seconds));
    std::vector<float> dequantized(hf.size());  // HF orientation, for the rest of the forward.
    for (int64_t i = 0; i < l.in; ++i) {
      for (int64_t j = 0; j < l.out; ++j) dequantized[j * l.in + i] = q->dequantized[i * l.out + j];
    }
    std::vector<float>().swap(q->dequantized);  // Only the stored tensors are kept.
    results_[l.prefix] = *std::move(q);
    return cpu::LinearWeight::Dense(l.out, l.in, std::move(dequantized));
  }

  const std::map<std::string, QuantizedLinear>& results() const { return results_; }

 private:
  const QuantizeOptions& options_;
  const Checkpoint& ckpt_;
  cpu::ThreadPool* pool_;
  const exl3::quantize::TileEncoder& encoder_;
  Progress& progress_;
  std::map<std::string, QuantizedLinear> results_;
};

// The random rows' vocabulary: the tokenizer's when it is smaller than the embedding (exllamav3's
// actual_vocab_size), else the config's.
int64_t RandomVocab(const target::TargetConfig& c, const tokenizer::Tokenizer* tok) {
  return tok == nullptr ? c.vocab_size : std::min<int64_t>(c.vocab_size, tok->vocab_size());
}

// Runs the calibration forward; returns the final norm of every row (the head's inputs).
absl::StatusOr<std::vector<float>> CalibrationForward(const QuantizeOptions& o,
                                                      const ModelPlan& plan, const Checkpoint& ckpt,
                                                      const Calibration& cal,
                                                      CaptureBackend& backend,
                                                      cpu::ThreadPool* pool) {
  target::TargetOptions t;
  t.backend = &backend;
  t.context = o.cal_cols;
  t.kv_dtype = cpu::KvDtype::kF32;
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::TargetModel> model,
                        target::OpenTargetModel(o.in_dir, t));
  const target::TargetConfig& c = plan.config;
  std::vector<std::unique_ptr<target::SequenceState>> states;
  std::vector<target::ForwardRequest> requests(cal.rows.size());
  std::vector<target::ForwardResult> results(cal.rows.size());
  std::vector<target::SequenceForward> batch;
  for (size_t r = 0; r < cal.rows.size(); ++r) {
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> s, model->NewSequence());
    states.push_back(std::move(s));
    requests[r].tokens = cal.rows[r];
    requests[r].logits = target::LogitsRows::kNone;
    requests[r].tap_layer_ids = {c.num_layers - 1};
  }
  for (size_t r = 0; r < cal.rows.size(); ++r) {
    batch.push_back({states[r].get(), &requests[r], &results[r]});
  }
  ABSL_RETURN_IF_ERROR(model->ForwardBatch(batch));
  if (const std::set<std::string> left = backend.uncaptured(); !left.empty()) {
    return absl::InternalError(absl::StrFormat("the forward never reached %s", *left.begin()));
  }
  ABSL_ASSIGN_OR_RETURN(std::vector<float> norm,
                        target::LoadFloats(ckpt, plan.text_prefix + "norm.weight", c.hidden_size));
  if (c.family == target::TargetFamily::kQwen35) norm = target::OnePlus(std::move(norm));
  std::vector<float> final_norm;
  for (const target::ForwardResult& r : results) {
    std::vector<float> rows(r.taps.size());
    ABSL_RETURN_IF_ERROR(cpu::RmsNorm(cpu::Context{pool}, r.taps.data(), r.rows, c.hidden_size,
                                      norm.data(), c.rms_norm_eps, rows.data()));
    final_norm.insert(final_norm.end(), rows.begin(), rows.end());
  }
  return final_norm;
}

absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> OpenTokenizer(const QuantizeOptions& o) {
  const bool present = fs::exists(fs::path(o.in_dir) / "tokenizer.json");
  if (!present && o.calibration_file.empty()) return nullptr;
  if (!present) {
    return absl::NotFoundError(absl::StrFormat(
        "--calibration needs the model's tokenizer, and %s has no tokenizer.json", o.in_dir));
  }
  absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> tok = tokenizer::Tokenizer::Open(o.in_dir);
  if (!tok.ok() && o.calibration_file.empty()) return nullptr;  // Only the vocabulary was wanted.
  return tok;
}

}  // namespace

absl::StatusOr<QuantizeSummary> QuantizeModel(const QuantizeOptions& o, Progress& progress,
                                              const exl3::quantize::TileEncoder* encoder) {
  ABSL_RETURN_IF_ERROR(o.Validate());
  cpu::ThreadPool pool(o.threads);
  std::unique_ptr<exl3::quantize::TileEncoder> opened;
  if (encoder == nullptr) {
    // Before the output folder exists, so a device that is not there leaves nothing behind.
    ABSL_ASSIGN_OR_RETURN(opened, OpenTileEncoder(o.device, &pool));
    encoder = opened.get();
  }
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<files::StagedDir> staged,
                        files::StagedDir::Create(o.out_dir));
  ABSL_ASSIGN_OR_RETURN(const target::TargetConfig config, target::LoadTargetConfig(o.in_dir));
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> ckpt, Checkpoint::Open(o.in_dir));
  ABSL_ASSIGN_OR_RETURN(const ModelPlan plan, PlanModel(config, *ckpt, o.bits, o.head_bits));
  ABSL_ASSIGN_OR_RETURN(const std::unique_ptr<tokenizer::Tokenizer> tok, OpenTokenizer(o));
  ABSL_ASSIGN_OR_RETURN(const Calibration cal, BuildCalibration({o.calibration_file, tok.get(),
                                                                 RandomVocab(config, tok.get()),
                                                                 o.cal_rows, o.cal_cols, o.seed}));

  int64_t weights = 0;
  std::set<std::string> decoder;
  for (const PlannedLinear& l : plan.linears) {
    weights += l.numel();
    if (l.layer >= 0) decoder.insert(l.prefix);
  }
  progress.Plan(static_cast<int64_t>(plan.linears.size()), weights);
  progress.Line(absl::StrFormat(
      "%s: %s, %d layers, %d linears to quantize, %.2f bits (head %s), "
      "codebook %s, %d threads, tiles encoded on %s",
      o.in_dir, config.model_type, config.num_layers, plan.linears.size(), plan.average_bits,
      o.head_bits == 16 ? "kept" : absl::StrFormat("%d", o.head_bits),
      exl3::CodebookName(o.codebook), o.threads, encoder->name()));
  progress.Line(cal.description);

  LinearQuantizer quantizer(o, *ckpt, &pool, *encoder, progress);
  const std::unique_ptr<backend::Backend> cpu_backend = cpu::NewCpuBackend(&pool);
  CaptureBackend capture(
      *cpu_backend, &pool, decoder,
      [&](const std::string& prefix, const exl3::quantize::HessianAccumulator& h) {
        return quantizer.Quantize(*plan.Find(prefix), h);
      });
  ABSL_ASSIGN_OR_RETURN(const std::vector<float> head_inputs,
                        CalibrationForward(o, plan, *ckpt, cal, capture, &pool));
  if (const PlannedLinear* head = plan.Find("lm_head")) {
    exl3::quantize::HessianAccumulator h(config.hidden_size);
    h.Add(&pool, head_inputs.data(), static_cast<int64_t>(head_inputs.size()) / config.hidden_size,
          config.hidden_size);
    ABSL_RETURN_IF_ERROR(quantizer.Quantize(*head, h).status());
  }
  Exl3Output out{ckpt.get(), &plan,          &quantizer.results(),
                 o.in_dir,   staged->path(), QuantizationConfig(o, plan)};
  ABSL_RETURN_IF_ERROR(WriteExl3Checkpoint(out));
  ABSL_RETURN_IF_ERROR(staged->Commit());

  QuantizeSummary summary;
  summary.tensors = static_cast<int64_t>(quantizer.results().size());
  summary.average_bits = plan.average_bits;
  for (const auto& [name, q] : quantizer.results()) {
    if (q.proxy_error >= summary.worst_proxy_error) {
      summary.worst_proxy_error = q.proxy_error;
      summary.worst_tensor = name;
    }
  }
  progress.Finish();
  summary.seconds = progress.elapsed_seconds();
  return summary;
}

}  // namespace twinspan::quantize
