#include "services/target/server/target_backend.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/hash/sha256.h"
#include "common/sampler/keyed_sampler.h"
#include "services/target/server/stop_matcher.h"
#include "spdlog/spdlog.h"

namespace twinspan::serving {
namespace {

v1::FinishReason ToProto(engine::FinishReason reason) {
  switch (reason) {
    case engine::FinishReason::kLength:
      return v1::FINISH_REASON_LENGTH;
    case engine::FinishReason::kEos:
      return v1::FINISH_REASON_EOS;
    case engine::FinishReason::kStop:
      return v1::FINISH_REASON_STOP;
    case engine::FinishReason::kAborted:
      return v1::FINISH_REASON_ABORTED;
    case engine::FinishReason::kContext:
      return v1::FINISH_REASON_CONTEXT;
  }
  return v1::FINISH_REASON_UNSPECIFIED;
}

}  // namespace

absl::StatusOr<std::string> TokenSha256(absl::Span<const uint32_t> ids) {
  std::string bytes;
  bytes.reserve(ids.size() * 4);
  for (uint32_t id : ids) {
    for (int shift = 0; shift < 32; shift += 8) bytes.push_back(static_cast<char>(id >> shift));
  }
  return hash::Sha256Hex(bytes);
}

namespace {

// Engine results -> reply messages: decodes text, applies stop strings, writes chunks and Final.
class ReplySink : public engine::StreamSink {
 public:
  ReplySink(std::shared_ptr<rpc::GenerateWriter> writer, std::unique_ptr<engine::TextStream> text,
            std::vector<std::string> stops, std::string request_id, std::string served_by)
      : writer_(std::move(writer)),
        text_(std::move(text)),
        stops_(std::move(stops)),
        request_id_(std::move(request_id)),
        served_by_(std::move(served_by)) {}

  engine::SinkVerdict OnTokens(absl::Span<const uint32_t> ids, uint32_t round) override {
    v1::GenerateResponse response;
    response.set_request_id(request_id_);
    v1::GenerateChunk* chunk = response.mutable_chunk();
    chunk->set_round(round);
    int keep = 0;
    for (uint32_t id : ids) {
      ++keep;
      chunk->add_ids(id);
      absl::StatusOr<std::string> piece = text_->Add({id});
      if (!piece.ok()) {  // an id the tokenizer does not know: keep the ids, say so in the log
        spdlog::warn("[{}] cannot decode id {}: {}", request_id_, id, piece.status().ToString());
        continue;
      }
      std::string released;
      const bool stopped = stops_.Add(*piece, &released);
      chunk->mutable_text()->append(released);
      if (stopped) {
        stopped_ = true;
        break;
      }
    }
    writer_->Write(std::move(response));
    return {keep, stopped_};
  }

  void OnFinish(absl::StatusOr<engine::StreamSummary> summary) override {
    if (!summary.ok()) {
      writer_->Finish(summary.status());
      return;
    }
    if (!stopped_) {
      std::string released;
      stops_.Add(text_->Finish(), &released);
      released += stops_.Flush();
      if (!released.empty()) {
        v1::GenerateResponse tail;
        tail.set_request_id(request_id_);
        tail.mutable_chunk()->set_text(released);
        tail.mutable_chunk()->set_round(static_cast<uint32_t>(summary->rounds));
        writer_->Write(std::move(tail));
      }
    }
    absl::StatusOr<std::string> digest = TokenSha256(summary->completion_ids);
    if (!digest.ok()) {
      writer_->Finish(digest.status());
      return;
    }
    v1::GenerateResponse response;
    response.set_request_id(request_id_);
    v1::GenerateFinal* f = response.mutable_final();
    f->set_token_sha256(*digest);
    f->set_prompt_tokens(summary->prompt_tokens);
    f->set_completion_tokens(static_cast<uint32_t>(summary->completion_ids.size()));
    f->set_drafted(summary->drafted);
    f->set_accepted(summary->accepted);
    f->set_rounds(summary->rounds);
    f->set_seed(summary->seed);
    f->set_head_variant(summary->head_variant);
    f->set_finish_reason(ToProto(summary->finish_reason));
    f->mutable_tokens_per_round()->Add(summary->tokens_per_round.begin(),
                                       summary->tokens_per_round.end());
    f->set_served_by(served_by_);
    f->set_draft_degraded(summary->draft_degraded);
    v1::Timings* t = f->mutable_timings();
    t->set_queue_seconds(summary->queue_seconds);
    t->set_prefill_seconds(summary->prefill_seconds);
    t->set_first_token_seconds(summary->first_token_seconds);
    t->set_total_seconds(summary->total_seconds);
    t->set_verify_seconds(summary->verify_seconds);
    t->set_draft_seconds(summary->draft_seconds);
    writer_->Write(std::move(response));
    writer_->Finish(absl::OkStatus());
  }

  bool Cancelled() const override { return writer_->Cancelled(); }

 private:
  std::shared_ptr<rpc::GenerateWriter> writer_;
  std::unique_ptr<engine::TextStream> text_;
  StopMatcher stops_;
  std::string request_id_;
  std::string served_by_;
  bool stopped_ = false;
};

absl::Status CheckRange(const char* name, float value, float lo, float hi) {
  if (!std::isfinite(value) || value < lo || value > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat("request: sampling.", name, " = ", value, " is outside [", lo, ", ", hi, "]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> TargetBackend::Render(const v1::ChatMessages& chat) const {
  if (chat.messages_size() == 0) return absl::InvalidArgumentError("request: chat has no messages");
  if (chat.messages_size() > options_.max_chat_messages) {
    return absl::ResourceExhaustedError(absl::StrCat("request: ", chat.messages_size(),
                                                     " chat messages (limit ",
                                                     options_.max_chat_messages, ")"));
  }
  std::vector<engine::ChatTurn> turns;
  for (const v1::ChatMessage& m : chat.messages()) {
    if (m.role().empty()) return absl::InvalidArgumentError("request: a chat message has no role");
    turns.push_back({m.role(), m.content()});
  }
  engine::ChatOptions options;
  options.add_generation_prompt = !chat.skip_generation_prompt();
  options.enable_thinking = !chat.disable_thinking();
  return codec_->RenderChat(turns, options);
}

absl::StatusOr<std::vector<uint32_t>> TargetBackend::PromptIds(const v1::GenerateRequest& request,
                                                               std::string* rendered) const {
  switch (request.input_case()) {
    case v1::GenerateRequest::kPrompt:
      if (static_cast<int64_t>(request.prompt().size()) > options_.max_text_bytes) {
        return absl::ResourceExhaustedError(absl::StrCat("request: prompt has ",
                                                         request.prompt().size(), " bytes (limit ",
                                                         options_.max_text_bytes, ")"));
      }
      return codec_->Encode(request.prompt(), /*parse_special=*/true);
    case v1::GenerateRequest::kPromptIds:
      return std::vector<uint32_t>(request.prompt_ids().ids().begin(),
                                   request.prompt_ids().ids().end());
    case v1::GenerateRequest::kChat: {
      absl::StatusOr<std::string> text = Render(request.chat());
      if (!text.ok()) return text.status();
      *rendered = *text;
      return codec_->Encode(*text, /*parse_special=*/true);
    }
    case v1::GenerateRequest::INPUT_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("request: set one of prompt, prompt_ids or chat");
}

absl::StatusOr<engine::EngineRequest> TargetBackend::MakeEngineRequest(
    const v1::GenerateRequest& request, const rpc::CallInfo& call) const {
  std::string rendered;
  absl::StatusOr<std::vector<uint32_t>> ids = PromptIds(request, &rendered);
  if (!ids.ok()) return ids.status();
  const v1::SamplingParams& p = request.sampling();
  engine::EngineRequest r;
  r.request_id = call.request_id;
  r.prompt_ids = *std::move(ids);
  if (absl::Status s = CheckRange("temperature", p.temperature(), 0.0f, 100.0f); !s.ok()) return s;
  if (absl::Status s = CheckRange("top_p", p.top_p(), 0.0f, 1.0f); !s.ok()) return s;
  if (absl::Status s = CheckRange("min_p", p.min_p(), 0.0f, 1.0f); !s.ok()) return s;
  const int vocab = engine_->model().info().vocab_size;
  if (p.top_k() > static_cast<uint32_t>(vocab)) {
    return absl::InvalidArgumentError(absl::StrCat("request: sampling.top_k ", p.top_k(),
                                                   " exceeds the vocabulary (", vocab, ")"));
  }
  r.sampling.temperature = p.temperature();
  r.sampling.top_k = static_cast<int>(p.top_k());
  r.sampling.top_p = p.top_p() == 0.0f ? 1.0f : p.top_p();
  r.sampling.min_p = p.min_p();
  r.sampling.seed =
      p.has_seed()
          ? p.seed().value()
          : sampler::SeedFromPrompt(std::vector<int32_t>(r.prompt_ids.begin(), r.prompt_ids.end()));
  r.max_tokens =
      p.max_tokens() == 0 ? options_.default_max_tokens : static_cast<int>(p.max_tokens());
  if (p.stop_size() > options_.max_stop_strings) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request: ", p.stop_size(), " stop strings (limit ", options_.max_stop_strings, ")"));
  }
  for (const std::string& stop : p.stop()) {
    if (stop.empty() || static_cast<int>(stop.size()) > options_.max_stop_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("request: a stop string has ", stop.size(),
                                                     " bytes (allowed 1..", options_.max_stop_bytes,
                                                     ")"));
    }
  }
  for (uint32_t id : p.stop_token_ids()) {
    if (id >= static_cast<uint32_t>(vocab)) {
      return absl::InvalidArgumentError(
          absl::StrCat("request: stop_token_id ", id, " is outside the vocabulary (", vocab, ")"));
    }
  }
  r.stop_token_ids.assign(p.stop_token_ids().begin(), p.stop_token_ids().end());
  r.ignore_eos = p.ignore_eos();
  r.draft = !p.has_draft() || p.draft().value();
  r.deadline = call.deadline;
  return r;
}

void TargetBackend::Generate(const v1::GenerateRequest& request, const rpc::CallInfo& call,
                             std::shared_ptr<rpc::GenerateWriter> writer) {
  absl::StatusOr<engine::EngineRequest> r = MakeEngineRequest(request, call);
  if (!r.ok()) {
    spdlog::info("[{}] refused: {}", call.request_id, r.status().ToString());
    writer->Finish(r.status());
    return;
  }
  spdlog::info("[{}] {} prompt tokens, max_tokens {}, temperature {}, seed {}, draft {}",
               call.request_id, r->prompt_ids.size(), r->max_tokens, r->sampling.temperature,
               r->sampling.seed, r->draft);
  auto sink = std::make_shared<ReplySink>(
      writer, codec_->NewStream(),
      std::vector<std::string>(request.sampling().stop().begin(), request.sampling().stop().end()),
      call.request_id, options_.name);
  absl::Status submitted = engine_->Submit(*std::move(r), sink);
  if (!submitted.ok()) {
    spdlog::info("[{}] refused: {}", call.request_id, submitted.ToString());
    writer->Finish(submitted);
  }
}

absl::StatusOr<v1::TokenizeResponse> TargetBackend::Tokenize(const v1::TokenizeRequest& request) {
  v1::TokenizeResponse response;
  absl::StatusOr<std::vector<uint32_t>> ids;
  if (request.has_chat()) {
    absl::StatusOr<std::string> text = Render(request.chat());
    if (!text.ok()) return text.status();
    response.set_rendered(*text);
    ids = codec_->Encode(*text, /*parse_special=*/true);
  } else {
    if (static_cast<int64_t>(request.text().size()) > options_.max_text_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("Tokenize: text has ", request.text().size(),
                                                       " bytes (limit ", options_.max_text_bytes,
                                                       ")"));
    }
    ids = codec_->Encode(request.text(), request.add_special_tokens());
  }
  if (!ids.ok()) return ids.status();
  response.mutable_ids()->Add(ids->begin(), ids->end());
  return response;
}

absl::StatusOr<v1::ModelInfoResponse> TargetBackend::ModelInfo() {
  const engine::VerifierInfo& info = engine_->model().info();
  v1::ModelInfoResponse r;
  r.set_model_name(info.model_name);
  r.set_model_type(info.model_type);
  r.set_vocab_size(info.vocab_size);
  r.set_max_context(static_cast<uint32_t>(info.max_context));
  r.set_tokenizer_sha256(codec_->sha256());
  r.set_checkpoint_fingerprint(info.checkpoint_fingerprint);
  r.mutable_eos_token_ids()->Add(info.eos_ids.begin(), info.eos_ids.end());
  const engine::EngineLoad load = engine_->load();
  r.set_max_parallel(load.parallel);
  r.set_drafter_connected(load.drafter_ready);
  r.set_head_variant("none");
  if (load.drafter_ready) {
    const engine::DrafterInfo peer = engine_->channel()->peer();
    r.set_block_size(peer.block_size);
    r.set_head_variant(peer.head_variant);
  }
  r.add_head_variants(r.head_variant());
  return r;
}

bool TargetBackend::Abort(const std::string& request_id) { return engine_->Abort(request_id); }

v1::GetLoadResponse TargetBackend::GetLoad() {
  const engine::EngineLoad load = engine_->load();
  v1::GetLoadResponse r;
  r.set_running(load.running);
  r.set_waiting(load.waiting);
  r.set_max_parallel(load.parallel);
  r.set_draining(load.draining);
  r.set_drafter_connected(load.drafter_ready);
  r.set_head_variant(load.drafter_ready ? engine_->channel()->peer().head_variant : "none");
  return r;
}

}  // namespace twinspan::serving
