#include "services/target/server/target_backend.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/error_reason.h"
#include "common/hash/sha256.h"
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
  // `end_ids`: the ids that end the stream (EOS unless ignored, stop ids); their text is not
  // part of the completion (as OpenAI and vLLM leave it out).
  ReplySink(std::shared_ptr<rpc::GenerateWriter> writer, std::unique_ptr<engine::TextStream> text,
            std::vector<std::string> stops, std::string request_id, std::string served_by,
            std::vector<uint32_t> end_ids)
      : end_ids_(std::move(end_ids)),
        writer_(std::move(writer)),
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
      if (std::find(end_ids_.begin(), end_ids_.end(), id) != end_ids_.end()) continue;
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
    f->set_cached_prompt_tokens(static_cast<uint32_t>(summary->cached_prompt_tokens));
    f->set_context_copy_drafted(static_cast<uint64_t>(summary->context_copy_drafted));
    f->set_context_copy_accepted(static_cast<uint64_t>(summary->context_copy_accepted));
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
  const std::vector<uint32_t> end_ids_;
  std::shared_ptr<rpc::GenerateWriter> writer_;
  std::unique_ptr<engine::TextStream> text_;
  StopMatcher stops_;
  std::string request_id_;
  std::string served_by_;
  bool stopped_ = false;
};

}  // namespace

RequestLimits TargetBackend::limits() const {
  const engine::VerifierInfo& info = engine_->model().info();
  RequestLimits l = options_.limits;
  l.vocab_size = info.vocab_size;
  l.max_context = info.max_context;
  return l;
}

absl::Status TargetBackend::Constrain(const v1::GenerateRequest& request,
                                      engine::EngineRequest* r) const {
  if (!request.has_structured_output()) return absl::OkStatus();
  const v1::StructuredOutput& so = request.structured_output();
  structured::GrammarSpec spec;
  switch (so.kind_case()) {
    case v1::StructuredOutput::kJsonSchema:
      spec = {structured::GrammarKind::kJsonSchema, so.json_schema()};
      break;
    case v1::StructuredOutput::kRegex:
      spec = {structured::GrammarKind::kRegex, so.regex()};
      break;
    case v1::StructuredOutput::kGrammar:
      spec = {structured::GrammarKind::kGbnf, so.grammar()};
      break;
    case v1::StructuredOutput::KIND_NOT_SET:
      return absl::InvalidArgumentError(
          "request: structured_output sets none of json_schema, regex or grammar");
  }
  if (grammar_ == nullptr) {
    return absl::FailedPreconditionError("request: this server has no structured output");
  }
  if (r->ignore_eos) {
    return absl::InvalidArgumentError(
        "request: ignore_eos cannot be combined with structured_output (the grammar ends the "
        "output with EOS)");
  }
  if (spec.text.size() > static_cast<size_t>(options_.limits.max_grammar_bytes)) {
    return WithErrorReason(absl::ResourceExhaustedError(absl::StrCat(
                               "request: structured_output has ", spec.text.size(),
                               " bytes (limit ", options_.limits.max_grammar_bytes, ")")),
                           {"", "structured_output"});
  }
  absl::StatusOr<std::unique_ptr<engine::TokenConstraint>> constraint =
      grammar_->Compile(spec, r->stop_token_ids);
  if (!constraint.ok()) return constraint.status();
  r->constraint = *std::move(constraint);
  return absl::OkStatus();
}

void TargetBackend::Generate(const v1::GenerateRequest& request, const rpc::CallInfo& call,
                             std::shared_ptr<rpc::GenerateWriter> writer) {
  absl::StatusOr<engine::EngineRequest> r = ParseGenerateRequest(request, call, *codec_, limits());
  if (r.ok()) {
    if (absl::Status s = Constrain(request, &*r); !s.ok()) r = s;
  }
  if (!r.ok()) {
    const bool quotes_messages = absl::StartsWith(r.status().message(), kChatTemplateRefusal);
    spdlog::info("[{}] refused: {}", call.request_id,
                 quotes_messages && !options_.log_prompts
                     ? absl::StrCat(absl::StatusCodeToString(r.status().code()), ": ",
                                    kChatTemplateRefusal, "(not logged without --log-prompts)")
                     : r.status().ToString());
    writer->Finish(r.status());
    return;
  }
  if (options_.log_prompts) {
    std::string text;
    std::unique_ptr<engine::TextStream> stream = codec_->NewStream();
    for (uint32_t id : r->prompt_ids) {
      absl::StatusOr<std::string> piece = stream->Add({id});
      if (piece.ok()) text += *piece;
    }
    text += stream->Finish();
    spdlog::info("[{}] prompt (--log-prompts): \"{}\"", call.request_id, absl::CHexEscape(text));
  }
  spdlog::info("[{}] {} prompt tokens, max_tokens {}, temperature {}, seed {}, draft {}{}",
               call.request_id, r->prompt_ids.size(), r->max_tokens, r->sampling.temperature,
               r->sampling.seed, r->draft, r->constraint != nullptr ? ", structured output" : "");
  std::vector<uint32_t> end_ids = r->stop_token_ids;
  if (!r->ignore_eos) {
    const std::vector<uint32_t>& eos = engine_->model().info().eos_ids;
    end_ids.insert(end_ids.end(), eos.begin(), eos.end());
  }
  auto sink = std::make_shared<ReplySink>(
      writer, codec_->NewStream(),
      std::vector<std::string>(request.sampling().stop().begin(), request.sampling().stop().end()),
      call.request_id, options_.name, std::move(end_ids));
  absl::Status submitted = engine_->Submit(*std::move(r), sink);
  if (!submitted.ok()) {
    spdlog::info("[{}] refused: {}", call.request_id, submitted.ToString());
    writer->Finish(submitted);
  }
}

absl::StatusOr<v1::TokenizeResponse> TargetBackend::Tokenize(const v1::TokenizeRequest& request) {
  return ParseTokenizeRequest(request, *codec_, limits());
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
  r.set_backend(info.backend);
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
