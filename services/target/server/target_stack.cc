#include "services/target/server/target_stack.h"

#include <algorithm>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "kernels/cpu/parallel.h"
#include "services/device/device_backend.h"
#include "services/draft_link/checkpoint_fingerprint.h"
#include "services/draft_link/tap_fuser.h"
#include "services/structured/grammar_constraint.h"
#include "services/target/engine/draft_window.h"
#include "services/target/engine/in_process_draft_channel.h"
#include "services/target/prefix_cache.h"
#include "services/target/server/grpc_draft_channel.h"
#include "services/target/server/keyed_token_sampler.h"
#include "services/target/server/target_verifier.h"
#include "services/target/server/tokenizer_codec.h"
#include "services/target/target_model.h"
#include "spdlog/spdlog.h"

namespace twinspan::serving {
namespace {

// Drafts a verify window may carry: the 127-node trees a drafter builds at most, plus room.
constexpr int kMaxDraftNodes = 127;

// --context, or by default as many positions as the model was trained for, at most
// kDefaultContext; past max_position_embeddings the rotary positions were never trained.
absl::StatusOr<int64_t> StreamContext(const TargetStackOptions& o) {
  ABSL_ASSIGN_OR_RETURN(const target::TargetConfig config, target::LoadTargetConfig(o.model_dir));
  const int64_t trained = config.max_position_embeddings;
  if (o.context == 0) return trained > 0 ? std::min(kDefaultContext, trained) : kDefaultContext;
  if (trained > 0 && o.context > trained) {
    spdlog::warn("target: --context {} is past {}'s max_position_embeddings {}", o.context,
                 o.model_dir, trained);
  }
  return o.context;
}

}  // namespace

struct TargetStack::Parts {
  std::unique_ptr<cpu::ThreadPool> pool;
  std::unique_ptr<structured::GrammarCompiler> grammar;
  std::unique_ptr<backend::Backend> backend;  // The model's; after the pool, before the model.
  std::unique_ptr<device::LogitsSampler> logits_sampler;  // null on the CPU
  std::unique_ptr<target::TargetModel> model;
  std::unique_ptr<target::PrefixCache> prefix_cache;  // of `model`; before the verifier
  std::unique_ptr<TokenizerCodec> codec;
  // On `backend`; before the channel and the verifier, which point at it.
  std::unique_ptr<engine::TapFuser> fuser;
  std::unique_ptr<TargetVerifier> verifier;
  std::unique_ptr<engine::TokenSampler> sampler;
  std::unique_ptr<engine::DraftModel> draft_model;
  std::unique_ptr<engine::InProcessDraftChannel> in_process;
  std::unique_ptr<rpc::GrpcDraftChannel> grpc;
};

absl::StatusOr<std::unique_ptr<TargetStack>> TargetStack::Open(const TargetStackOptions& o,
                                                               metrics::ServingMetrics* metrics,
                                                               DraftModelOpener open_drafter) {
  if (!o.drafter_address.empty() && !o.drafter_model_dir.empty()) {
    return absl::InvalidArgumentError("target: give --drafter or --drafter-model, not both");
  }
  if ((!o.fuse_taps_drafter_dir.empty() || o.bf16_taps) && o.drafter_address.empty()) {
    return absl::InvalidArgumentError(
        "target: --fuse-taps and --bf16-taps shape the taps sent to a --drafter (split mode)");
  }
  if ((o.context != 0 && o.context < 2) || o.threads < 0 || o.prefill_chunk_rows < 1) {
    return absl::InvalidArgumentError(
        "target: --context 0 (the model's) or >= 2, --threads >= 0, chunk rows >= 1");
  }
  ABSL_ASSIGN_OR_RETURN(const int64_t context, StreamContext(o));
  if (o.prefix_cache_mb < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("target: --prefix-cache-mb ", o.prefix_cache_mb, " is negative"));
  }
  const int64_t prefix_cache_bytes = o.prefix_cache_mb << 20;
  const target::PrefixCacheOptions prefix_options{o.prefix_block_tokens,
                                                  static_cast<size_t>(prefix_cache_bytes)};
  ABSL_RETURN_IF_ERROR(prefix_options.Validate());
  ABSL_ASSIGN_OR_RETURN(const device::DeviceSpec device,
                        device::DeviceSpec::Parse(o.device, "--device"));
  // A CPU verify pays for each row; on a GPU extra rows cost little (docs/perf.md).
  const std::string window = o.draft_window != "auto" ? o.draft_window
                             : device.is_cuda()       ? "all"
                                                      : "adaptive";
  ABSL_ASSIGN_OR_RETURN(const engine::DraftWindowOptions draft_window,
                        engine::ParseDraftWindow(window));
  const std::string drafter_device = o.drafter_device.empty() ? o.device : o.drafter_device;
  if (!o.drafter_device.empty()) {
    if (o.drafter_model_dir.empty()) {
      return absl::InvalidArgumentError(
          "target: --drafter-device places the in-process drafter (--drafter-model)");
    }
    ABSL_RETURN_IF_ERROR(device::DeviceSpec::Parse(o.drafter_device, "--drafter-device").status());
  }
  auto stack = std::unique_ptr<TargetStack>(new TargetStack());
  stack->parts_ = std::make_unique<Parts>();
  Parts& p = *stack->parts_;
  const int threads = cpu::ThreadCount(o.threads);
  p.pool = std::make_unique<cpu::ThreadPool>(threads);
  ABSL_ASSIGN_OR_RETURN(p.backend, device::OpenBackend(device, p.pool.get()));
  ABSL_ASSIGN_OR_RETURN(p.logits_sampler, device::OpenLogitsSampler(device));
  target::TargetOptions topt;
  topt.backend = p.backend.get();
  topt.context = context;
  topt.drafter_configured = !o.drafter_address.empty() || !o.drafter_model_dir.empty();
  ABSL_ASSIGN_OR_RETURN(p.model, target::OpenTargetModel(o.model_dir, topt));
  if (prefix_cache_bytes > 0) {
    ABSL_ASSIGN_OR_RETURN(p.prefix_cache, target::PrefixCache::Create(*p.model, prefix_options));
  }
  ABSL_ASSIGN_OR_RETURN(p.codec, TokenizerCodec::Open(o.model_dir));
  if (p.codec->tokenizer().vocab_size() > p.model->config().vocab_size) {
    // Ids past the embedding would be refused in every request that produced them.
    return absl::InvalidArgumentError(absl::StrCat(
        o.model_dir, "/tokenizer.json has ", p.codec->tokenizer().vocab_size(),
        " token ids, more than the vocab_size ", p.model->config().vocab_size, " of ", o.model_dir,
        "/config.json: the tokenizer belongs to another model; put the checkpoint's "
        "own tokenizer.json beside it"));
  }
  ABSL_ASSIGN_OR_RETURN(std::string fingerprint, engine::CheckpointFingerprint(o.model_dir));

  const target::TargetConfig& config = p.model->config();
  engine::VerifierInfo info;
  info.model_name = std::filesystem::path(o.model_dir).filename().string();
  info.model_type = config.model_type;
  info.vocab_size = static_cast<int>(config.vocab_size);
  info.max_context = context;
  for (int64_t id : config.eos_token_ids) info.eos_ids.push_back(static_cast<uint32_t>(id));
  info.hidden_size = static_cast<int>(config.hidden_size);
  info.num_layers = static_cast<int>(config.num_layers);
  info.checkpoint_fingerprint = fingerprint;
  info.backend = p.backend->name();
  TargetVerifierOptions vopt;
  vopt.prefill_chunk_rows = o.prefill_chunk_rows;
  vopt.sampler = p.logits_sampler.get();
  vopt.prefix_cache = p.prefix_cache.get();
  p.sampler = MakeKeyedTokenSampler();

  engine::DraftChannel* channel = nullptr;
  if (!o.drafter_model_dir.empty()) {
    if (open_drafter == nullptr) {
      return absl::FailedPreconditionError("target: built without the in-process drafter");
    }
    // The drafter holds the stream's committed rows plus one block of scratch.
    constexpr int64_t kBlockRoom = 16;
    ABSL_ASSIGN_OR_RETURN(
        p.draft_model, open_drafter(o.drafter_model_dir, o.model_dir, o.head_variant,
                                    context + kBlockRoom, threads, drafter_device,
                                    prefix_cache_bytes, o.prefix_block_tokens, o.draft_tree_nodes));
    const engine::DrafterInfo& d = p.draft_model->info();
    if (d.vocab_size != info.vocab_size || d.tokenizer_sha256 != p.codec->sha256() ||
        d.target_fingerprint != fingerprint) {
      return absl::FailedPreconditionError(absl::StrCat(
          "target: drafter ", o.drafter_model_dir, " was built for another checkpoint (vocab ",
          d.vocab_size, " vs ", info.vocab_size, ", fingerprint ", d.target_fingerprint, " vs ",
          fingerprint, ")"));
    }
    p.in_process = std::make_unique<engine::InProcessDraftChannel>(p.draft_model.get());
    channel = p.in_process.get();
  } else if (!o.drafter_address.empty()) {
    rpc::GrpcDraftChannelOptions copt;
    copt.address = o.drafter_address;
    copt.security = o.drafter_security;
    copt.target_name = o.name;
    copt.vocab_size = info.vocab_size;
    copt.tokenizer_sha256 = p.codec->sha256();
    copt.target_fingerprint = fingerprint;
    copt.hidden_size = info.hidden_size;
    copt.num_layers = info.num_layers;
    copt.max_tree_nodes = kMaxDraftNodes;  // TargetVerifier verifies trees on every backend.
    copt.max_message_bytes = o.max_message_bytes;
    copt.bf16_taps = o.bf16_taps;
    if (!o.fuse_taps_drafter_dir.empty()) {
      // On the model's backend: the verifier fuses the kept rows where they were computed.
      ABSL_ASSIGN_OR_RETURN(p.fuser,
                            engine::TapFuser::Open(o.fuse_taps_drafter_dir, p.backend.get()));
      if (p.fuser->raw_width() % info.hidden_size != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "target: --fuse-taps ", o.fuse_taps_drafter_dir, ": fc reads ", p.fuser->raw_width(),
            " floats a row, not a multiple of this target's hidden size ", info.hidden_size));
      }
      copt.fusion = p.fuser.get();
      vopt.fuser = p.fuser.get();
    }
    p.grpc = rpc::GrpcDraftChannel::Start(copt);
    channel = p.grpc.get();
  }
  p.verifier = std::make_unique<TargetVerifier>(p.model.get(), info, vopt);

  engine::EngineOptions eopt;
  eopt.parallel = o.parallel;
  eopt.max_waiting = o.max_waiting;
  eopt.max_prompt_tokens = o.max_prompt_tokens;
  eopt.max_tokens_limit = o.max_tokens_limit;
  eopt.draft_timeout = o.draft_timeout;
  eopt.draft_window = draft_window;
  eopt.max_draft_nodes = kMaxDraftNodes;
  eopt.name = o.name;
  eopt.context_copy_ngram = o.context_copy_ngram;
  eopt.context_copy_max_tokens = o.context_copy_max_tokens;
  ABSL_ASSIGN_OR_RETURN(
      stack->engine_,
      engine::LaneEngine::Start(eopt, p.verifier.get(), p.sampler.get(), channel, metrics));
  TargetBackendOptions bopt;
  bopt.name = o.name;
  bopt.log_prompts = o.log_prompts;
  bopt.limits.default_max_tokens = o.default_max_tokens;
  bopt.limits.max_prompt_tokens = o.max_prompt_tokens;
  bopt.limits.max_tokens_limit = o.max_tokens_limit;
  // Structured output walks the bytes of every id a grammar can produce (special tokens never).
  std::vector<std::optional<std::string>> token_bytes(info.vocab_size);
  const tokenizer::Tokenizer& tok = p.codec->tokenizer();
  for (int32_t id = 0; id < info.vocab_size; ++id) {
    if (tok.IsSpecial(id)) continue;
    if (std::optional<std::string_view> b = tok.TokenBytes(id)) token_bytes[id] = std::string(*b);
  }
  p.grammar = std::make_unique<structured::GrammarCompiler>(
      std::make_shared<structured::VocabTrie>(token_bytes), info.eos_ids);
  stack->backend_ =
      std::make_unique<TargetBackend>(stack->engine_.get(), p.codec.get(), bopt, p.grammar.get());
  spdlog::info(
      "{}: {} ({}), vocab {}, context {}, parallel {}, threads {}, backend {}, sampling on {}, "
      "draft window {}, prefix cache {} MiB in blocks of {} tokens, drafter {}",
      o.name, o.model_dir, config.model_type, info.vocab_size, context, o.parallel, threads,
      p.backend->name(), p.logits_sampler != nullptr ? p.backend->name() : "the host",
      engine::DraftWindowName(draft_window), o.prefix_cache_mb, o.prefix_block_tokens,
      !o.drafter_address.empty()     ? o.drafter_address
      : !o.drafter_model_dir.empty() ? absl::StrCat("in-process on ", drafter_device)
                                     : std::string("none"));
  return stack;
}

TargetStack::~TargetStack() {
  backend_.reset();
  engine_.reset();  // joins the round loop before the channel and models go
  parts_.reset();
}

bool TargetStack::WaitDrafter(absl::Duration timeout) {
  if (parts_->grpc == nullptr) return true;
  return parts_->grpc->WaitReady(timeout);
}

}  // namespace twinspan::serving
