// DraftChannel over one bidirectional twinspan.v1.Drafter/Draft stream. A connector thread keeps
// the link up: connect, Hello, wait for HelloAck (refusing a drafter built for another checkpoint),
// and reconnect with backoff after a loss. Each new link is a new epoch.
#ifndef TWINSPAN_SERVICES_TARGET_SERVER_GRPC_DRAFT_CHANNEL_H_
#define TWINSPAN_SERVICES_TARGET_SERVER_GRPC_DRAFT_CHANNEL_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/draft_link/draft_channel.h"
#include "services/draft_link/tap_fusion.h"
#include "services/security/channel_security.h"
#include "services/target/engine/proposal_box.h"
#include "twinspan/v1/drafter.pb.h"

namespace twinspan::rpc {

struct GrpcDraftChannelOptions {
  std::string address;                 // host:port of twinspan-drafter
  security::ChannelSecurity security;  // TLS or mutual TLS to the drafter; default plaintext
  std::string target_name = "target";
  int vocab_size = 0;  // what this target expects of its drafter
  std::string tokenizer_sha256;
  std::string target_fingerprint;
  int hidden_size = 0;  // floats per tap layer per row
  int num_layers = 0;   // the drafter's tap layer ids must be below it (0: not checked)
  // Drafts this target verifies as one tree (Hello.max_tree_nodes); 0: chains only, and a tree
  // drafter sends its main chain.
  int max_tree_nodes = 0;
  // Sends fused rows (the drafter's fc + hidden_norm applied on the target's side) when set; not
  // owned, must outlive the channel. Rows that arrive fused (TapRows::fused, the target's verifier
  // fused them on its backend) are sent as they are; raw rows go through fusion->Fuse. The drafter
  // must be of the checkpoint the fusion was loaded from.
  const engine::TapFusion* fusion = nullptr;
  bool bf16_taps = false;  // tap rows as BF16 instead of F32 (half the bytes; drafts may differ)
  absl::Duration reconnect_backoff = absl::Milliseconds(500);
  absl::Duration refused_backoff = absl::Seconds(5);  // after a handshake refusal
  int max_message_bytes = 64 << 20;
};

// The drafter the target can use from its HelloAck, or FailedPrecondition naming the first field
// that does not fit `want` (vocabulary, tokenizer, checkpoint, block size in [2, 64], tap layers
// 1 to 64 below want.num_layers, tap form and dtype, the fusion's drafter).
absl::StatusOr<engine::DrafterInfo> AcceptHelloAck(const v1::HelloAck& ack,
                                                   const GrpcDraftChannelOptions& want);
// Bounds of a HelloAck's block size and tap layer count: far above any drafter's.
inline constexpr uint32_t kMaxDraftBlockSize = 64;
inline constexpr int kMaxDraftTapLayers = 64;

// Stores a Proposal or StreamError reply in `box` (an error code outside the canonical set, or
// OK, becomes UNKNOWN); other replies are ignored.
void DeliverToBox(const v1::DraftReply& reply, engine::ProposalBox* box);

// Thread-safe.
class GrpcDraftChannel : public engine::DraftChannel {
 public:
  // Starts the connector; the channel becomes ready() once a drafter answered the handshake.
  static std::unique_ptr<GrpcDraftChannel> Start(const GrpcDraftChannelOptions& options);
  ~GrpcDraftChannel() override;

  bool ready() const override;
  engine::DrafterInfo peer() const override;
  uint64_t epoch() const override;
  absl::Status Open(const engine::DraftOpen& open) override;
  absl::Status Commit(const engine::DraftCommit& commit) override;
  void Close(uint64_t stream_id) override;
  absl::StatusOr<engine::DraftProposal> Await(uint64_t stream_id, uint32_t round,
                                              absl::Time deadline) override;

  // Waits until ready() or the timeout; true when ready.
  bool WaitReady(absl::Duration timeout);
  // The last handshake refusal or link error, for ModelInfo and logs.
  std::string last_error() const;
  // Serialized bytes of every Open and Commit sent so far (the bytes-per-round benchmark).
  int64_t bytes_sent() const { return bytes_sent_.load(); }

  class Link;

 private:
  explicit GrpcDraftChannel(const GrpcDraftChannelOptions& options);
  void Connect();
  void OnLinkReady(Link* link, const engine::DrafterInfo& info);
  void OnLinkDone(Link* link, const absl::Status& status);
  // The current link when ready, else null.
  std::shared_ptr<Link> ReadyLink() const;

  // The tap rows of an Open or Commit in the negotiated form and dtype.
  absl::Status PutTaps(const engine::TapRows& taps, v1::Tensor* tensor) const;
  absl::Status Send(v1::DraftRequest request);

  const GrpcDraftChannelOptions options_;
  std::atomic<int64_t> bytes_sent_{0};
  engine::ProposalBox box_;
  mutable absl::Mutex mu_;
  // Shared with senders so a link outlives a Send racing with its end.
  std::shared_ptr<Link> link_ ABSL_GUARDED_BY(mu_);
  bool link_ready_ ABSL_GUARDED_BY(mu_) = false;
  bool link_done_ ABSL_GUARDED_BY(mu_) = true;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  engine::DrafterInfo peer_ ABSL_GUARDED_BY(mu_);
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  bool refused_ ABSL_GUARDED_BY(mu_) = false;
  std::thread connector_;
};

}  // namespace twinspan::rpc

#endif  // TWINSPAN_SERVICES_TARGET_SERVER_GRPC_DRAFT_CHANNEL_H_
