#include "services/drafter/server/drafter_adapter.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/hash/sha256.h"
#include "common/status.h"
#include "kernels/cpu/parallel.h"
#include "services/device/device_backend.h"
#include "services/draft_link/checkpoint_fingerprint.h"
#include "services/drafter/draft_prefix_cache.h"
#include "services/drafter/drafter.h"

namespace twinspan::serving {
namespace {

class AdapterSession : public engine::DraftSession {
 public:
  // `cache` may be null (no prefix cache).
  AdapterSession(const drafter::Drafter* drafter, drafter::DraftPrefixCache* cache,
                 std::unique_ptr<drafter::DraftStream> stream, int tree_nodes)
      : drafter_(drafter), cache_(cache), stream_(std::move(stream)), tree_nodes_(tree_nodes) {}

  absl::StatusOr<engine::DraftProposal> Open(absl::Span<const uint32_t> prompt_ids,
                                             const engine::TapRows& taps,
                                             uint32_t pending) override {
    const std::span<const uint32_t> prompt(prompt_ids.data(), prompt_ids.size());
    const int64_t n = static_cast<int64_t>(prompt_ids.size());
    if (taps.first_row < 0 || taps.first_row + taps.rows != n) {
      return absl::InvalidArgumentError(absl::StrCat("drafter: tap rows [", taps.first_row, ", ",
                                                     taps.first_row + taps.rows, ") for ", n,
                                                     " prompt ids"));
    }
    if (cache_ != nullptr) {
      ABSL_ASSIGN_OR_RETURN(resumed_, cache_->Resume(*stream_, prompt));
    }
    if (resumed_ < taps.first_row) {
      return absl::FailedPreconditionError(absl::StrCat(
          "drafter: the target resumed ", taps.first_row,
          " prompt rows from its prefix cache but this drafter's cache holds ", resumed_,
          " of them (give it a --prefix-cache-mb that holds at least the target's rows); the "
          "stream decodes without drafts"));
    }
    // Rows the drafter resumed beyond the target's need no taps.
    const int64_t skip = resumed_ - taps.first_row;
    engine::TapRows rest = taps;
    rest.rows = taps.rows - skip;
    rest.data = taps.data.subspan(static_cast<size_t>(skip * taps.width));
    ABSL_RETURN_IF_ERROR(Append(rest));
    if (cache_ != nullptr) ABSL_RETURN_IF_ERROR(cache_->Store(*stream_, prompt));
    return Propose(pending);
  }
  absl::StatusOr<engine::DraftProposal> Commit(absl::Span<const uint32_t> ids,
                                               const engine::TapRows& taps,
                                               uint32_t pending) override {
    if (taps.rows != static_cast<int64_t>(ids.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("drafter: ", taps.rows, " tap rows for ", ids.size(), " ids"));
    }
    ABSL_RETURN_IF_ERROR(Append(taps));
    return Propose(pending);
  }

  int64_t resumed_rows() const override { return resumed_; }

 private:
  absl::Status Append(const engine::TapRows& taps) {
    // Fused rows arrive already through fc + hidden_norm (the target applied them).
    return drafter_->AppendTaps(
        *stream_, taps.fused ? drafter::TapForm::kFused : drafter::TapForm::kRaw,
        std::span<const float>(taps.data.data(), taps.data.size()), taps.rows);
  }

  absl::StatusOr<engine::DraftProposal> Propose(uint32_t pending) {
    drafter::ProposeOptions options;  // greedy, the checkpoint's block size
    options.tree_nodes = tree_nodes_;
    ABSL_ASSIGN_OR_RETURN(drafter::Proposal proposal,
                          drafter_->Propose(*stream_, static_cast<int32_t>(pending), options));
    engine::DraftProposal out;
    out.ids.assign(proposal.ids.begin(), proposal.ids.end());
    out.parents.assign(proposal.tree_parents.begin(), proposal.tree_parents.end());
    return out;
  }

  const drafter::Drafter* drafter_;
  drafter::DraftPrefixCache* cache_;
  std::unique_ptr<drafter::DraftStream> stream_;
  int64_t resumed_ = 0;
  const int tree_nodes_;
};

class DrafterAdapter : public engine::DraftModel {
 public:
  DrafterAdapter(std::unique_ptr<cpu::ThreadPool> pool, std::unique_ptr<backend::Backend> backend,
                 std::unique_ptr<drafter::Drafter> drafter,
                 std::unique_ptr<drafter::DraftPrefixCache> cache, engine::DrafterInfo info)
      : pool_(std::move(pool)),
        backend_(std::move(backend)),
        drafter_(std::move(drafter)),
        cache_(std::move(cache)),
        info_(std::move(info)) {}

  const engine::DrafterInfo& info() const override { return info_; }
  absl::StatusOr<std::unique_ptr<engine::DraftSession>> NewSession() const override {
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<drafter::DraftStream> stream, drafter_->NewStream());
    return std::make_unique<AdapterSession>(drafter_.get(), cache_.get(), std::move(stream),
                                            info_.tree_nodes);
  }
  engine::PrefixCacheUse prefix_cache_use() const override {
    if (cache_ == nullptr) return {};
    const prefix::PrefixTreeStats stats = cache_->stats();
    return engine::PrefixCacheUse{stats.bytes, stats.blocks};
  }

 private:
  std::unique_ptr<cpu::ThreadPool> pool_;      // before drafter_: outlives it
  std::unique_ptr<backend::Backend> backend_;  // a device backend (null on the CPU), likewise
  std::unique_ptr<drafter::Drafter> drafter_;
  std::unique_ptr<drafter::DraftPrefixCache> cache_;  // after drafter_: its blocks go first
  engine::DrafterInfo info_;
};

absl::StatusOr<std::string> FileSha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("drafter: cannot read ", path));
  std::stringstream bytes;
  bytes << in.rdbuf();
  return hash::Sha256Hex(bytes.str());
}

// One block drafted on a fresh stream: a device backend that lacks one of the drafter's ops
// says so here, once, rather than on every stream.
absl::Status DraftOneBlock(const drafter::Drafter& d, const std::string& device) {
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<drafter::DraftStream> stream, d.NewStream());
  const drafter::DrafterConfig& c = d.config();
  const std::vector<float> raw(static_cast<size_t>(c.num_taps() * c.hidden_size), 0.0f);
  absl::Status status = d.AppendTaps(*stream, drafter::TapForm::kRaw,
                                     std::span<const float>(raw.data(), raw.size()), 1);
  if (status.ok()) status = d.Propose(*stream, 0, drafter::ProposeOptions{}).status();
  if (status.ok()) return status;
  return absl::FailedPreconditionError(
      absl::StrCat("drafter on --device ", device, " cannot draft a block: ", status.message(),
                   "; run the drafter with --device cpu until its ops exist there"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<engine::DraftModel>> OpenDrafterAdapter(
    const DrafterAdapterOptions& o) {
  ABSL_ASSIGN_OR_RETURN(const device::DeviceSpec spec,
                        device::DeviceSpec::Parse(o.device, "--device"));
  if (o.threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--threads %d: 0 (every hardware thread) or more", o.threads));
  }
  std::unique_ptr<cpu::ThreadPool> pool;
  std::unique_ptr<backend::Backend> backend;
  drafter::DrafterOptions options;
  if (spec.is_cuda()) {
    ABSL_ASSIGN_OR_RETURN(backend, device::OpenBackend(spec, nullptr));
    options.model.backend = backend.get();
  } else {  // The model makes its CPU backend over the pool, as it always has.
    pool = std::make_unique<cpu::ThreadPool>(cpu::ThreadCount(o.threads));
    options.model.pool = pool.get();
  }
  options.model.context = o.context;
  if (o.drafter_bits != 16 && o.drafter_bits != 4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--drafter-bits %d: 16 (as stored) or 4 (Q4)", o.drafter_bits));
  }
  options.model.linear_bits =
      o.drafter_bits == 4 ? drafter::LinearBits::kQ4 : drafter::LinearBits::kAsStored;
  options.head = o.head_variant;
  if (o.tree_nodes != DrafterAdapterOptions::kAutoTreeNodes &&
      (o.tree_nodes < 0 || o.tree_nodes > drafter::kMaxTreeNodes)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--draft-tree-nodes %d: 0 (chains) up to %d drafts a tree", o.tree_nodes,
                        drafter::kMaxTreeNodes));
  }
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<drafter::Drafter> d,
                        drafter::Drafter::Open(o.drafter_dir, o.target_dir, options));
  if (spec.is_cuda()) ABSL_RETURN_IF_ERROR(DraftOneBlock(*d, spec.ToString()));
  engine::DrafterInfo info;
  const drafter::DrafterConfig& c = d->config();
  info.block_size = static_cast<int>(c.block_size);
  info.head_variant = o.head_variant;
  info.vocab_size = static_cast<int>(c.vocab_size);
  ABSL_ASSIGN_OR_RETURN(
      info.tokenizer_sha256,
      FileSha256((std::filesystem::path(o.target_dir) / "tokenizer.json").string()));
  ABSL_ASSIGN_OR_RETURN(info.target_fingerprint, engine::CheckpointFingerprint(o.target_dir));
  info.target_layer_ids = c.target_layer_ids;
  info.tap_width = static_cast<int>(c.num_taps() * c.hidden_size);
  info.fused_width = static_cast<int>(c.hidden_size);
  ABSL_ASSIGN_OR_RETURN(info.drafter_fingerprint, engine::CheckpointFingerprint(o.drafter_dir));
  info.max_streams = o.max_streams;
  info.max_context = o.context;
  std::unique_ptr<drafter::DraftPrefixCache> cache;
  if (o.prefix_cache_bytes > 0) {
    ABSL_ASSIGN_OR_RETURN(cache, drafter::DraftPrefixCache::Create(
                                     d->model(), prefix::PrefixTreeOptions{
                                                     o.prefix_block_tokens,
                                                     static_cast<size_t>(o.prefix_cache_bytes)}));
  }
  const bool dflash2 = c.kind == drafter::DrafterKind::kDFlash2;
  if (o.tree_nodes > 0 && !dflash2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--draft-tree-nodes ", o.tree_nodes, ": ", o.drafter_dir,
                     " is a DFlash drafter; trees are built from a DFlash2 selector's candidates "
                     "(use 0 for chains)"));
  }
  info.tree_nodes = o.tree_nodes == DrafterAdapterOptions::kAutoTreeNodes
                        ? (dflash2 ? DrafterAdapterOptions::kDefaultTreeNodes : 0)
                        : o.tree_nodes;
  return std::unique_ptr<engine::DraftModel>(new DrafterAdapter(
      std::move(pool), std::move(backend), std::move(d), std::move(cache), std::move(info)));
}

absl::StatusOr<std::unique_ptr<engine::DraftModel>> OpenInProcessDrafter(
    const std::string& drafter_dir, const std::string& target_dir, const std::string& head_variant,
    int64_t context, int threads, const std::string& device, int64_t prefix_cache_bytes,
    int64_t prefix_block_tokens, int tree_nodes) {
  DrafterAdapterOptions o;
  o.tree_nodes = tree_nodes;
  o.drafter_dir = drafter_dir;
  o.target_dir = target_dir;
  o.head_variant = head_variant;
  o.context = context;
  o.threads = threads;
  o.device = device;
  o.prefix_cache_bytes = prefix_cache_bytes;
  o.prefix_block_tokens = prefix_block_tokens;
  return OpenDrafterAdapter(o);
}

}  // namespace twinspan::serving
