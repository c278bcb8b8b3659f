// Fuzz target: any byte string as a whole safetensors file. The parser must return a Status and
// never read outside the buffer; every view it returns must lie inside the buffer and match its
// dtype x shape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/safetensors/header_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size copy so AddressSanitizer sees any read past the end.
  std::unique_ptr<std::byte[]> image(new std::byte[size == 0 ? 1 : size]);
  if (size != 0) std::memcpy(image.get(), data, size);
  absl::StatusOr<twinspan::SafetensorsContents> contents =
      twinspan::ParseSafetensorsImage(image.get(), size, "fuzz.safetensors");
  if (!contents.ok()) return 0;
  for (const twinspan::TensorView& view : contents->tensors) {
    const bool inside = view.data >= image.get() && view.nbytes <= size &&
                        view.data + view.nbytes <= image.get() + size;
    const size_t expected = static_cast<size_t>(view.numel()) * twinspan::DTypeSize(view.dtype);
    if (!inside || expected != view.nbytes) std::abort();
    // Touch the first and last byte: ASan reports a view that escapes the buffer.
    std::byte touched{0};
    if (view.nbytes != 0) touched = view.data[0] ^ view.data[view.nbytes - 1];
    asm volatile("" : : "r"(touched));
  }
  return 0;
}
