#include "common/metrics/serving_metrics.h"

#include <string>
#include <utility>

namespace twinspan::metrics {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;
using prometheus::Labels;

// Seconds buckets from 0.1 ms to 80 s, for both per-round phases and request latencies.
const Histogram::BucketBoundaries& SecondsBuckets() {
  static const Histogram::BucketBoundaries kBuckets = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
      0.25,   0.5,     1.0,    2.5,   5.0,    10.0,  20.0, 40.0,  80.0};
  return kBuckets;
}

// Tokens a round emits: 1 (no draft accepted) up to B (all B-1 drafts plus the bonus).
const Histogram::BucketBoundaries& TokensPerRoundBuckets() {
  static const Histogram::BucketBoundaries kBuckets = {1, 2,  3,  4,  5,  6,  7,  8,
                                                       9, 10, 11, 12, 13, 14, 15, 16};
  return kBuckets;
}

// Drafts a round verified, or accepted: 0 up to a 64-node tree.
const Histogram::BucketBoundaries& DraftNodesBuckets() {
  static const Histogram::BucketBoundaries kBuckets = {0,  1,  2,  3,  4,  5,  6,  7,  8, 10,
                                                       12, 15, 16, 20, 24, 31, 32, 48, 64};
  return kBuckets;
}

const char* PhaseName(RoundPhase phase) {
  switch (phase) {
    case RoundPhase::kDraft:
      return "draft";
    case RoundPhase::kVerify:
      return "verify";
    case RoundPhase::kRpc:
      return "rpc";
  }
  return "unknown";
}

}  // namespace

ServingMetrics::ServingMetrics(std::shared_ptr<prometheus::Registry> registry,
                               std::string_view model_name)
    : registry_(std::move(registry)),
      num_drafts_(BuildCounter()
                      .Name("twinspan_spec_decode_num_drafts_total")
                      .Help("Verify rounds that carried drafts (vLLM spec_decode_num_drafts).")
                      .Labels({{"model_name", std::string(model_name)}})
                      .Register(*registry_)),
      num_draft_tokens_(BuildCounter()
                            .Name("twinspan_spec_decode_num_draft_tokens_total")
                            .Help("Draft tokens sent to verification.")
                            .Labels({{"model_name", std::string(model_name)}})
                            .Register(*registry_)),
      num_accepted_tokens_(BuildCounter()
                               .Name("twinspan_spec_decode_num_accepted_tokens_total")
                               .Help("Draft tokens accepted by verification.")
                               .Labels({{"model_name", std::string(model_name)}})
                               .Register(*registry_)),
      accepted_per_pos_(BuildCounter()
                            .Name("twinspan_spec_decode_num_accepted_tokens_per_pos_total")
                            .Help("Accepted draft tokens by draft position (0-based).")
                            .Labels({{"model_name", std::string(model_name)}})
                            .Register(*registry_)),
      draft_fallback_(BuildCounter()
                          .Name("twinspan_spec_decode_fallback_rounds_total")
                          .Help("Rounds run without drafts because the drafter failed or was late.")
                          .Labels({{"model_name", std::string(model_name)}})
                          .Register(*registry_)),
      tokens_per_round_(BuildHistogram()
                            .Name("twinspan_spec_decode_tokens_per_round")
                            .Help("Tokens one verify round emitted (accepted drafts + bonus, less "
                                  "what a stop cut).")
                            .Labels({{"model_name", std::string(model_name)}})
                            .Register(*registry_)),
      draft_nodes_(BuildHistogram()
                       .Name("twinspan_spec_decode_draft_nodes_per_round")
                       .Help("Drafts one verify round carried (a tree's nodes, a chain's length), "
                             "by head variant and shape (chain or tree).")
                       .Labels({{"model_name", std::string(model_name)}})
                       .Register(*registry_)),
      accepted_depth_(BuildHistogram()
                          .Name("twinspan_spec_decode_accepted_depth_per_round")
                          .Help("Drafts one verify round accepted (the depth of the kept path), "
                                "by head variant and shape (chain or tree).")
                          .Labels({{"model_name", std::string(model_name)}})
                          .Register(*registry_)),
      round_phase_(BuildHistogram()
                       .Name("twinspan_round_phase_seconds")
                       .Help("Per-round time by phase: draft wait, verify forward, drafter RPC.")
                       .Labels({{"model_name", std::string(model_name)}})
                       .Register(*registry_)),
      ttft_(BuildHistogram()
                .Name("twinspan_time_to_first_token_seconds")
                .Help("Time from arrival to the first generated token.")
                .Labels({{"model_name", std::string(model_name)}})
                .Register(*registry_)),
      itl_(BuildHistogram()
               .Name("twinspan_inter_token_latency_seconds")
               .Help("Mean time between generated tokens, observed once per round.")
               .Labels({{"model_name", std::string(model_name)}})
               .Register(*registry_)),
      e2e_(BuildHistogram()
               .Name("twinspan_e2e_request_latency_seconds")
               .Help("Time from arrival to the final message.")
               .Labels({{"model_name", std::string(model_name)}})
               .Register(*registry_)),
      prompt_tokens_(BuildCounter()
                         .Name("twinspan_prompt_tokens_total")
                         .Help("Prompt tokens of finished requests.")
                         .Labels({{"model_name", std::string(model_name)}})
                         .Register(*registry_)),
      generation_tokens_(BuildCounter()
                             .Name("twinspan_generation_tokens_total")
                             .Help("Generated tokens of finished requests.")
                             .Labels({{"model_name", std::string(model_name)}})
                             .Register(*registry_)),
      request_success_(BuildCounter()
                           .Name("twinspan_request_success_total")
                           .Help("Finished requests by finish reason.")
                           .Labels({{"model_name", std::string(model_name)}})
                           .Register(*registry_)),
      running_(BuildGauge()
                   .Name("twinspan_num_requests_running")
                   .Help("Requests in the round loop.")
                   .Labels({{"model_name", std::string(model_name)}})
                   .Register(*registry_)),
      waiting_(BuildGauge()
                   .Name("twinspan_num_requests_waiting")
                   .Help("Requests waiting for admission.")
                   .Labels({{"model_name", std::string(model_name)}})
                   .Register(*registry_)),
      kv_usage_(BuildGauge()
                    .Name("twinspan_kv_cache_usage_perc")
                    .Help("Fraction of KV-cache slots in use (0-1).")
                    .Labels({{"model_name", std::string(model_name)}})
                    .Register(*registry_)),
      prefix_queries_(BuildCounter()
                          .Name("twinspan_prefix_cache_queries_total")
                          .Help("Prompts looked up in the prompt-prefix cache, by cache.")
                          .Labels({{"model_name", std::string(model_name)}})
                          .Register(*registry_)),
      prefix_hits_(BuildCounter()
                       .Name("twinspan_prefix_cache_hits_total")
                       .Help("Prompts that resumed after a cached prefix, by cache.")
                       .Labels({{"model_name", std::string(model_name)}})
                       .Register(*registry_)),
      prefix_reused_tokens_(BuildCounter()
                                .Name("twinspan_prefix_cache_reused_tokens_total")
                                .Help("Prompt tokens resumed from the prefix cache instead of "
                                      "computed again, by cache.")
                                .Labels({{"model_name", std::string(model_name)}})
                                .Register(*registry_)),
      prefix_bytes_(BuildGauge()
                        .Name("twinspan_prefix_cache_bytes")
                        .Help("Bytes the prompt-prefix cache holds, by cache.")
                        .Labels({{"model_name", std::string(model_name)}})
                        .Register(*registry_)),
      routed_(BuildCounter()
                  .Name("twinspan_router_requests_total")
                  .Help("Requests the router sent, by head variant and worker (address).")
                  .Labels({{"model_name", std::string(model_name)}})
                  .Register(*registry_)),
      retries_(BuildCounter()
                   .Name("twinspan_router_retries_total")
                   .Help("Requests retried on another worker before anything was streamed, by head "
                         "variant and the worker that failed.")
                   .Labels({{"model_name", std::string(model_name)}})
                   .Register(*registry_)),
      worker_healthy_(BuildGauge()
                          .Name("twinspan_router_worker_healthy")
                          .Help("1 when the worker's last health check passed.")
                          .Labels({{"model_name", std::string(model_name)}})
                          .Register(*registry_)),
      restarts_(BuildCounter()
                    .Name("twinspan_router_process_restarts_total")
                    .Help("Launched processes started again after they exited, by launch name.")
                    .Labels({{"model_name", std::string(model_name)}})
                    .Register(*registry_)),
      drafter_streams_(BuildGauge()
                           .Name("twinspan_drafter_streams_open")
                           .Help("Draft streams open on this drafter.")
                           .Labels({{"model_name", std::string(model_name)}})
                           .Register(*registry_)),
      propose_(BuildHistogram()
                   .Name("twinspan_drafter_propose_seconds")
                   .Help("Drafter time per proposal (context append, block forward, head), by head "
                         "variant.")
                   .Labels({{"model_name", std::string(model_name)}})
                   .Register(*registry_)),
      drafter_errors_(BuildCounter()
                          .Name("twinspan_drafter_stream_errors_total")
                          .Help("Draft stream messages refused, by reason.")
                          .Labels({{"model_name", std::string(model_name)}})
                          .Register(*registry_)) {}

void ServingMetrics::RecordRound(std::string_view head_variant, std::string_view source,
                                 int drafted, int accepted, int emitted) {
  const Labels variant = {{"head_variant", std::string(head_variant)}};
  if (drafted > 0) {
    const Labels by_source = {{"head_variant", std::string(head_variant)},
                              {"source", std::string(source)}};
    num_drafts_.Add(by_source).Increment();
    num_draft_tokens_.Add(by_source).Increment(drafted);
    num_accepted_tokens_.Add(by_source).Increment(accepted);
    for (int pos = 0; pos < accepted; ++pos) {
      accepted_per_pos_
          .Add({{"head_variant", std::string(head_variant)}, {"position", std::to_string(pos)}})
          .Increment();
    }
  }
  tokens_per_round_.Add(variant, TokensPerRoundBuckets()).Observe(emitted);
}

void ServingMetrics::RecordPrefixLookup(std::string_view cache, int64_t reused_tokens) {
  const Labels labels = {{"cache", std::string(cache)}};
  prefix_queries_.Add(labels).Increment();
  if (reused_tokens > 0) {
    prefix_hits_.Add(labels).Increment();
    prefix_reused_tokens_.Add(labels).Increment(static_cast<double>(reused_tokens));
  }
}

void ServingMetrics::SetPrefixCacheBytes(std::string_view cache, size_t bytes) {
  prefix_bytes_.Add({{"cache", std::string(cache)}}).Set(static_cast<double>(bytes));
}

void ServingMetrics::RecordDraftShape(std::string_view head_variant, bool tree, int nodes,
                                      int accepted) {
  const Labels labels = {{"head_variant", std::string(head_variant)},
                         {"shape", tree ? "tree" : "chain"}};
  draft_nodes_.Add(labels, DraftNodesBuckets()).Observe(nodes);
  accepted_depth_.Add(labels, DraftNodesBuckets()).Observe(accepted);
}

void ServingMetrics::RecordDraftFallback(std::string_view head_variant) {
  draft_fallback_.Add({{"head_variant", std::string(head_variant)}}).Increment();
}

void ServingMetrics::RecordPhase(RoundPhase phase, double seconds) {
  round_phase_.Add({{"phase", PhaseName(phase)}}, SecondsBuckets()).Observe(seconds);
}

void ServingMetrics::RecordFirstToken(double seconds) {
  ttft_.Add({}, SecondsBuckets()).Observe(seconds);
}

void ServingMetrics::RecordInterToken(double seconds) {
  itl_.Add({}, SecondsBuckets()).Observe(seconds);
}

void ServingMetrics::RecordRequestDone(std::string_view finished_reason, double e2e_seconds,
                                       int prompt_tokens, int generation_tokens) {
  e2e_.Add({}, SecondsBuckets()).Observe(e2e_seconds);
  prompt_tokens_.Add({}).Increment(prompt_tokens);
  generation_tokens_.Add({}).Increment(generation_tokens);
  request_success_.Add({{"finished_reason", std::string(finished_reason)}}).Increment();
}

void ServingMetrics::SetRequestsRunning(int n) { running_.Add({}).Set(n); }
void ServingMetrics::SetRequestsWaiting(int n) { waiting_.Add({}).Set(n); }
void ServingMetrics::SetKvCacheUsage(double fraction) { kv_usage_.Add({}).Set(fraction); }

void ServingMetrics::RecordRouted(std::string_view head_variant, std::string_view worker) {
  routed_.Add({{"head_variant", std::string(head_variant)}, {"worker", std::string(worker)}})
      .Increment();
}

void ServingMetrics::RecordRetry(std::string_view head_variant, std::string_view worker) {
  retries_.Add({{"head_variant", std::string(head_variant)}, {"worker", std::string(worker)}})
      .Increment();
}

void ServingMetrics::SetWorkerHealthy(std::string_view worker, bool healthy) {
  worker_healthy_.Add({{"worker", std::string(worker)}}).Set(healthy ? 1 : 0);
}

void ServingMetrics::RecordRestart(std::string_view process) {
  restarts_.Add({{"process", std::string(process)}}).Increment();
}

void ServingMetrics::SetDrafterStreams(int n) { drafter_streams_.Add({}).Set(n); }

void ServingMetrics::RecordPropose(std::string_view head_variant, double seconds) {
  propose_.Add({{"head_variant", std::string(head_variant)}}, SecondsBuckets()).Observe(seconds);
}

void ServingMetrics::RecordDrafterStreamError(std::string_view reason) {
  drafter_errors_.Add({{"reason", std::string(reason)}}).Increment();
}

}  // namespace twinspan::metrics
