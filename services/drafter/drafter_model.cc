#include "services/drafter/drafter_model.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "common/safetensors/checkpoint.h"
#include "common/status.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/rope.h"

namespace twinspan::drafter {
namespace {

constexpr size_t kFloat = sizeof(float);

std::vector<int64_t> Positions(int64_t start, int64_t rows) {
  std::vector<int64_t> positions(rows);
  for (int64_t i = 0; i < rows; ++i) positions[i] = start + i;
  return positions;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DrafterModel>> DrafterModel::Create(
    DrafterConfig config, DrafterWeights weights, const DrafterModelOptions& options) {
  if (options.context < config.block_size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("DrafterModelOptions.context = %d is below the block size %d",
                        options.context, config.block_size));
  }
  if (options.backend != nullptr && options.pool != nullptr) {
    return absl::InvalidArgumentError(
        "DrafterModelOptions.pool is set with a backend: the pool belongs to the backend, give "
        "one");
  }
  if (static_cast<int64_t>(weights.layers.size()) != config.num_layers ||
      (config.kind == DrafterKind::kDFlash2) != weights.selector.has_value()) {
    return absl::InvalidArgumentError("DrafterModel: weights were not loaded for this config");
  }
  std::unique_ptr<DrafterModel> model(
      new DrafterModel(std::move(config), std::move(weights), options));
  if (options.backend == nullptr) model->owned_backend_ = cpu::NewCpuBackend(options.pool);
  model->backend_ = options.backend != nullptr ? options.backend : model->owned_backend_.get();
  absl::MutexLock lock(&model->mu_);
  ABSL_ASSIGN_OR_RETURN(model->device_, UploadDrafterWeights(*model->backend_, model->weights_));
  ABSL_ASSIGN_OR_RETURN(model->scratch_,
                        DrafterScratch::Allocate(*model->backend_, model->config_));
  return model;
}

absl::StatusOr<std::unique_ptr<DrafterModel>> DrafterModel::Open(const std::string& dir,
                                                                 const DrafterModelOptions& options,
                                                                 bool as_dflash_v1) {
  ABSL_ASSIGN_OR_RETURN(DrafterConfig config, LoadDrafterConfig(dir));
  if (as_dflash_v1) config.kind = DrafterKind::kDFlash;
  ABSL_ASSIGN_OR_RETURN(const std::unique_ptr<Checkpoint> checkpoint, Checkpoint::Open(dir));
  ABSL_ASSIGN_OR_RETURN(DrafterWeights weights,
                        LoadDrafterWeights(*checkpoint, config, options.linear_bits));
  return Create(std::move(config), std::move(weights), options);
}

absl::StatusOr<std::unique_ptr<DraftStream>> DrafterModel::NewStream() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::unique_ptr<backend::KvCacheHandle>> layers;
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<backend::KvCacheHandle> kv,
                          backend_->NewKvCache(options_.kv_dtype, options_.context,
                                               config_.num_kv_heads, config_.head_dim));
    layers.push_back(std::move(kv));
  }
  return std::make_unique<DraftStream>(std::move(layers), options_.context);
}

absl::StatusOr<std::unique_ptr<ContextBlock>> DrafterModel::SaveContext(const DraftStream& stream,
                                                                        int64_t first,
                                                                        int64_t rows) const {
  if (rows < 1 || first < 0 || first + rows > stream.context_length_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SaveContext of positions [%d, %d) with %d context rows", first,
                        first + rows, stream.context_length_));
  }
  absl::MutexLock lock(&mu_);
  std::vector<std::unique_ptr<backend::KvCacheHandle>> layers;
  absl::Status status = absl::OkStatus();
  for (int64_t l = 0; l < config_.num_layers && status.ok(); ++l) {
    absl::StatusOr<std::unique_ptr<backend::KvCacheHandle>> kv =
        backend_->NewKvCache(options_.kv_dtype, rows, config_.num_kv_heads, config_.head_dim);
    status = kv.ok() ? backend_->KvCopy(*stream.layers_[l], first, **kv, 0, rows) : kv.status();
    if (kv.ok()) layers.push_back(*std::move(kv));
  }
  if (!status.ok()) {
    layers.clear();  // Freed under the lock.
    return status;
  }
  return std::make_unique<ContextBlock>(first, rows, std::move(layers), &mu_);
}

absl::Status DrafterModel::LoadContext(DraftStream& stream,
                                       std::span<const ContextBlock* const> blocks) const {
  if (stream.context_length_ != 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("LoadContext into a stream with %d context rows: it must be empty",
                        stream.context_length_));
  }
  if (blocks.empty()) return absl::InvalidArgumentError("LoadContext of no blocks");
  int64_t next = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b] == nullptr || !blocks[b]->OwnedBy(&mu_) ||
        blocks[b]->num_layers() != config_.num_layers || blocks[b]->first() != next) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "LoadContext: block %d is of another model or does not start at position %d", b, next));
    }
    next += blocks[b]->rows();
  }
  if (next > stream.capacity_) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "LoadContext: %d cached rows exceed the stream's %d positions", next, stream.capacity_));
  }
  absl::MutexLock lock(&mu_);
  for (const ContextBlock* block : blocks) {
    for (int64_t l = 0; l < config_.num_layers; ++l) {
      ABSL_RETURN_IF_ERROR(
          backend_->KvCopy(block->layer(l), 0, *stream.layers_[l], block->first(), block->rows()));
    }
  }
  stream.context_length_ = next;
  return absl::OkStatus();
}

absl::Status DrafterModel::FuseTaps(const float* raw, int64_t rows, float* fused) const {
  if (rows < 0) {
    return absl::InvalidArgumentError(absl::StrFormat("FuseTaps: rows = %d is negative", rows));
  }
  absl::MutexLock lock(&mu_);
  return engine::FuseHostTapRows(*backend_, FusionWeights(), raw, rows, fused, *scratch_.raw,
                                 *scratch_.fused, kScratchRows);
}

absl::Status DrafterModel::AppendContext(DraftStream& stream, const float* fused,
                                         int64_t rows) const {
  absl::MutexLock lock(&mu_);
  return AppendTapsLocked(stream, TapForm::kFused, fused, rows);
}

absl::Status DrafterModel::ForwardBlock(DraftStream& stream, const float* embeddings, int64_t rows,
                                        float* hidden, BlockTrace* trace) const {
  if (rows < 1 || rows > kScratchRows) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ForwardBlock: rows = %d is outside [1, %d]", rows, kScratchRows));
  }
  const size_t bytes = rows * config_.hidden_size * kFloat;
  absl::MutexLock lock(&mu_);
  ABSL_RETURN_IF_ERROR(backend_->Upload(*scratch_.state, 0, embeddings, bytes));
  ABSL_RETURN_IF_ERROR(ForwardLocked(stream, rows, trace));
  return backend_->Download(hidden, *scratch_.hidden, 0, bytes);
}

absl::Status DrafterModel::AppendTapsLocked(DraftStream& stream, TapForm form, const float* taps,
                                            int64_t rows, bool in_backend) const {
  const int64_t h = config_.hidden_size;
  const int64_t width = form == TapForm::kRaw ? config_.num_taps() * h : h;
  if (rows < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("AppendContext: rows = %d is negative", rows));
  }
  if (stream.context_length_ + rows > stream.capacity_) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("AppendContext: %d context rows after %d exceed the stream's %d positions",
                        rows, stream.context_length_, stream.capacity_));
  }
  backend::Buffer& in = form == TapForm::kRaw ? *scratch_.raw : *scratch_.fused;
  for (int64_t r0 = 0; r0 < rows; r0 += kScratchRows) {
    const int64_t n = std::min(kScratchRows, rows - r0);
    const size_t bytes = n * width * kFloat;
    ABSL_RETURN_IF_ERROR(in_backend ? backend_->Copy(in.data(), taps + r0 * width, bytes)
                                    : backend_->Upload(in, 0, taps + r0 * width, bytes));
    if (form == TapForm::kRaw) ABSL_RETURN_IF_ERROR(FuseLocked(n));
    ABSL_RETURN_IF_ERROR(AppendFusedLocked(stream, n));
  }
  return absl::OkStatus();
}

engine::TapFusionWeights DrafterModel::FusionWeights() const {
  const int64_t h = config_.hidden_size;
  return {device_.fc.get(), device_.hidden_norm->floats(), config_.rms_norm_eps,
          config_.num_taps() * h, h};
}

absl::Status DrafterModel::FuseLocked(int64_t rows) const {
  return engine::FuseTapRows(*backend_, FusionWeights(), scratch_.raw->floats(), rows,
                             scratch_.fused->floats());
}

absl::Status DrafterModel::AppendFusedLocked(DraftStream& stream, int64_t rows) const {
  const std::vector<int64_t> positions = Positions(stream.context_length_, rows);
  ABSL_RETURN_IF_ERROR(UploadAngles(positions));
  const int64_t kv_width = config_.num_kv_heads * config_.head_dim;
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    // The context is not layer-normed: each layer projects the same fused rows.
    ABSL_RETURN_IF_ERROR(ProjectKv(device_.layers[l], scratch_.fused->floats(), rows));
    ABSL_RETURN_IF_ERROR(backend_->KvWrite(*stream.layers_[l], positions, scratch_.k->floats(),
                                           kv_width, scratch_.v->floats(), kv_width));
  }
  stream.context_length_ += rows;
  return absl::OkStatus();
}

absl::Status DrafterModel::UploadAngles(std::span<const int64_t> positions) const {
  const int64_t rows = static_cast<int64_t>(positions.size()), half = config_.head_dim / 2;
  std::vector<float> cos(rows * half), sin(rows * half);
  ABSL_RETURN_IF_ERROR(cpu::RopeAngles(positions.data(), rows, config_.head_dim, config_.rope_theta,
                                       cos.data(), sin.data()));
  ABSL_RETURN_IF_ERROR(backend_->Upload(*scratch_.cos, 0, cos.data(), cos.size() * kFloat));
  return backend_->Upload(*scratch_.sin, 0, sin.data(), sin.size() * kFloat);
}

absl::Status DrafterModel::ProjectKv(const DeviceLayer& layer, const float* x, int64_t rows,
                                     float* q) const {
  const int64_t h = config_.hidden_size, d = config_.head_dim, nkv = config_.num_kv_heads;
  float* k = scratch_.k->floats();
  // q, k, v of one input: a device backend may run them in one launch.
  const backend::LinearOutput qkv[] = {{layer.q_proj.get(), q, config_.num_heads * d},
                                       {layer.k_proj.get(), k, nkv * d},
                                       {layer.v_proj.get(), scratch_.v->floats(), nkv * d}};
  ABSL_RETURN_IF_ERROR(backend_->Linears(
      x, h, rows, q != nullptr ? absl::MakeConstSpan(qkv) : absl::MakeConstSpan(qkv + 1, 2)));
  ABSL_RETURN_IF_ERROR(
      backend_->RmsNorm(k, d, rows * nkv, d, layer.k_norm->floats(), config_.rms_norm_eps, k, d));
  return backend_->Rope(k, nkv * d, rows, nkv, d, d, scratch_.cos->floats(),
                        scratch_.sin->floats());
}

}  // namespace twinspan::drafter
