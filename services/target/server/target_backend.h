// The target's public API: turns twinspan.v1 requests into engine requests (text, chat or ids in;
// limits checked), and engine results into streamed chunks and the final message.
#ifndef TWINSPAN_SERVICES_TARGET_SERVER_TARGET_BACKEND_H_
#define TWINSPAN_SERVICES_TARGET_SERVER_TARGET_BACKEND_H_

#include <string>

#include "services/rpc/serving_backend.h"
#include "services/structured/grammar_constraint.h"
#include "services/target/engine/lane_engine.h"
#include "services/target/engine/text_codec.h"
#include "services/target/server/request_parser.h"

namespace twinspan::serving {

struct TargetBackendOptions {
  std::string name = "target";  // served_by in replies
  RequestLimits limits;         // vocab_size and max_context are taken from the engine's model
  // Logs each request's prompt text (--log-prompts). Off: no log line holds prompt or message
  // text, not even a refusal that quotes it.
  bool log_prompts = false;
};

// Thread-safe. `engine`, `codec` and `grammar` are not owned and must outlive the backend;
// without `grammar` a request for structured output is refused (FAILED_PRECONDITION).
class TargetBackend : public rpc::ServingBackend {
 public:
  TargetBackend(engine::LaneEngine* engine, const engine::TextCodec* codec,
                const TargetBackendOptions& options,
                const structured::GrammarCompiler* grammar = nullptr)
      : engine_(engine), codec_(codec), options_(options), grammar_(grammar) {}

  void Generate(const v1::GenerateRequest& request, const rpc::CallInfo& call,
                std::shared_ptr<rpc::GenerateWriter> writer) override;
  absl::StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request) override;
  absl::StatusOr<v1::ModelInfoResponse> ModelInfo() override;
  bool Abort(const std::string& request_id) override;
  v1::GetLoadResponse GetLoad() override;

 private:
  RequestLimits limits() const;
  // The request's structured output as a constraint on `r` (none when it asks for none).
  absl::Status Constrain(const v1::GenerateRequest& request, engine::EngineRequest* r) const;

  engine::LaneEngine* engine_;
  const engine::TextCodec* codec_;
  TargetBackendOptions options_;
  const structured::GrammarCompiler* grammar_;
};

// token_sha256 of a reply: SHA-256 (hex) of the ids as little-endian uint32.
absl::StatusOr<std::string> TokenSha256(absl::Span<const uint32_t> ids);

}  // namespace twinspan::serving

#endif  // TWINSPAN_SERVICES_TARGET_SERVER_TARGET_BACKEND_H_
