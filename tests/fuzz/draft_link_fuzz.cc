// Fuzz target: the drafter link's messages as each side receives them. The first byte picks the
// side; the rest is a sequence of messages, each a 2-byte little-endian length and that many
// bytes of protobuf.
//   even: the drafter's side. DraftRequests (Hello, Open, Commit with tap rows, Close) go through
//         the DraftRequestHandler the drafter serves with, over a toy drafter that checks every
//         tap row it is given. A request must be answered or end the connection with a Status;
//         every reply names an open stream or the failing one.
//   odd:  the target's side. The first DraftReply is the HelloAck (AcceptHelloAck), the rest are
//         proposals and stream errors delivered to the ProposalBox the engine awaits; whatever
//         comes out must be a proposal the engine may verify or be dropped by UsableProposal.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/clock.h"
#include "google/protobuf/stubs/logging.h"
#include "services/drafter/server/draft_request_handler.h"
#include "services/target/engine/proposal_box.h"
#include "services/target/server/grpc_draft_channel.h"
#include "spdlog/spdlog.h"
#include "tests/integration/toy_models.h"

namespace {

constexpr int kVocab = 64;
constexpr int kBlock = 4;
constexpr int kHidden = 4;  // the toy target's: two tap layers of 4 floats

// The next length-prefixed message of `in`, or false at the end.
bool Next(std::string_view* in, std::string_view* message) {
  if (in->size() < 2) return false;
  const size_t n = static_cast<uint8_t>((*in)[0]) | (static_cast<uint8_t>((*in)[1]) << 8);
  in->remove_prefix(2);
  *message = in->substr(0, n);
  in->remove_prefix(message->size());
  return true;
}

void DrafterSide(std::string_view in) {
  static const twinspan::testing::ToyDrafter drafter(kVocab, kBlock, /*miss_every=*/3,
                                                     /*tap_width=*/2 * kHidden);
  std::vector<twinspan::v1::DraftReply> replies;
  twinspan::rpc::DraftRequestHandler handler(
      &drafter, {.max_streams = 8, .peer = "fuzz"}, nullptr, nullptr,
      [&replies](twinspan::v1::DraftReply reply) { replies.push_back(std::move(reply)); });
  std::string_view bytes;
  while (Next(&in, &bytes)) {
    twinspan::v1::DraftRequest request;
    if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) continue;
    const absl::Status status = handler.Handle(request);
    if (!status.ok()) {
      if (status.message().empty()) std::abort();  // the connection ends saying why
      break;
    }
    if (handler.open_streams() > 8) std::abort();  // the per-connection limit holds
  }
  for (const twinspan::v1::DraftReply& reply : replies) {
    if (reply.has_proposal() && reply.proposal().ids_size() != kBlock - 1) std::abort();
    if (reply.has_error() && (reply.error().code() == 0 || reply.error().message().empty())) {
      std::abort();
    }
  }
}

void TargetSide(std::string_view in) {
  twinspan::rpc::GrpcDraftChannelOptions want;
  want.address = "fuzz";
  want.vocab_size = kVocab;
  want.tokenizer_sha256 = "toy-tokenizer";
  want.target_fingerprint = "toy-fingerprint";
  want.hidden_size = kHidden;
  want.num_layers = 2;
  std::string_view bytes;
  if (!Next(&in, &bytes)) return;
  twinspan::v1::DraftReply hello;
  if (!hello.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
      !hello.has_hello_ack()) {
    return;
  }
  absl::StatusOr<twinspan::engine::DrafterInfo> info =
      twinspan::rpc::AcceptHelloAck(hello.hello_ack(), want);
  if (!info.ok()) {
    if (info.status().message().empty()) std::abort();
    return;
  }
  if (info->block_size < 2 || info->block_size > 64 || info->target_layer_ids.empty()) {
    std::abort();
  }
  for (int64_t layer : info->target_layer_ids) {
    if (layer < 0 || layer >= want.num_layers) std::abort();
  }
  twinspan::engine::ProposalBox box;
  uint32_t round = 1;
  while (Next(&in, &bytes)) {
    twinspan::v1::DraftReply reply;
    if (!reply.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) continue;
    twinspan::rpc::DeliverToBox(reply, &box);
    // The engine awaits stream 1's next round; a late or early answer must never come out.
    absl::StatusOr<twinspan::engine::DraftProposal> got = box.Await(1, round, absl::InfinitePast());
    if (got.ok()) {
      const bool matches = reply.has_proposal() && reply.proposal().stream_id() == 1 &&
                           reply.proposal().round() == round;
      if (!matches) std::abort();
      (void)twinspan::engine::UsableProposal(got->ids, info->vocab_size, info->block_size);
      ++round;
    } else if (!absl::IsDeadlineExceeded(got.status()) && got.status().message().empty()) {
      std::abort();
    }
  }
}

// Protobuf logs every invalid UTF-8 string it refuses; at fuzzing rates that is all the run does.
void DropLog(google::protobuf::LogLevel, const char*, int, const std::string&) {}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(&DropLog);
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) {
    DrafterSide(in);
  } else {
    TargetSide(in);
  }
  return 0;
}
