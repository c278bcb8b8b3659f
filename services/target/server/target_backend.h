// The target's public API: turns twinspan.v1 requests into engine requests (text, chat or ids in;
// limits checked), and engine results into streamed chunks and the final message.
#ifndef TWINSPAN_SERVICES_TARGET_SERVER_TARGET_BACKEND_H_
#define TWINSPAN_SERVICES_TARGET_SERVER_TARGET_BACKEND_H_

#include <string>

#include "services/engine/grpc/serving_backend.h"
#include "services/engine/lane_engine.h"
#include "services/engine/text_codec.h"

namespace twinspan::serving {

struct TargetBackendOptions {
  std::string name = "target";   // served_by in replies
  int default_max_tokens = 256;  // when a request leaves max_tokens at 0
  int max_stop_strings = 8;
  int max_stop_bytes = 256;
  int max_chat_messages = 256;
  int64_t max_text_bytes = 1 << 20;
};

// Thread-safe. `engine` and `codec` are not owned and must outlive the backend.
class TargetBackend : public rpc::ServingBackend {
 public:
  TargetBackend(engine::LaneEngine* engine, const engine::TextCodec* codec,
                const TargetBackendOptions& options)
      : engine_(engine), codec_(codec), options_(options) {}

  void Generate(const v1::GenerateRequest& request, const rpc::CallInfo& call,
                std::shared_ptr<rpc::GenerateWriter> writer) override;
  absl::StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request) override;
  absl::StatusOr<v1::ModelInfoResponse> ModelInfo() override;
  bool Abort(const std::string& request_id) override;
  v1::GetLoadResponse GetLoad() override;

  // The engine request for `request` (validated), or InvalidArgument / ResourceExhausted naming
  // the field or limit.
  absl::StatusOr<engine::EngineRequest> MakeEngineRequest(const v1::GenerateRequest& request,
                                                          const rpc::CallInfo& call) const;

 private:
  absl::StatusOr<std::vector<uint32_t>> PromptIds(const v1::GenerateRequest& request,
                                                  std::string* rendered) const;
  absl::StatusOr<std::string> Render(const v1::ChatMessages& chat) const;

  engine::LaneEngine* engine_;
  const engine::TextCodec* codec_;
  TargetBackendOptions options_;
};

// token_sha256 of a reply: SHA-256 (hex) of the ids as little-endian uint32.
absl::StatusOr<std::string> TokenSha256(absl::Span<const uint32_t> ids);

}  // namespace twinspan::serving

#endif  // TWINSPAN_SERVICES_TARGET_SERVER_TARGET_BACKEND_H_
