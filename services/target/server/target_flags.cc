#include "services/target/server/target_flags.h"

namespace twinspan::serving {

void AddTargetFlags(CLI::App& app, TargetFlags& f, bool with_grpc_drafter) {
  TargetStackOptions& o = f.stack;
  app.add_option("--model", o.model_dir, "Target checkpoint folder")->required();
  app.add_option("--listen", f.listen, "gRPC address (port 0 picks one)");
  app.add_option("--metrics", f.metrics_listen, "/metrics address (port 0 picks one)");
  app.add_option("--name", o.name, "Name in logs and replies");
  if (with_grpc_drafter) {
    app.add_option("--drafter", o.drafter_address, "twinspan-drafter address (split mode)");
    app.add_option("--fuse-taps", o.fuse_taps_drafter_dir,
                   "Drafter checkpoint whose fc + hidden_norm this target applies to the taps it "
                   "sends (fused rows; the drafter must be of that checkpoint)");
    app.add_flag("--bf16-taps", o.bf16_taps, "Send tap rows as bf16 instead of f32");
  }
  app.add_option("--device", o.device,
                 "cpu, or cuda:N (N among the visible devices: cuda:0 under the router's "
                 "placement)");
  app.add_option("--drafter-model", o.drafter_model_dir, "Drafter checkpoint run in this process");
  app.add_option("--drafter-device", o.drafter_device,
                 "Device of the in-process drafter (default: --device)");
  app.add_option("--head-variant", o.head_variant, "Head variant of the in-process drafter");
  app.add_option("--draft-tree-nodes", o.draft_tree_nodes,
                 "Drafts per proposal of the in-process drafter as a best-first tree (DFlash2; "
                 "default 15); 0: the selector walk's chain");
  app.add_option("--parallel", o.parallel, "Live streams per round");
  app.add_option("--context", o.context,
                 "Positions per stream (prompt + completion); 0: the model's "
                 "max_position_embeddings, at most 4096");
  app.add_option("--threads", o.threads, "CPU threads (0: all)");
  app.add_option("--prefix-cache-mb", o.prefix_cache_mb,
                 "Prompt-prefix cache on the model's device, MiB (0: none); the in-process "
                 "drafter keeps one of the same size");
  app.add_option("--prefix-block-tokens", o.prefix_block_tokens,
                 "Prefix cache granularity in tokens (a multiple of 64)");
  app.add_option("--context-copy-ngram", o.context_copy_ngram,
                 "Context-copy drafts: tokens of context that must repeat before a copy is "
                 "proposed (0: no copies)");
  app.add_option("--context-copy-max-tokens", o.context_copy_max_tokens,
                 "Longest context-copy draft");
  app.add_option("--draft-timeout-ms", f.draft_timeout_ms, "Per-round wait for proposals");
  app.add_option("--draft-window", o.draft_window,
                 "Proposals a round verifies: all, adaptive (per stream, from its recent "
                 "acceptance), a count N, or auto (adaptive on a CPU, all on a GPU)");
  app.add_option("--max-waiting", o.max_waiting, "Queued requests beyond the live ones");
  app.add_option("--max-prompt-tokens", o.max_prompt_tokens, "Prompt limit (0: context - 1)");
  app.add_option("--max-tokens-limit", o.max_tokens_limit, "Largest max_tokens accepted");
  app.add_option("--default-max-tokens", o.default_max_tokens, "max_tokens when a request has 0");
  app.add_option("--max-message-mb", f.max_message_mb, "gRPC message size limit");
  app.add_option("--max-request-seconds", f.max_request_seconds,
                 "Longest a Generate may run, whatever the client's deadline (0: no limit)");
  app.add_option("--drain-seconds", f.drain_seconds, "Grace period for in-flight calls on SIGTERM");
  app.add_option("--log-level", f.log_level, "trace, debug, info, warn, error");
  app.add_flag("--log-prompts", o.log_prompts,
               "Log each request's prompt text (off: no log line holds prompt text)");
  security::AddSecurityFlags(app, f.security,
                             {.token_auth = true, .upstream_tls = with_grpc_drafter});
}

}  // namespace twinspan::serving
