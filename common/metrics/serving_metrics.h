// Prometheus metric families of the three services, on one registry per process. Names follow
// vLLM's (spec_decode_*, time_to_first_token_seconds, ...) under the twinspan_ prefix so existing
// PromQL works after swapping the prefix; labels stay low-cardinality (no request ids).
#ifndef TWINSPAN_COMMON_METRICS_SERVING_METRICS_H_
#define TWINSPAN_COMMON_METRICS_SERVING_METRICS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/types/span.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace twinspan::metrics {

enum class RoundPhase { kDraft, kVerify, kRpc };

// Thread-safe: every method may be called from any thread (prometheus-cpp locks per family).
class ServingMetrics {
 public:
  // Registers every family on `registry`; `model_name` becomes a constant label.
  ServingMetrics(std::shared_ptr<prometheus::Registry> registry, std::string_view model_name);
  ServingMetrics(const ServingMetrics&) = delete;
  ServingMetrics& operator=(const ServingMetrics&) = delete;

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

  // One verify round of one stream: `drafted` drafts from `source` ("drafter" or "context_copy")
  // went in, the first `accepted` matched, and `emitted` tokens reached the client: accepted + 1
  // (the bonus included) unless an EOS, stop token or max_tokens ended the stream inside it.
  void RecordRound(std::string_view head_variant, std::string_view source, int drafted,
                   int accepted, int emitted);
  // The same round's draft shape: `nodes` drafts verified as a tree (or a chain), `accepted` of
  // them on the kept path (its depth).
  void RecordDraftShape(std::string_view head_variant, bool tree, int nodes, int accepted);
  // A round that ran without drafts because the drafter failed or missed its deadline.
  void RecordDraftFallback(std::string_view head_variant);
  void RecordPhase(RoundPhase phase, double seconds);

  void RecordFirstToken(double seconds);
  void RecordInterToken(double seconds);
  void RecordRequestDone(std::string_view finished_reason, double e2e_seconds, int prompt_tokens,
                         int generation_tokens);
  void SetRequestsRunning(int n);
  void SetRequestsWaiting(int n);
  void SetKvCacheUsage(double fraction);
  // Prompt-prefix caches, by `cache` ("target" or "drafter"): one prompt looked up, and the
  // tokens it resumed instead of computing again (0: a miss); the bytes the cache holds.
  void RecordPrefixLookup(std::string_view cache, int64_t reused_tokens);
  void SetPrefixCacheBytes(std::string_view cache, size_t bytes);

  // Router: one routed request per variant and worker; a retry before anything was streamed, by
  // the variant and the worker whose attempt failed.
  void RecordRouted(std::string_view head_variant, std::string_view worker);
  void RecordRetry(std::string_view head_variant, std::string_view worker);
  void SetWorkerHealthy(std::string_view worker, bool healthy);
  // A process the router launched was started again after it exited.
  void RecordRestart(std::string_view process);

  // Drafter: open streams and time per proposal of its head variant.
  void SetDrafterStreams(int n);
  void RecordPropose(std::string_view head_variant, double seconds);
  void RecordDrafterStreamError(std::string_view reason);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& num_drafts_;
  prometheus::Family<prometheus::Counter>& num_draft_tokens_;
  prometheus::Family<prometheus::Counter>& num_accepted_tokens_;
  prometheus::Family<prometheus::Counter>& accepted_per_pos_;
  prometheus::Family<prometheus::Counter>& draft_fallback_;
  prometheus::Family<prometheus::Histogram>& tokens_per_round_;
  prometheus::Family<prometheus::Histogram>& draft_nodes_;
  prometheus::Family<prometheus::Histogram>& accepted_depth_;
  prometheus::Family<prometheus::Histogram>& round_phase_;
  prometheus::Family<prometheus::Histogram>& ttft_;
  prometheus::Family<prometheus::Histogram>& itl_;
  prometheus::Family<prometheus::Histogram>& e2e_;
  prometheus::Family<prometheus::Counter>& prompt_tokens_;
  prometheus::Family<prometheus::Counter>& generation_tokens_;
  prometheus::Family<prometheus::Counter>& request_success_;
  prometheus::Family<prometheus::Gauge>& running_;
  prometheus::Family<prometheus::Gauge>& waiting_;
  prometheus::Family<prometheus::Gauge>& kv_usage_;
  prometheus::Family<prometheus::Counter>& prefix_queries_;
  prometheus::Family<prometheus::Counter>& prefix_hits_;
  prometheus::Family<prometheus::Counter>& prefix_reused_tokens_;
  prometheus::Family<prometheus::Gauge>& prefix_bytes_;
  prometheus::Family<prometheus::Counter>& routed_;
  prometheus::Family<prometheus::Counter>& retries_;
  prometheus::Family<prometheus::Gauge>& worker_healthy_;
  prometheus::Family<prometheus::Counter>& restarts_;
  prometheus::Family<prometheus::Gauge>& drafter_streams_;
  prometheus::Family<prometheus::Histogram>& propose_;
  prometheus::Family<prometheus::Counter>& drafter_errors_;
};

}  // namespace twinspan::metrics

#endif  // TWINSPAN_COMMON_METRICS_SERVING_METRICS_H_
