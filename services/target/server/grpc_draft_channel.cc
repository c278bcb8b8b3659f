#include "services/target/server/grpc_draft_channel.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "grpcpp/grpcpp.h"
#include "services/draft_link/tap_wire.h"
#include "services/rpc/status_mapping.h"
#include "services/rpc/write_queue.h"
#include "spdlog/spdlog.h"
#include "twinspan/v1/drafter.grpc.pb.h"

namespace twinspan::rpc {

namespace {

// Why the drafter's answer to the tap form cannot be used ("" when it can).
std::string TapMismatch(const v1::HelloAck& ack, const GrpcDraftChannelOptions& want) {
  const v1::TapForm form = want.fusion != nullptr ? v1::TAP_FORM_FUSED : v1::TAP_FORM_RAW;
  const v1::DType dtype = want.bf16_taps ? v1::DTYPE_BF16 : v1::DTYPE_F32;
  // A drafter older than the negotiation leaves both unset and only ever takes raw F32 rows.
  const v1::TapForm got_form =
      ack.tap_form() == v1::TAP_FORM_UNSPECIFIED ? v1::TAP_FORM_RAW : ack.tap_form();
  const v1::DType got_dtype =
      ack.tap_dtype() == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_F32 : ack.tap_dtype();
  if (got_form != form || got_dtype != dtype) {
    return absl::StrCat("tap rows ", v1::TapForm_Name(form), "/", v1::DType_Name(dtype),
                        " were asked for, the drafter answered ", v1::TapForm_Name(got_form), "/",
                        v1::DType_Name(got_dtype));
  }
  if (want.fusion == nullptr) return "";
  if (ack.drafter_fingerprint() != want.fusion->drafter_fingerprint()) {
    return absl::StrCat("drafter checkpoint fingerprint ", ack.drafter_fingerprint(),
                        " != the fingerprint of the checkpoint the target fuses taps with, ",
                        want.fusion->drafter_fingerprint());
  }
  std::vector<int64_t> layers(ack.target_layer_ids().begin(), ack.target_layer_ids().end());
  if (layers != want.fusion->target_layer_ids() ||
      static_cast<int64_t>(ack.fused_width()) != want.fusion->fused_width() ||
      static_cast<int64_t>(layers.size()) * want.hidden_size != want.fusion->raw_width()) {
    return absl::StrCat("the drafter's taps (", layers.size(), " layers, fused width ",
                        ack.fused_width(), ") differ from the fusion's (",
                        want.fusion->target_layer_ids().size(), " layers, fused width ",
                        want.fusion->fused_width(), ")");
  }
  return "";
}

}  // namespace

absl::StatusOr<engine::DrafterInfo> AcceptHelloAck(const v1::HelloAck& ack,
                                                   const GrpcDraftChannelOptions& want) {
  std::string mismatch;
  if (static_cast<int>(ack.vocab_size()) != want.vocab_size) {
    mismatch = absl::StrCat("vocab_size ", ack.vocab_size(), " != target's ", want.vocab_size);
  } else if (ack.tokenizer_sha256() != want.tokenizer_sha256) {
    mismatch = absl::StrCat("tokenizer sha256 ", ack.tokenizer_sha256(), " != target's ",
                            want.tokenizer_sha256);
  } else if (ack.target_fingerprint() != want.target_fingerprint) {
    mismatch = absl::StrCat("checkpoint fingerprint ", ack.target_fingerprint(), " != target's ",
                            want.target_fingerprint);
  } else if (ack.block_size() < 2 || ack.block_size() > kMaxDraftBlockSize) {
    mismatch =
        absl::StrCat("block_size ", ack.block_size(), " outside [2, ", kMaxDraftBlockSize, "]");
  } else if (ack.target_layer_ids_size() == 0 || ack.target_layer_ids_size() > kMaxDraftTapLayers) {
    mismatch = absl::StrCat(ack.target_layer_ids_size(), " tap layers, outside [1, ",
                            kMaxDraftTapLayers, "]");
  } else {
    for (uint32_t layer : ack.target_layer_ids()) {
      if (want.num_layers > 0 && layer >= static_cast<uint32_t>(want.num_layers)) {
        mismatch = absl::StrCat("tap layer ", layer, " asked for; the target has ", want.num_layers,
                                " layers");
        break;
      }
    }
    if (mismatch.empty()) mismatch = TapMismatch(ack, want);
  }
  if (!mismatch.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("target refuses drafter at ", want.address, ": ", mismatch));
  }
  engine::DrafterInfo info;
  info.block_size = static_cast<int>(ack.block_size());
  info.head_variant = ack.head_variant();
  info.vocab_size = static_cast<int>(ack.vocab_size());
  info.tokenizer_sha256 = ack.tokenizer_sha256();
  info.target_fingerprint = ack.target_fingerprint();
  info.max_streams = static_cast<int>(ack.max_streams());
  for (uint32_t id : ack.target_layer_ids()) info.target_layer_ids.push_back(id);
  info.tap_width = static_cast<int>(info.target_layer_ids.size()) * want.hidden_size;
  info.fused_width = static_cast<int>(ack.fused_width());
  info.drafter_fingerprint = ack.drafter_fingerprint();
  info.tree_nodes = static_cast<int>(ack.tree_nodes());
  return info;
}

void DeliverToBox(const v1::DraftReply& reply, engine::ProposalBox* box) {
  if (reply.has_proposal()) {
    const v1::Proposal& p = reply.proposal();
    engine::DraftProposal proposal;
    proposal.ids.assign(p.ids().begin(), p.ids().end());
    proposal.parents.assign(p.parents().begin(), p.parents().end());
    box->Put(p.stream_id(), p.round(), std::move(proposal));
  } else if (reply.has_error()) {
    const v1::StreamError& e = reply.error();
    // A code outside the canonical set, or OK, is still an error of that stream.
    const int code = e.code();
    const absl::StatusCode status_code =
        code > 0 && code <= 16 ? static_cast<absl::StatusCode>(code) : absl::StatusCode::kUnknown;
    box->Put(e.stream_id(), e.round(),
             absl::Status(status_code, absl::StrCat("drafter: ", e.message())));
  }
}

// One Draft call. Lives from StartCall until OnDone, which reports to the channel and deletes it.
class GrpcDraftChannel::Link final
    : public grpc::ClientBidiReactor<v1::DraftRequest, v1::DraftReply> {
 public:
  Link(GrpcDraftChannel* owner, std::shared_ptr<grpc::Channel> channel)
      : owner_(owner),
        channel_(std::move(channel)),
        stub_(v1::Drafter::NewStub(channel_)),
        writes_([this](const v1::DraftRequest* r) { StartWrite(r); },
                [this] { StartWritesDone(); }) {}

  void Begin() {
    stub_->async()->Draft(&context_, this);
    AddHold();  // released when the read side ends, so outside writes never outlive the call
    v1::DraftRequest hello;
    v1::Hello* h = hello.mutable_hello();
    h->set_protocol(v1::DRAFT_PROTOCOL_V1);
    h->set_vocab_size(owner_->options_.vocab_size);
    h->set_tokenizer_sha256(owner_->options_.tokenizer_sha256);
    h->set_target_fingerprint(owner_->options_.target_fingerprint);
    const engine::TapFusion* fusion = owner_->options_.fusion;
    h->set_tap_form(fusion != nullptr ? v1::TAP_FORM_FUSED : v1::TAP_FORM_RAW);
    if (fusion != nullptr) h->set_drafter_fingerprint(fusion->drafter_fingerprint());
    h->set_tap_dtype(owner_->options_.bf16_taps ? v1::DTYPE_BF16 : v1::DTYPE_F32);
    h->set_target_name(owner_->options_.target_name);
    h->set_max_tree_nodes(static_cast<uint32_t>(std::max(0, owner_->options_.max_tree_nodes)));
    writes_.Push(std::move(hello));
    StartRead(&incoming_);
    StartCall();
  }

  bool Send(v1::DraftRequest request) { return writes_.Push(std::move(request)); }
  void Cancel() { context_.TryCancel(); }

  void OnWriteDone(bool ok) override { writes_.OnWriteDone(ok); }
  void OnReadDone(bool ok) override {
    if (!ok) {  // the call is over: stop writes, then let OnDone come
      writes_.Break();
      RemoveHold();
      return;
    }
    Dispatch(incoming_);
    incoming_.Clear();
    StartRead(&incoming_);
  }
  void OnDone(const grpc::Status& status) override {
    absl::Status why = refusal_.ok() ? FromGrpcStatus(status) : refusal_;
    if (why.ok()) why = absl::UnavailableError("drafter closed the stream");
    owner_->OnLinkDone(this, why);  // the channel's shared_ptr frees the link
  }

 private:
  void Dispatch(const v1::DraftReply& reply) {
    const GrpcDraftChannelOptions& want = owner_->options_;
    switch (reply.kind_case()) {
      case v1::DraftReply::kHelloAck: {
        absl::StatusOr<engine::DrafterInfo> info = AcceptHelloAck(reply.hello_ack(), want);
        if (!info.ok()) {
          refusal_ = info.status();
          context_.TryCancel();
          return;
        }
        owner_->OnLinkReady(this, *info);
        return;
      }
      case v1::DraftReply::kProposal:
      case v1::DraftReply::kError:
        DeliverToBox(reply, &owner_->box_);
        return;
      case v1::DraftReply::KIND_NOT_SET:
        return;
    }
  }

  GrpcDraftChannel* owner_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Drafter::Stub> stub_;
  grpc::ClientContext context_;
  v1::DraftReply incoming_;
  absl::Status refusal_;
  WriteQueue<v1::DraftRequest> writes_;
};

std::unique_ptr<GrpcDraftChannel> GrpcDraftChannel::Start(const GrpcDraftChannelOptions& options) {
  auto channel = std::unique_ptr<GrpcDraftChannel>(new GrpcDraftChannel(options));
  channel->connector_ = std::thread([c = channel.get()] { c->Connect(); });
  return channel;
}

GrpcDraftChannel::GrpcDraftChannel(const GrpcDraftChannelOptions& options) : options_(options) {}

GrpcDraftChannel::~GrpcDraftChannel() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (connector_.joinable()) connector_.join();
}

void GrpcDraftChannel::Connect() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options_.max_message_bytes);
  args.SetMaxSendMessageSize(options_.max_message_bytes);
  // A fresh channel per attempt: no shared subchannel state survives a drafter restart.
  args.SetInt("grpc.use_local_subchannel_pool", 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  options_.security.ApplyTo(&args);
  // Attempts of 500 ms without a connection before it is logged (once per outage): about 10 s.
  constexpr int kUnreachableAttemptsLogged = 20;
  int unreachable_attempts = 0;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
    }
    auto channel = grpc::CreateCustomChannel(options_.address,
                                             options_.security.CredentialsOrInsecure(), args);
    if (!channel->WaitForConnected(std::chrono::system_clock::now() +
                                   std::chrono::milliseconds(500))) {
      if (++unreachable_attempts == kUnreachableAttemptsLogged) {
        const std::string why = absl::StrCat(
            "drafter at ", options_.address, " unreachable for 10 s: not running, or a ",
            options_.security.tls() ? "TLS" : "plaintext",
            " connection refused (the drafter's --tls-* and this target's --upstream-tls-* must "
            "agree); decoding without drafts");
        spdlog::warn("{}: {}", options_.target_name, why);
        absl::MutexLock lock(&mu_);
        last_error_ = why;
      }
      continue;
    }
    unreachable_attempts = 0;
    auto link = std::make_shared<Link>(this, channel);
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
      link_ = link;
      link_done_ = false;
    }
    link->Begin();
    {
      absl::MutexLock lock(&mu_);
      auto done_or_stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return link_done_ || stopping_;
      };
      mu_.Await(absl::Condition(&done_or_stopping));
    }
    // Cancel outside the lock: gRPC may run OnDone inline, and OnDone takes the lock.
    link->Cancel();
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&link_done_));
    link_.reset();
    if (stopping_) break;
    mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                         refused_ ? options_.refused_backoff : options_.reconnect_backoff);
  }
}

void GrpcDraftChannel::OnLinkReady(Link* link, const engine::DrafterInfo& info) {
  absl::MutexLock lock(&mu_);
  if (link != link_.get()) return;
  box_.Reset();
  peer_ = info;
  epoch_ += 1;
  link_ready_ = true;
  last_error_.clear();
  spdlog::info("{}: drafter at {} ready (head {}, block {}, epoch {})", options_.target_name,
               options_.address, info.head_variant, info.block_size, epoch_);
}

void GrpcDraftChannel::OnLinkDone(Link* link, const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  if (link != link_.get()) return;
  const bool was_ready = link_ready_;
  link_ready_ = false;
  link_done_ = true;
  const bool repeated = last_error_ == status.ToString();
  last_error_ = status.ToString();
  refused_ = absl::IsFailedPrecondition(status);
  box_.Fail(absl::UnavailableError(absl::StrCat("drafter link lost: ", status.message())));
  if (refused_) {
    if (!repeated) spdlog::error("{}: {}", options_.target_name, status.ToString());
  } else if (was_ready && !stopping_) {
    spdlog::warn("{}: drafter at {} lost ({}); decoding without drafts until it is back",
                 options_.target_name, options_.address, status.ToString());
  }
}

bool GrpcDraftChannel::ready() const {
  absl::MutexLock lock(&mu_);
  return link_ready_;
}

engine::DrafterInfo GrpcDraftChannel::peer() const {
  absl::MutexLock lock(&mu_);
  return peer_;
}

uint64_t GrpcDraftChannel::epoch() const {
  absl::MutexLock lock(&mu_);
  return epoch_;
}

std::string GrpcDraftChannel::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

bool GrpcDraftChannel::WaitReady(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&link_ready_), timeout);
}

absl::Status GrpcDraftChannel::PutTaps(const engine::TapRows& taps, v1::Tensor* tensor) const {
  const v1::DType dtype = options_.bf16_taps ? v1::DTYPE_BF16 : v1::DTYPE_F32;
  if (options_.fusion == nullptr) {
    if (taps.fused) {
      return absl::InvalidArgumentError("taps: fused rows on a link that negotiated raw rows");
    }
    EncodeTapRows(taps.data.data(), taps.rows, taps.width, dtype, tensor);
    return absl::OkStatus();
  }
  if (taps.fused) {  // The target's verifier fused them where they were computed.
    if (taps.width != options_.fusion->fused_width()) {
      return absl::InvalidArgumentError(absl::StrCat("taps: fused rows of width ", taps.width,
                                                     " for a fusion of width ",
                                                     options_.fusion->fused_width()));
    }
    EncodeTapRows(taps.data.data(), taps.rows, taps.width, dtype, tensor);
    return absl::OkStatus();
  }
  if (taps.width != options_.fusion->raw_width()) {
    return absl::InvalidArgumentError(absl::StrCat("taps: raw rows of width ", taps.width,
                                                   " for a fusion of width ",
                                                   options_.fusion->raw_width()));
  }
  std::vector<float> fused(static_cast<size_t>(taps.rows * options_.fusion->fused_width()));
  ABSL_RETURN_IF_ERROR(options_.fusion->Fuse(taps.data.data(), taps.rows, fused.data()));
  EncodeTapRows(fused.data(), taps.rows, options_.fusion->fused_width(), dtype, tensor);
  return absl::OkStatus();
}

absl::Status GrpcDraftChannel::Send(v1::DraftRequest request) {
  const int64_t bytes = static_cast<int64_t>(request.ByteSizeLong());
  std::shared_ptr<Link> link = ReadyLink();
  if (link == nullptr || !link->Send(std::move(request))) {
    return absl::UnavailableError(
        absl::StrCat("drafter at ", options_.address, " is not connected"));
  }
  bytes_sent_.fetch_add(bytes);
  return absl::OkStatus();
}

absl::Status GrpcDraftChannel::Open(const engine::DraftOpen& open) {
  v1::DraftRequest request;
  v1::Open* o = request.mutable_open();
  o->set_stream_id(open.stream_id);
  o->set_request_id(open.request_id);
  o->mutable_prompt_ids()->Add(open.prompt_ids.begin(), open.prompt_ids.end());
  o->set_taps_first_row(static_cast<uint32_t>(open.prompt_taps.first_row));
  ABSL_RETURN_IF_ERROR(PutTaps(open.prompt_taps, o->mutable_prompt_taps()));
  o->set_tap_form(options_.fusion != nullptr ? v1::TAP_FORM_FUSED : v1::TAP_FORM_RAW);
  o->set_pending(open.pending);
  return Send(std::move(request));
}

absl::Status GrpcDraftChannel::Commit(const engine::DraftCommit& commit) {
  v1::DraftRequest request;
  v1::Commit* c = request.mutable_commit();
  c->set_stream_id(commit.stream_id);
  c->set_round(commit.round);
  c->mutable_ids()->Add(commit.ids.begin(), commit.ids.end());
  ABSL_RETURN_IF_ERROR(PutTaps(commit.taps, c->mutable_taps()));
  c->set_tap_form(options_.fusion != nullptr ? v1::TAP_FORM_FUSED : v1::TAP_FORM_RAW);
  c->set_pending(commit.pending);
  return Send(std::move(request));
}

void GrpcDraftChannel::Close(uint64_t stream_id) {
  box_.Forget(stream_id);
  v1::DraftRequest request;
  request.mutable_close()->set_stream_id(stream_id);
  if (std::shared_ptr<Link> link = ReadyLink()) link->Send(std::move(request));
}

std::shared_ptr<GrpcDraftChannel::Link> GrpcDraftChannel::ReadyLink() const {
  absl::MutexLock lock(&mu_);
  return link_ready_ ? link_ : nullptr;
}

absl::StatusOr<engine::DraftProposal> GrpcDraftChannel::Await(uint64_t stream_id, uint32_t round,
                                                              absl::Time deadline) {
  return box_.Await(stream_id, round, deadline);
}

}  // namespace twinspan::rpc
