// The two halves of a forward over several sequences that are not layers: BatchPlan lays the rows
// out (tokens, positions, RoPE tables; see layer_rows.h) and BatchOutputs gathers what leaves the
// forward (taps and hidden-state captures after each layer, the logits of the rows that want
// them) and downloads it into each entry's ForwardResult. Both run under the model's lock.
#ifndef TWINSPAN_SERVICES_TARGET_FORWARD_BATCH_H_
#define TWINSPAN_SERVICES_TARGET_FORWARD_BATCH_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/config/target_config.h"
#include "kernels/backend/backend.h"
#include "services/target/layer_rows.h"
#include "services/target/target_model.h"

namespace twinspan::target {

// REQUIRES for both: every entry passed CheckForward. Not copyable or movable: the row views
// point into it.
class BatchPlan {
 public:
  BatchPlan() = default;
  BatchPlan(const BatchPlan&) = delete;
  BatchPlan& operator=(const BatchPlan&) = delete;

  // Entry i's rows follow entry i - 1's, at positions state.length() onwards (a tree's by depth).
  // Op errors.
  absl::Status Build(backend::Backend& backend, const TargetConfig& config,
                     absl::Span<const SequenceForward> batch);

  int64_t rows() const { return layer_rows_.rows; }
  absl::Span<const int32_t> tokens() const { return tokens_; }  // [rows], host
  const LayerRows& layer_rows() const { return layer_rows_; }
  // Layer `layer`'s state of each entry's sequence, in entry order.
  std::vector<LayerState*> LayerStates(int64_t layer) const;

 private:
  std::vector<int32_t> tokens_;
  std::vector<int64_t> positions_;
  std::vector<int64_t> slots_;
  std::vector<RowSegment> segments_;
  std::vector<SequenceState*> states_;
  std::unique_ptr<backend::Buffer> rope_;  // [cos rows | sin rows]
  LayerRows layer_rows_;
};

class BatchOutputs {
 public:
  BatchOutputs() = default;
  BatchOutputs(const BatchOutputs&) = delete;
  BatchOutputs& operator=(const BatchOutputs&) = delete;

  // Resets each entry's result to its shape and allocates the tap buffers. Op errors.
  absl::Status Build(backend::Backend& backend, const TargetConfig& config,
                     absl::Span<const SequenceForward> batch, const BatchPlan& plan);

  // h: the residual stream [rows, hidden] at each point of the forward.
  absl::Status CaptureEmbeddings(const backend::Buffer& h);
  absl::Status AfterLayer(int64_t layer, const backend::Buffer& h);  // Taps and captures.
  absl::Status CaptureFinalNorm(const backend::Buffer& h);
  // Runs the head once over the rows that want logits (all entries together).
  absl::Status Logits(const backend::Buffer& h, const backend::LinearHandle& lm_head);
  // Downloads taps and logits into the results (or leaves them in each taps_out / logits_out).
  absl::Status Finish();

 private:
  struct Entry {
    const ForwardRequest* request = nullptr;
    ForwardResult* result = nullptr;
    RowSegment segment;
    int64_t first_logit_row = 0;  // Within the segment.
    int64_t logit_offset = 0;     // Row of the head's output where this entry's logits start.
    std::unique_ptr<backend::Buffer> taps;  // [rows, taps, hidden], unless the request's taps_out
    float* tap_rows = nullptr;              // Where the taps go: taps or taps_out.
  };
  absl::Status Capture(const backend::Buffer& h, std::vector<float> ForwardResult::*field,
                       int64_t block);

  backend::Backend* backend_ = nullptr;
  int64_t hidden_ = 0, vocab_ = 0;
  std::vector<Entry> entries_;
  int64_t logit_rows_ = 0;
  std::unique_ptr<backend::Buffer> logits_;  // [logit_rows_, vocab]
};

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_FORWARD_BATCH_H_
