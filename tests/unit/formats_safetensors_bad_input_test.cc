// Hostile safetensors images: each must give an error naming the file (and tensor) and never read
// outside the image. Runs under AddressSanitizer (label asan).
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/safetensors/header_parser.h"
#include "common/safetensors/safetensors_file.h"
#include "gtest/gtest.h"

namespace twinspan {
namespace {

// An exact-size heap copy, so ASan flags any read past the end.
std::vector<std::byte> Image(const std::string& header, size_t data_bytes,
                             uint64_t declared_len = UINT64_MAX) {
  const uint64_t len = declared_len == UINT64_MAX ? header.size() : declared_len;
  std::vector<std::byte> image(8 + header.size() + data_bytes, std::byte{0x5a});
  for (int i = 0; i < 8; ++i) image[i] = static_cast<std::byte>(len >> (8 * i));
  std::memcpy(image.data() + 8, header.data(), header.size());
  return image;
}

absl::Status Parse(const std::vector<std::byte>& image) {
  auto copy = std::make_unique<std::byte[]>(image.size());
  if (!image.empty()) std::memcpy(copy.get(), image.data(), image.size());
  return ParseSafetensorsImage(copy.get(), image.size(), "bad.safetensors").status();
}

void ExpectError(const absl::Status& status, absl::StatusCode code,
                 const std::vector<std::string>& needles) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_NE(status.message().find("bad.safetensors"), std::string::npos) << status;
  for (const std::string& needle : needles) {
    EXPECT_NE(status.message().find(needle), std::string::npos) << status << " lacks " << needle;
  }
}

TEST(SafetensorsBadInputTest, TooShortForTheLength) {
  for (size_t n = 0; n < 8; ++n) {
    std::vector<std::byte> image(n, std::byte{0});
    ExpectError(Parse(image), absl::StatusCode::kDataLoss, {"truncated"});
  }
}

TEST(SafetensorsBadInputTest, HeaderLengthPastTheEnd) {
  ExpectError(Parse(Image("{}", 0, 3)), absl::StatusCode::kDataLoss, {"header length 3"});
  ExpectError(Parse(Image("{}", 0, uint64_t{1} << 63)), absl::StatusCode::kDataLoss,
              {"exceeds the limit"});
  ExpectError(Parse(Image("{}", 0, (100u << 20) + 1)), absl::StatusCode::kDataLoss,
              {"exceeds the limit"});
}

TEST(SafetensorsBadInputTest, HeaderNotJsonObject) {
  ExpectError(Parse(Image("{\"a\": ", 0)), absl::StatusCode::kDataLoss, {"not valid JSON"});
  ExpectError(Parse(Image("[1,2]", 0)), absl::StatusCode::kDataLoss, {"not a JSON object"});
  ExpectError(Parse(Image("{\"__metadata__\": {\"k\": 1}}", 0)), absl::StatusCode::kDataLoss,
              {"__metadata__"});
  EXPECT_TRUE(Parse(Image("{}", 0)).ok());
}

TEST(SafetensorsBadInputTest, OffsetsOutsideTheData) {
  ExpectError(Parse(Image(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4)),
              absl::StatusCode::kDataLoss, {"\"w\"", "outside the data section"});
  ExpectError(Parse(Image(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", 16)),
              absl::StatusCode::kDataLoss, {"\"w\"", "outside"});
  ExpectError(
      Parse(Image(
          R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [18446744073709551615, 0]}})",
          16)),
      absl::StatusCode::kDataLoss, {"\"w\""});
}

TEST(SafetensorsBadInputTest, OffsetsThatDoNotMatchTheShape) {
  ExpectError(Parse(Image(R"({"w": {"dtype": "F16", "shape": [3], "data_offsets": [0, 4]}})", 8)),
              absl::StatusCode::kDataLoss, {"\"w\"", "needs 6"});
}

TEST(SafetensorsBadInputTest, MalformedEntries) {
  const std::vector<std::string> headers = {
      R"({"w": 5})",
      R"({"w": {"shape": [1], "data_offsets": [0, 4]}})",
      R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})",
      R"({"w": {"dtype": "F32", "shape": [1]}})",
      R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})",
      R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})",
      R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})",
      R"({"w": {"dtype": "F32", "shape": ["1"], "data_offsets": [0, 4]}})",
      R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})",
      R"({"w": {"dtype": 7, "shape": [1], "data_offsets": [0, 4]}})",
      R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296, 4294967296], "data_offsets": [0, 4]}})",
      R"({"w": {"dtype": "F32", "shape": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1], "data_offsets": [0, 4]}})",
  };
  for (const std::string& header : headers) {
    SCOPED_TRACE(header);
    ExpectError(Parse(Image(header, 8)), absl::StatusCode::kDataLoss, {"\"w\""});
  }
}

TEST(SafetensorsBadInputTest, UnsupportedDType) {
  ExpectError(Parse(Image(R"({"w": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}})", 8)),
              absl::StatusCode::kInvalidArgument, {"\"w\"", "F64"});
}

TEST(SafetensorsBadInputTest, DeeplyNestedJsonIsAnErrorNotACrash) {
  std::string header = "{\"w\": " + std::string(20000, '[') + std::string(20000, ']') + "}";
  ExpectError(Parse(Image(header, 0)), absl::StatusCode::kDataLoss, {"\"w\""});
}

TEST(SafetensorsBadInputTest, TruncatedFileOnDisk) {
  const std::filesystem::path path =
      std::filesystem::path(::testing::TempDir()) / "formats_truncated.safetensors";
  std::vector<std::byte> image =
      Image(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 16);
  image.resize(image.size() - 5);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(image.data()),
             static_cast<std::streamsize>(image.size()));
  absl::StatusOr<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::Open(path.string());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(file.status().message().find(path.string()), std::string::npos);
  EXPECT_NE(file.status().message().find("\"w\""), std::string::npos);

  std::ofstream(path, std::ios::binary | std::ios::trunc);  // Empty file.
  EXPECT_EQ(SafetensorsFile::Open(path.string()).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace twinspan
