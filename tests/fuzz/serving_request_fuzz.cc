// Fuzz target: any byte string as a public request. The first byte picks the message (even:
// GenerateRequest, odd: TokenizeRequest); the rest is its protobuf encoding, parsed and validated
// by the same function the target serves with (services/target/server/request_parser.h), over the
// demo tokenizer and chat template. A request must be refused with a Status or come out within
// every limit; nothing may crash or read outside its buffers.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "google/protobuf/stubs/logging.h"
#include "services/target/server/request_parser.h"
#include "services/target/server/tokenizer_codec.h"

namespace {

using twinspan::serving::RequestLimits;

const RequestLimits& Limits() {
  static const RequestLimits limits = [] {
    RequestLimits l;
    l.vocab_size = 512;  // the demo tokenizer's
    l.max_context = 1024;
    l.max_prompt_tokens = 900;
    l.max_tokens_limit = 512;
    l.default_max_tokens = 64;
    l.max_text_bytes = 64 << 10;
    return l;
  }();
  return limits;
}

const twinspan::serving::TokenizerCodec& Codec() {
  static const std::unique_ptr<twinspan::serving::TokenizerCodec> codec = [] {
    auto c = twinspan::serving::TokenizerCodec::Open(TWINSPAN_FUZZ_TOKENIZER_DIR);
    if (!c.ok()) std::abort();  // the committed tokenizer must load
    return *std::move(c);
  }();
  return *codec;
}

void CheckGenerate(const twinspan::v1::GenerateRequest& request) {
  twinspan::rpc::CallInfo call;
  call.request_id = "fuzz";
  absl::StatusOr<twinspan::engine::EngineRequest> r =
      twinspan::serving::ParseGenerateRequest(request, call, Codec(), Limits());
  if (!r.ok()) {
    if (r.status().message().empty()) std::abort();  // every refusal says why
    return;
  }
  const RequestLimits& l = Limits();
  if (r->prompt_ids.empty() || static_cast<int64_t>(r->prompt_ids.size()) > l.max_prompt_tokens) {
    std::abort();
  }
  for (uint32_t id : r->prompt_ids) {
    if (id >= static_cast<uint32_t>(l.vocab_size)) std::abort();
  }
  for (uint32_t id : r->stop_token_ids) {
    if (id >= static_cast<uint32_t>(l.vocab_size)) std::abort();
  }
  if (r->max_tokens < 1 || r->max_tokens > l.max_tokens_limit) std::abort();
  const auto& s = r->sampling;
  if (!std::isfinite(s.temperature) || s.temperature < 0 || !(s.top_p > 0 && s.top_p <= 1) ||
      !(s.min_p >= 0 && s.min_p <= 1) || s.top_k < 0 || s.top_k > l.vocab_size) {
    std::abort();
  }
  // The reply path decodes ids back to text: the prompt's ids must stream without trouble too.
  std::unique_ptr<twinspan::engine::TextStream> text = Codec().NewStream();
  for (uint32_t id : r->prompt_ids) (void)text->Add({id});
  (void)text->Finish();
}

void CheckTokenize(const twinspan::v1::TokenizeRequest& request) {
  absl::StatusOr<twinspan::v1::TokenizeResponse> r =
      twinspan::serving::ParseTokenizeRequest(request, Codec(), Limits());
  if (!r.ok()) return;
  for (uint32_t id : r->ids()) {
    if (id >= static_cast<uint32_t>(Limits().vocab_size)) std::abort();
  }
}

}  // namespace

// Protobuf logs every invalid UTF-8 string it refuses; at fuzzing rates that is all the run does.
static void DropLog(google::protobuf::LogLevel, const char*, int, const std::string&) {}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(&DropLog);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool tokenize = (data[0] & 1) != 0;
  // An exact-size copy so AddressSanitizer sees any read past the end.
  std::unique_ptr<uint8_t[]> bytes(new uint8_t[size]);
  std::copy(data, data + size, bytes.get());
  if (tokenize) {
    twinspan::v1::TokenizeRequest request;
    if (request.ParseFromArray(bytes.get() + 1, static_cast<int>(size - 1))) CheckTokenize(request);
  } else {
    twinspan::v1::GenerateRequest request;
    if (request.ParseFromArray(bytes.get() + 1, static_cast<int>(size - 1))) CheckGenerate(request);
  }
  return 0;
}
