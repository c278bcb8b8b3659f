#include "services/target/target_model.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/safetensors/checkpoint.h"
#include "common/status.h"
#include "services/target/families.h"

namespace twinspan::target {

absl::Status TargetOptions::Validate() const {
  if (context < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TargetOptions.context is %d; it must be at least 1", context));
  }
  if (backend != nullptr && pool != nullptr) {
    return absl::InvalidArgumentError(
        "TargetOptions.pool is set with a backend: the pool belongs to the backend, give one");
  }
  return absl::OkStatus();
}

absl::StatusOr<ForwardResult> Prefill(const TargetModel& model, SequenceState& state,
                                      absl::Span<const int32_t> tokens,
                                      const PrefillOptions& options) {
  if (tokens.empty()) return absl::InvalidArgumentError("Prefill: empty prompt");
  if (options.chunk_rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Prefill: chunk_rows %d", options.chunk_rows));
  }
  if (options.taps_out != nullptr && !options.on_taps) {
    return absl::InvalidArgumentError("Prefill: taps_out without on_taps");
  }
  const int64_t hidden = model.config().hidden_size;
  const int64_t n_taps = static_cast<int64_t>(options.tap_layer_ids.size());
  const bool host_taps = options.taps_out == nullptr;
  PrefixCache* cache = options.prefix_cache;
  if (cache != nullptr && (state.length() != 0 || state.pending() != 0)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "Prefill with a prefix cache needs an empty state, not %d committed rows", state.length()));
  }
  const int64_t start = state.length();
  int64_t resumed = 0;
  if (cache != nullptr) {
    ABSL_ASSIGN_OR_RETURN(resumed, cache->Resume(state, tokens, options.prefix_drafter_epoch));
  }
  ForwardResult total;
  total.first_position = start + resumed;
  total.rows = static_cast<int64_t>(tokens.size()) - resumed;
  if (host_taps) total.taps.reserve(total.rows * n_taps * hidden);
  // Forwards end at multiples of the chunk (and block) counted from the first token, resumed or
  // not, so a resumed prefill runs the forwards a fresh one runs after the resumed prefix.
  auto next_end = [&](int64_t at) {
    int64_t end = (at / options.chunk_rows + 1) * options.chunk_rows;
    if (cache != nullptr) {
      end = std::min(end, (at / cache->block_tokens() + 1) * cache->block_tokens());
    }
    return std::min<int64_t>(end, static_cast<int64_t>(tokens.size()));
  };
  const int64_t n = static_cast<int64_t>(tokens.size());
  for (int64_t at = resumed; at < n; at = next_end(at)) {
    const int64_t begin = at - resumed;  // among the rows this prefill runs
    if (begin > 0 && options.keep_going) ABSL_RETURN_IF_ERROR(options.keep_going());
    const int64_t end = next_end(at) - resumed;
    const bool last = end == total.rows;
    ForwardRequest request;
    request.tokens = tokens.subspan(at, end - begin);
    request.logits = last ? LogitsRows::kLast : LogitsRows::kNone;
    request.tap_layer_ids = options.tap_layer_ids;
    if (last) request.logits_out = options.logits_out;
    request.taps_out = options.taps_out;
    ForwardResult chunk;
    ABSL_RETURN_IF_ERROR(model.Forward(state, request, &chunk));
    ABSL_RETURN_IF_ERROR(model.Commit(state, end - begin));
    if (cache != nullptr) ABSL_RETURN_IF_ERROR(cache->Store(state, tokens));
    if (host_taps) {
      total.taps.insert(total.taps.end(), chunk.taps.begin(), chunk.taps.end());
    } else if (n_taps > 0) {
      ABSL_RETURN_IF_ERROR(options.on_taps(begin, end - begin));
    }
    if (last) {
      total.logit_rows = chunk.logit_rows;
      total.logits = std::move(chunk.logits);
    }
  }
  return total;
}

absl::StatusOr<ForwardResult> Prefill(const TargetModel& model, SequenceState& state,
                                      absl::Span<const int32_t> tokens, int64_t chunk_rows,
                                      const std::vector<int64_t>& tap_layer_ids) {
  PrefillOptions options;
  options.chunk_rows = chunk_rows;
  options.tap_layer_ids = tap_layer_ids;
  return Prefill(model, state, tokens, options);
}

absl::StatusOr<std::unique_ptr<TargetModel>> OpenTargetModel(const std::string& dir,
                                                             const TargetOptions& options) {
  ABSL_RETURN_IF_ERROR(options.Validate());
  ABSL_ASSIGN_OR_RETURN(const TargetConfig config, LoadTargetConfig(dir));
  if (config.is_moe() && options.drafter_configured) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: a mixture-of-experts target (%d experts) cannot be served with a drafter; run it "
        "without one",
        dir, config.num_experts));
  }
  if (config.is_moe()) {
    return absl::UnimplementedError(
        absl::StrFormat("%s: mixture-of-experts targets are not supported", dir));
  }
  ABSL_ASSIGN_OR_RETURN(std::shared_ptr<const Checkpoint> checkpoint, Checkpoint::Open(dir));
  switch (config.family) {
    case TargetFamily::kQwen3:
      return OpenQwen3Model(config, std::move(checkpoint), options);
    case TargetFamily::kQwen35:
      return OpenQwen35Model(config, std::move(checkpoint), options);
  }
  return absl::InternalError("unknown target family");
}

}  // namespace twinspan::target
