// The target's command-line flags, shared by twinspan-target and twinspan-serve (the single-process
// mode) so both spell and document them the same way.
#ifndef TWINSPAN_SERVICES_TARGET_SERVER_TARGET_FLAGS_H_
#define TWINSPAN_SERVICES_TARGET_SERVER_TARGET_FLAGS_H_

#include <string>

#include "CLI/CLI.hpp"
#include "services/security/security_flags.h"
#include "services/target/server/target_stack.h"

namespace twinspan::serving {

// Values of the flags that are not TargetStackOptions fields; Finish() folds them in.
struct TargetFlags {
  TargetStackOptions stack;
  security::SecurityFlags security;
  std::string listen = "127.0.0.1:50051";
  std::string metrics_listen = "127.0.0.1:0";
  std::string log_level = "info";
  double draft_timeout_ms = 500;
  double drain_seconds = 30;
  int max_message_mb = 64;
  double max_request_seconds = 0;  // 0: no server-side limit

  // The server-side per-request limit for ServingServiceOptions.
  absl::Duration max_request_duration() const {
    return max_request_seconds > 0 ? absl::Seconds(max_request_seconds) : absl::InfiniteDuration();
  }

  // Fills draft_timeout and max_message_bytes from the parsed flags. Call after parsing.
  void Finish() {
    stack.draft_timeout = absl::Milliseconds(draft_timeout_ms);
    stack.max_message_bytes = max_message_mb << 20;
  }
};

// Adds --model, --listen, --metrics, --name, the drafter choice, engine sizes, limits, drain,
// logging and the port's security (TLS, bearer tokens). `with_grpc_drafter` adds --drafter
// HOST:PORT and how it is dialled (--upstream-tls-*).
void AddTargetFlags(CLI::App& app, TargetFlags& flags, bool with_grpc_drafter);

}  // namespace twinspan::serving

#endif  // TWINSPAN_SERVICES_TARGET_SERVER_TARGET_FLAGS_H_
