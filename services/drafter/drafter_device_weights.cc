#include "services/drafter/drafter_device_weights.h"

#include "common/status.h"

namespace twinspan::drafter {
namespace {

absl::StatusOr<DeviceConv> UploadConv(backend::Backend& b, const DynamicConvWeights& conv) {
  DeviceConv out;
  ABSL_ASSIGN_OR_RETURN(out.base_kernel, b.UploadFloats(conv.base_kernel));
  ABSL_ASSIGN_OR_RETURN(out.projection, b.UploadLinear(conv.projection));
  return out;
}

absl::StatusOr<DeviceLayer> UploadLayer(backend::Backend& b, const DrafterLayerWeights& w) {
  DeviceLayer out;
  ABSL_ASSIGN_OR_RETURN(out.input_norm, b.UploadFloats(w.input_norm));
  ABSL_ASSIGN_OR_RETURN(out.post_attention_norm, b.UploadFloats(w.post_attention_norm));
  ABSL_ASSIGN_OR_RETURN(out.q_norm, b.UploadFloats(w.q_norm));
  ABSL_ASSIGN_OR_RETURN(out.k_norm, b.UploadFloats(w.k_norm));
  ABSL_ASSIGN_OR_RETURN(out.q_proj, b.UploadLinear(w.q_proj));
  ABSL_ASSIGN_OR_RETURN(out.k_proj, b.UploadLinear(w.k_proj));
  ABSL_ASSIGN_OR_RETURN(out.v_proj, b.UploadLinear(w.v_proj));
  ABSL_ASSIGN_OR_RETURN(out.o_proj, b.UploadLinear(w.o_proj));
  ABSL_ASSIGN_OR_RETURN(out.gate_proj, b.UploadLinear(w.gate_proj));
  ABSL_ASSIGN_OR_RETURN(out.up_proj, b.UploadLinear(w.up_proj));
  ABSL_ASSIGN_OR_RETURN(out.down_proj, b.UploadLinear(w.down_proj));
  if (w.attention_conv) {
    ABSL_ASSIGN_OR_RETURN(out.attention_conv, UploadConv(b, *w.attention_conv));
  }
  if (w.mlp_conv) {
    ABSL_ASSIGN_OR_RETURN(out.mlp_conv, UploadConv(b, *w.mlp_conv));
  }
  return out;
}

absl::StatusOr<BufferPtr> UploadBytes(backend::Backend& b, const Codebook& book,
                                      cpu::CodebookView& view) {
  ABSL_ASSIGN_OR_RETURN(BufferPtr buffer, b.Allocate(book.bytes.size()));
  ABSL_RETURN_IF_ERROR(b.Upload(*buffer, 0, book.bytes.data(), book.bytes.size()));
  view = {book.type, static_cast<const std::byte*>(buffer->data()), book.rows, book.rank};
  return buffer;
}

}  // namespace

absl::StatusOr<DrafterDeviceWeights> UploadDrafterWeights(backend::Backend& b,
                                                          const DrafterWeights& w) {
  DrafterDeviceWeights out;
  ABSL_ASSIGN_OR_RETURN(out.fc, b.UploadLinear(w.fc));
  ABSL_ASSIGN_OR_RETURN(out.hidden_norm, b.UploadFloats(w.hidden_norm));
  ABSL_ASSIGN_OR_RETURN(out.norm, b.UploadFloats(w.norm));
  for (const DrafterLayerWeights& layer : w.layers) {
    ABSL_ASSIGN_OR_RETURN(DeviceLayer device, UploadLayer(b, layer));
    out.layers.push_back(std::move(device));
  }
  if (w.selector) {
    DeviceSelector s;
    ABSL_ASSIGN_OR_RETURN(s.hidden_projection, b.UploadLinear(w.selector->hidden_projection));
    ABSL_ASSIGN_OR_RETURN(s.predecessor,
                          UploadBytes(b, w.selector->predecessor, s.predecessor_view));
    ABSL_ASSIGN_OR_RETURN(s.successor, UploadBytes(b, w.selector->successor, s.successor_view));
    out.selector = std::move(s);
  }
  return out;
}

}  // namespace twinspan::drafter
