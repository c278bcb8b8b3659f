#include "tools/draft/draft_block.h"

#include <algorithm>
#include <memory>

#include "common/safetensors/writer.h"
#include "common/status.h"
#include "kernels/cpu/parallel.h"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"
#include "spdlog/spdlog.h"

namespace twinspan::tools {
namespace {

std::vector<int64_t> Widen(const std::vector<int32_t>& ids) { return {ids.begin(), ids.end()}; }

}  // namespace

absl::Status DraftBlock(const DraftBlockOptions& options) {
  cpu::ThreadPool pool(options.threads);
  const int64_t context = static_cast<int64_t>(options.ids.size()) + 64;
  ABSL_ASSIGN_OR_RETURN(
      std::unique_ptr<target::TargetModel> target,
      target::OpenTargetModel(options.target_dir,
                              {.pool = &pool, .kv_dtype = options.kv_dtype, .context = context}));
  ABSL_ASSIGN_OR_RETURN(
      std::unique_ptr<drafter::Drafter> drafter,
      drafter::Drafter::Open(
          options.drafter_dir, options.target_dir,
          {.model = {.pool = &pool, .kv_dtype = options.kv_dtype, .context = context},
           .head = options.head}));
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> state, target->NewSequence());
  ABSL_ASSIGN_OR_RETURN(
      const target::ForwardResult prefill,
      target::Prefill(*target, *state, options.ids, 512, drafter->config().target_layer_ids));
  const auto pending = static_cast<int32_t>(
      std::max_element(prefill.logits.begin(), prefill.logits.end()) - prefill.logits.begin());
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<drafter::DraftStream> stream, drafter->NewStream());
  ABSL_RETURN_IF_ERROR(drafter->AppendTaps(*stream, drafter::TapForm::kRaw, prefill.taps,
                                           static_cast<int64_t>(options.ids.size())));
  ABSL_ASSIGN_OR_RETURN(const drafter::Proposal proposal,
                        drafter->Propose(*stream, pending,
                                         {.block_size = options.block_size,
                                          .temperature = options.temperature,
                                          .walk_seed = options.seed,
                                          .want_logits = true}));
  const auto slots = static_cast<int64_t>(proposal.ids.size());
  std::vector<OwnedTensor> tensors = {
      OwnedTensor::FromFloats("logits", {slots, proposal.columns}, proposal.logits),
      OwnedTensor::FromInt64("column_ids", {proposal.columns}, Widen(proposal.column_ids)),
      OwnedTensor::FromInt64("proposals", {slots}, Widen(proposal.ids)),
      OwnedTensor::FromInt64("pending", {1}, {pending})};
  if (!proposal.candidate_ids.empty()) {
    const auto k = static_cast<int64_t>(proposal.candidate_ids.size()) / slots;
    tensors.push_back(
        OwnedTensor::FromInt64("candidate_ids", {slots, k}, Widen(proposal.candidate_ids)));
    tensors.push_back(OwnedTensor::FromFloats("walk_scores", {slots, k}, proposal.walk_scores));
  }
  ABSL_RETURN_IF_ERROR(WriteSafetensors(
      options.out_path, tensors, {{"head", options.head}, {"pending", std::to_string(pending)}}));
  spdlog::info("twinspan-draft: pending {}, {} proposals over {} head columns -> {}", pending,
               slots, proposal.columns, options.out_path);
  return absl::OkStatus();
}

}  // namespace twinspan::tools
