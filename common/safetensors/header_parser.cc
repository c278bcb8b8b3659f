#include "common/safetensors/header_parser.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace twinspan {
namespace {

using nlohmann::json;

// More dimensions than any real tensor has; bounds the work a hostile header can ask for.
constexpr size_t kMaxRank = 16;
// The fix for a file cut short, by far the likeliest cause of a bad header or tensor range.
constexpr char kRefetch[] =
    ": the file is damaged or incomplete (an interrupted download or copy); fetch it again";

absl::Status Corrupt(absl::string_view source, absl::string_view tensor,
                     absl::string_view problem) {
  if (tensor.empty()) return absl::DataLossError(absl::StrCat(source, ": ", problem));
  return absl::DataLossError(absl::StrCat(source, ": tensor \"", tensor, "\": ", problem));
}

absl::StatusOr<uint64_t> ReadUnsigned(const json& value, absl::string_view source,
                                      absl::string_view tensor, absl::string_view what) {
  if (!value.is_number_unsigned()) {
    return Corrupt(source, tensor, absl::StrCat(what, " is not a non-negative integer"));
  }
  return value.get<uint64_t>();
}

absl::StatusOr<TensorView> ParseEntry(const std::string& name, const json& entry,
                                      const std::byte* data, uint64_t data_size,
                                      absl::string_view source) {
  if (!entry.is_object()) return Corrupt(source, name, "entry is not a JSON object");
  const auto dtype_it = entry.find("dtype");
  const auto shape_it = entry.find("shape");
  const auto offsets_it = entry.find("data_offsets");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    return Corrupt(source, name, "missing or non-string \"dtype\"");
  }
  if (shape_it == entry.end() || !shape_it->is_array()) {
    return Corrupt(source, name, "missing or non-array \"shape\"");
  }
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
    return Corrupt(source, name, "\"data_offsets\" is not a [begin, end] pair");
  }
  TensorView view;
  view.name = name;
  absl::StatusOr<DType> dtype = ParseDType(dtype_it->get_ref<const std::string&>());
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": tensor \"", name, "\": ", dtype.status().message()));
  }
  view.dtype = *dtype;
  if (shape_it->size() > kMaxRank) {
    return Corrupt(source, name, absl::StrCat("rank ", shape_it->size(), " exceeds ", kMaxRank));
  }
  uint64_t nbytes = DTypeSize(view.dtype);
  for (const json& dim : *shape_it) {
    absl::StatusOr<uint64_t> d = ReadUnsigned(dim, source, name, "a shape entry");
    if (!d.ok()) return d.status();
    if (*d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        (*d != 0 && nbytes > std::numeric_limits<uint64_t>::max() / *d)) {
      return Corrupt(source, name, "shape overflows 64 bits");
    }
    nbytes *= *d;
    view.shape.push_back(static_cast<int64_t>(*d));
  }
  absl::StatusOr<uint64_t> begin = ReadUnsigned((*offsets_it)[0], source, name, "data_offsets[0]");
  if (!begin.ok()) return begin.status();
  absl::StatusOr<uint64_t> end = ReadUnsigned((*offsets_it)[1], source, name, "data_offsets[1]");
  if (!end.ok()) return end.status();
  if (*begin > *end || *end > data_size) {
    return Corrupt(
        source, name,
        absl::StrCat("data_offsets [", *begin, ", ", *end, ") lie outside the data section of ",
                     data_size, " bytes", *begin <= *end ? " (truncated?)" : "", kRefetch));
  }
  if (*end - *begin != nbytes) {
    return Corrupt(
        source, name,
        absl::StrCat("data_offsets [", *begin, ", ", *end, ") hold ", *end - *begin, " bytes but ",
                     std::string(DTypeName(view.dtype)), " x shape needs ", nbytes));
  }
  view.data = data + *begin;
  view.nbytes = static_cast<size_t>(nbytes);
  return view;
}

}  // namespace

absl::StatusOr<SafetensorsContents> ParseSafetensorsImage(const std::byte* image, size_t size,
                                                          std::string_view source_name_std) {
  const absl::string_view source_name(source_name_std.data(), source_name_std.size());
  if (size < 8) {
    return Corrupt(
        source_name, "",
        absl::StrCat("file of ", size,
                     " bytes is shorter than the 8-byte header length (truncated?)", kRefetch));
  }
  uint8_t length_bytes[8];
  std::memcpy(length_bytes, image, 8);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | length_bytes[i];
  if (header_len > kMaxSafetensorsHeaderBytes) {
    return Corrupt(source_name, "",
                   absl::StrCat("header length ", header_len, " exceeds the limit of ",
                                kMaxSafetensorsHeaderBytes, " bytes"));
  }
  if (header_len > size - 8) {
    return Corrupt(source_name, "",
                   absl::StrCat("header length ", header_len, " runs past the end of the ", size,
                                "-byte file (truncated?)", kRefetch));
  }
  const char* header_begin = reinterpret_cast<const char*>(image + 8);
  json header = json::parse(header_begin, header_begin + header_len, nullptr,
                            /*allow_exceptions=*/false);
  if (header.is_discarded()) return Corrupt(source_name, "", "header is not valid JSON");
  if (!header.is_object()) return Corrupt(source_name, "", "header is not a JSON object");

  const std::byte* data = image + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  SafetensorsContents contents;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) return Corrupt(source_name, "", "__metadata__ is not an object");
      for (auto meta = it.value().begin(); meta != it.value().end(); ++meta) {
        if (!meta.value().is_string()) {
          return Corrupt(
              source_name, "",
              absl::StrCat("__metadata__ value of \"", meta.key(), "\" is not a string"));
        }
        contents.metadata[meta.key()] = meta.value().get<std::string>();
      }
      continue;
    }
    absl::StatusOr<TensorView> view =
        ParseEntry(it.key(), it.value(), data, data_size, source_name);
    if (!view.ok()) return view.status();
    contents.tensors.push_back(*std::move(view));
  }
  return contents;
}

}  // namespace twinspan
