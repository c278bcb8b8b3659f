#include "services/drafter/server/draft_request_handler.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/metrics/serving_metrics.h"
#include "services/draft_link/tap_wire.h"
#include "spdlog/spdlog.h"

namespace twinspan::rpc {
namespace {

// Targets older than the tap-form negotiation leave the fields unset: raw F32 rows.
v1::TapForm FormOf(v1::TapForm form) {
  return form == v1::TAP_FORM_UNSPECIFIED ? v1::TAP_FORM_RAW : form;
}
v1::DType DtypeOf(v1::DType dtype) {
  return dtype == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_F32 : dtype;
}

}  // namespace

absl::Status DraftRequestHandler::Handle(const v1::DraftRequest& request) {
  if (!greeted_ && !request.has_hello()) {
    return absl::FailedPreconditionError("drafter: the first message must be Hello");
  }
  switch (request.kind_case()) {
    case v1::DraftRequest::kHello:
      return Hello(request.hello());
    case v1::DraftRequest::kOpen:
      Open(request.open());
      return absl::OkStatus();
    case v1::DraftRequest::kCommit:
      Commit(request.commit());
      return absl::OkStatus();
    case v1::DraftRequest::kClose:
      Close(request.close().stream_id());
      return absl::OkStatus();
    case v1::DraftRequest::KIND_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("drafter: empty DraftRequest");
}

absl::Status DraftRequestHandler::Hello(const v1::Hello& hello) {
  const engine::DrafterInfo& info = model_->info();
  if (greeted_) return absl::FailedPreconditionError("drafter: Hello sent twice");
  if (hello.protocol() != v1::DRAFT_PROTOCOL_V1) {
    return absl::FailedPreconditionError(
        absl::StrCat("drafter: protocol ", hello.protocol(), " is not supported (want V1)"));
  }
  if (static_cast<int>(hello.vocab_size()) != info.vocab_size) {
    return absl::FailedPreconditionError(
        absl::StrCat("drafter: target vocab_size ", hello.vocab_size(),
                     " differs from the drafter's ", info.vocab_size));
  }
  if (hello.tokenizer_sha256() != info.tokenizer_sha256) {
    return absl::FailedPreconditionError(absl::StrCat(
        "drafter: target tokenizer sha256 ", hello.tokenizer_sha256(),
        " differs from the drafter's ", info.tokenizer_sha256, " (built for another tokenizer)"));
  }
  if (hello.target_fingerprint() != info.target_fingerprint) {
    return absl::FailedPreconditionError(absl::StrCat(
        "drafter: target checkpoint fingerprint ", hello.target_fingerprint(),
        " differs from the one this drafter was built for, ", info.target_fingerprint));
  }
  const v1::TapForm form = FormOf(hello.tap_form());
  const v1::DType dtype = DtypeOf(hello.tap_dtype());
  if (form != v1::TAP_FORM_RAW && form != v1::TAP_FORM_FUSED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "drafter: tap form ", v1::TapForm_Name(hello.tap_form()), " is not served (RAW or FUSED)"));
  }
  if (dtype != v1::DTYPE_F32 && dtype != v1::DTYPE_BF16) {
    return absl::FailedPreconditionError(absl::StrCat(
        "drafter: tap dtype ", v1::DType_Name(hello.tap_dtype()), " is not served (F32 or BF16)"));
  }
  if (form == v1::TAP_FORM_FUSED) {
    if (info.fused_width <= 0 || info.drafter_fingerprint.empty()) {
      return absl::FailedPreconditionError("drafter: this drafter does not take fused taps");
    }
    if (hello.drafter_fingerprint() != info.drafter_fingerprint) {
      return absl::FailedPreconditionError(absl::StrCat(
          "drafter: the target fuses taps with the fc + hidden_norm of drafter checkpoint ",
          hello.drafter_fingerprint().empty() ? "(none named)" : hello.drafter_fingerprint(),
          ", but this drafter's checkpoint fingerprint is ", info.drafter_fingerprint));
    }
  }
  form_ = form;
  dtype_ = dtype;
  greeted_ = true;
  spdlog::info("drafter: target {} ({}) connected, tap rows {} {}", hello.target_name(),
               options_.peer, v1::TapForm_Name(form_), v1::DType_Name(dtype_));
  v1::DraftReply reply;
  v1::HelloAck* ack = reply.mutable_hello_ack();
  ack->set_protocol(v1::DRAFT_PROTOCOL_V1);
  ack->set_vocab_size(info.vocab_size);
  ack->set_tokenizer_sha256(info.tokenizer_sha256);
  ack->set_target_fingerprint(info.target_fingerprint);
  ack->set_block_size(info.block_size);
  ack->set_head_variant(info.head_variant);
  ack->set_max_streams(options_.max_streams);
  for (int64_t id : info.target_layer_ids) ack->add_target_layer_ids(static_cast<uint32_t>(id));
  ack->set_tap_form(form_);
  ack->set_tap_dtype(dtype_);
  ack->set_drafter_fingerprint(info.drafter_fingerprint);
  ack->set_fused_width(static_cast<uint32_t>(std::max(0, info.fused_width)));
  // A target that verifies smaller trees (or chains only: 0) gets its part of each tree.
  max_tree_nodes_ = std::min<int64_t>(std::max(0, info.tree_nodes), hello.max_tree_nodes());
  ack->set_tree_nodes(static_cast<uint32_t>(max_tree_nodes_));
  if (info.tree_nodes > 0 && max_tree_nodes_ < info.tree_nodes) {
    spdlog::info("drafter: target {} verifies trees of at most {} drafts; proposals are cut to {}",
                 hello.target_name(), hello.max_tree_nodes(),
                 max_tree_nodes_ > 0 ? "that many" : "their main chain");
  }
  reply_(std::move(reply));
  return absl::OkStatus();
}

void DraftRequestHandler::Open(const v1::Open& open) {
  const uint64_t id = open.stream_id();
  if (sessions_.count(id) > 0) {
    return Error(
        id, 1, absl::AlreadyExistsError(absl::StrCat("drafter: stream ", id, " is already open")));
  }
  if (static_cast<int>(sessions_.size()) >= options_.max_streams) {
    return Error(id, 1,
                 absl::ResourceExhaustedError(absl::StrCat("drafter: ", sessions_.size(),
                                                           " streams open on this connection "
                                                           "(limit ",
                                                           options_.max_streams, ")")));
  }
  if (open.taps_first_row() > static_cast<uint32_t>(open.prompt_ids_size())) {
    return Error(id, 1,
                 absl::InvalidArgumentError(absl::StrCat("drafter: taps from prompt row ",
                                                         open.taps_first_row(), " of ",
                                                         open.prompt_ids_size())),
                 open.request_id());
  }
  absl::StatusOr<engine::TapRows> taps =
      Taps(open.tap_form(), open.prompt_taps(), open.prompt_ids_size() - open.taps_first_row());
  if (!taps.ok()) return Error(id, 1, taps.status(), open.request_id());
  taps->first_row = open.taps_first_row();
  absl::StatusOr<std::unique_ptr<engine::DraftSession>> session = model_->NewSession();
  if (!session.ok()) return Error(id, 1, session.status(), open.request_id());
  const absl::Time start = absl::Now();
  absl::StatusOr<engine::DraftProposal> ids =
      (*session)->Open(open.prompt_ids(), *taps, open.pending());
  if (!ids.ok()) return Error(id, 1, ids.status(), open.request_id());
  if (metrics_ != nullptr) {
    metrics_->RecordPrefixLookup("drafter", (*session)->resumed_rows());
    metrics_->SetPrefixCacheBytes("drafter", model_->prefix_cache_use().bytes);
  }
  const int64_t resumed = (*session)->resumed_rows();
  sessions_[id] = Stream{*std::move(session), 0, open.request_id()};
  AddOpen(1);
  spdlog::info("[{}] drafter: stream {} opened ({} prompt rows, {} resumed from its cache)",
               open.request_id(), id, open.prompt_ids_size(), resumed);
  Propose(id, 1, *std::move(ids), start);
}

void DraftRequestHandler::Commit(const v1::Commit& commit) {
  const uint64_t id = commit.stream_id();
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    return Error(id, commit.round() + 1,
                 absl::NotFoundError(absl::StrCat("drafter: stream ", id, " is not open")));
  }
  if (commit.round() != it->second.committed_round + 1) {  // stale or out of order
    return Error(id, commit.round() + 1,
                 absl::FailedPreconditionError(
                     absl::StrCat("drafter: commit for round ", commit.round(), " on stream ", id,
                                  " but round ", it->second.committed_round + 1, " was expected")));
  }
  absl::StatusOr<engine::TapRows> taps = Taps(commit.tap_form(), commit.taps(), commit.ids_size());
  if (!taps.ok()) return Error(id, commit.round() + 1, taps.status());
  const absl::Time start = absl::Now();
  absl::StatusOr<engine::DraftProposal> ids =
      it->second.session->Commit(commit.ids(), *taps, commit.pending());
  if (!ids.ok()) {
    const std::string request_id = it->second.request_id;
    sessions_.erase(it);  // its context is unknown now
    AddOpen(-1);
    return Error(id, commit.round() + 1, ids.status(), request_id);
  }
  it->second.committed_round = commit.round();
  Propose(id, commit.round() + 1, *std::move(ids), start);
}

void DraftRequestHandler::Close(uint64_t stream_id) {
  auto it = sessions_.find(stream_id);
  if (it == sessions_.end()) return;
  spdlog::debug("[{}] drafter: stream {} closed after round {}", it->second.request_id, it->first,
                it->second.committed_round);
  sessions_.erase(it);
  AddOpen(-1);
}

void DraftRequestHandler::CloseAll() {
  const int closed = static_cast<int>(sessions_.size());
  sessions_.clear();
  AddOpen(-closed);
}

absl::StatusOr<engine::TapRows> DraftRequestHandler::Taps(v1::TapForm form,
                                                          const v1::Tensor& tensor, size_t ids) {
  const engine::DrafterInfo& info = model_->info();
  if (FormOf(form) != form_) {
    return absl::InvalidArgumentError(absl::StrCat("taps: ", v1::TapForm_Name(FormOf(form)),
                                                   " rows on a link that agreed on ",
                                                   v1::TapForm_Name(form_)));
  }
  const bool fused = form_ == v1::TAP_FORM_FUSED;
  return DecodeTapRows(tensor, dtype_, ids, fused ? info.fused_width : info.tap_width, fused,
                       &taps_);
}

void DraftRequestHandler::Propose(uint64_t stream_id, uint32_t round, engine::DraftProposal ids,
                                  absl::Time start) {
  if (metrics_ != nullptr) {
    metrics_->RecordPropose(model_->info().head_variant,
                            absl::ToDoubleSeconds(absl::Now() - start));
  }
  v1::DraftReply reply;
  v1::Proposal* proposal = reply.mutable_proposal();
  proposal->set_stream_id(stream_id);
  proposal->set_round(round);
  if (ids.is_tree() && max_tree_nodes_ == 0) ids = ids.MainChain();
  if (ids.is_tree()) ids.Prune(static_cast<int64_t>(ids.ids.size()), max_tree_nodes_);
  proposal->mutable_ids()->Add(ids.ids.begin(), ids.ids.end());
  proposal->mutable_parents()->Add(ids.parents.begin(), ids.parents.end());
  reply_(std::move(reply));
}

void DraftRequestHandler::Error(uint64_t stream_id, uint32_t round, const absl::Status& status,
                                const std::string& request_id) {
  auto it = sessions_.find(stream_id);
  const std::string id = !request_id.empty()     ? request_id
                         : it != sessions_.end() ? it->second.request_id
                                                 : "-";
  spdlog::warn("[{}] drafter: stream {} round {}: {}", id, stream_id, round, status.ToString());
  if (metrics_ != nullptr) {
    metrics_->RecordDrafterStreamError(absl::StatusCodeToString(status.code()));
  }
  v1::DraftReply reply;
  v1::StreamError* error = reply.mutable_error();
  error->set_stream_id(stream_id);
  error->set_round(round);
  error->set_code(static_cast<int32_t>(status.code()));
  error->set_message(std::string(status.message()));
  reply_(std::move(reply));
}

void DraftRequestHandler::AddOpen(int delta) {
  if (open_streams_ == nullptr) return;
  const int open = open_streams_->fetch_add(delta) + delta;
  if (metrics_ != nullptr) metrics_->SetDrafterStreams(open);
}

}  // namespace twinspan::rpc
