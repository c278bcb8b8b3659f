// Safetensors reading and writing: every dtype, 0-dim tensors, metadata, single and sharded
// checkpoints.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/safetensors/checkpoint.h"
#include "common/safetensors/half.h"
#include "common/safetensors/safetensors_file.h"
#include "common/safetensors/writer.h"
#include "gtest/gtest.h"

namespace twinspan {
namespace {

namespace fs = std::filesystem;

fs::path FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("formats_st_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<OwnedTensor> AllDTypes() {
  std::vector<OwnedTensor> t;
  t.push_back(OwnedTensor::FromFloats("f32", {2, 3}, {1, 2, 3, 4, 5, -6.5f}));
  t.push_back(OwnedTensor::FromRaw<uint16_t>("f16", DType::kF16, {3},
                                             {FloatToHalf(1.5f), FloatToHalf(-2), 0x7bff}));
  t.push_back(OwnedTensor::FromRaw<uint16_t>("bf16", DType::kBF16, {2},
                                             {FloatToBFloat16(3.0f), FloatToBFloat16(-0.25f)}));
  t.push_back(OwnedTensor::FromInt64("i64", {2}, {-5, int64_t{1} << 40}));
  t.push_back(OwnedTensor::FromRaw<int32_t>("i32_scalar", DType::kI32, {}, {-2082680531}));
  t.push_back(OwnedTensor::FromRaw<int16_t>("i16", DType::kI16, {1, 2, 2}, {-1, 2, -32768, 32767}));
  t.push_back(OwnedTensor::FromRaw<int8_t>("i8", DType::kI8, {2}, {-128, 127}));
  t.push_back(OwnedTensor::FromRaw<uint8_t>("u8", DType::kU8, {2}, {0, 255}));
  t.push_back(OwnedTensor::FromRaw<uint8_t>("bool", DType::kBool, {3}, {0, 1, 1}));
  t.push_back(OwnedTensor::FromFloats("empty", {0, 4}, {}));
  return t;
}

TEST(DTypeTest, NamesAndSizesRoundTrip) {
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kI64, DType::kI32, DType::kI16,
                  DType::kI8, DType::kU8, DType::kBool}) {
    absl::StatusOr<DType> parsed = ParseDType(DTypeName(d));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, d);
  }
  EXPECT_EQ(DTypeSize(DType::kBF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kI64), 8u);
  EXPECT_EQ(DTypeName(DType::kBool), "BOOL");
  absl::StatusOr<DType> bad = ParseDType("F64");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("F64"), std::string::npos);
}

TEST(SafetensorsFileTest, WritesAndReadsEveryDType) {
  const fs::path path = FreshDir("all") / "all.safetensors";
  ASSERT_TRUE(WriteSafetensors(path.string(), AllDTypes(), {{"format", "pt"}}).ok());
  absl::StatusOr<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::Open(path.string());
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->tensors().size(), 10u);
  EXPECT_EQ((*file)->metadata().at("format"), "pt");
  EXPECT_EQ((*file)->Find("missing"), nullptr);

  const TensorView* f32 = (*file)->Find("f32");
  ASSERT_NE(f32, nullptr);
  EXPECT_EQ(f32->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f32->numel(), 6);
  EXPECT_EQ(*ToFloat(*f32), (std::vector<float>{1, 2, 3, 4, 5, -6.5f}));
  EXPECT_EQ(*ToFloat(*(*file)->Find("f16")), (std::vector<float>{1.5f, -2, 65504}));
  EXPECT_EQ(*ToFloat(*(*file)->Find("bf16")), (std::vector<float>{3, -0.25f}));
  EXPECT_EQ(*ToInt64(*(*file)->Find("i64")), (std::vector<int64_t>{-5, int64_t{1} << 40}));
  const TensorView* scalar = (*file)->Find("i32_scalar");
  ASSERT_NE(scalar, nullptr);
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_EQ(scalar->numel(), 1);
  EXPECT_EQ(*ToInt64(*scalar), (std::vector<int64_t>{-2082680531}));
  EXPECT_EQ(*ToInt64(*(*file)->Find("i16")), (std::vector<int64_t>{-1, 2, -32768, 32767}));
  EXPECT_EQ(*ToInt64(*(*file)->Find("i8")), (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(*ToInt64(*(*file)->Find("u8")), (std::vector<int64_t>{0, 255}));
  EXPECT_EQ(*ToInt64(*(*file)->Find("bool")), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ((*file)->Find("empty")->numel(), 0);
  EXPECT_TRUE(ToFloat(*(*file)->Find("empty"))->empty());
}

TEST(SafetensorsFileTest, ConversionsRefuseTheWrongKind) {
  const fs::path path = FreshDir("kind") / "kind.safetensors";
  ASSERT_TRUE(WriteSafetensors(path.string(), AllDTypes()).ok());
  auto file = SafetensorsFile::Open(path.string());
  ASSERT_TRUE(file.ok());
  absl::StatusOr<std::vector<float>> as_float = ToFloat(*(*file)->Find("i16"));
  ASSERT_FALSE(as_float.ok());
  EXPECT_NE(as_float.status().message().find("i16 I16[1, 2, 2]"), std::string::npos)
      << as_float.status();
  absl::StatusOr<std::vector<int64_t>> as_int = ToInt64(*(*file)->Find("bf16"));
  ASSERT_FALSE(as_int.ok());
  EXPECT_NE(as_int.status().message().find("bf16"), std::string::npos);
}

TEST(WriterTest, RefusesMismatchedBytesAndDuplicateNames) {
  const std::string path = (FreshDir("writer") / "w.safetensors").string();
  OwnedTensor bad = OwnedTensor::FromFloats("x", {2, 2}, {1, 2, 3});
  absl::Status status = WriteSafetensors(path, {bad});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("\"x\""), std::string::npos);
  OwnedTensor a = OwnedTensor::FromFloats("a", {1}, {1});
  EXPECT_EQ(WriteSafetensors(path, {a, a}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CheckpointTest, OpensAFileOrADirectoryWithModelSafetensors) {
  const fs::path dir = FreshDir("single");
  ASSERT_TRUE(WriteSafetensors((dir / "model.safetensors").string(), AllDTypes()).ok());
  for (const fs::path& p : {dir, dir / "model.safetensors"}) {
    absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::Open(p.string());
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    EXPECT_TRUE((*ckpt)->Has("f32"));
    EXPECT_FALSE((*ckpt)->Has("nope"));
    EXPECT_EQ((*ckpt)->Names().size(), 10u);
    absl::StatusOr<TensorView> missing = (*ckpt)->Get("nope");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
    EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
    EXPECT_NE(missing.status().message().find(p.string()), std::string::npos);
  }
}

void WriteText(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(CheckpointTest, OpensShardsThroughTheIndex) {
  const fs::path dir = FreshDir("sharded");
  ASSERT_TRUE(WriteSafetensors((dir / "model-00001-of-00002.safetensors").string(),
                               {OwnedTensor::FromFloats("a", {1}, {1})})
                  .ok());
  ASSERT_TRUE(WriteSafetensors((dir / "model-00002-of-00002.safetensors").string(),
                               {OwnedTensor::FromFloats("b", {2}, {2, 3})})
                  .ok());
  WriteText(dir / "model.safetensors.index.json",
            R"({"metadata": {"total_size": 12}, "weight_map": {
                 "a": "model-00001-of-00002.safetensors",
                 "b": "model-00002-of-00002.safetensors"}})");
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::Open(dir.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ((*ckpt)->Names(), (std::vector<std::string>{"a", "b"}));
  absl::StatusOr<TensorView> b = (*ckpt)->Get("b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*ToFloat(*b), (std::vector<float>{2, 3}));
  EXPECT_EQ((*ckpt)->files().size(), 2u);
}

TEST(CheckpointTest, RefusesAnIndexThatPromisesTooMuch) {
  const fs::path dir = FreshDir("bad_index");
  ASSERT_TRUE(
      WriteSafetensors((dir / "s1.safetensors").string(), {OwnedTensor::FromFloats("a", {1}, {1})})
          .ok());
  WriteText(dir / "model.safetensors.index.json",
            R"({"weight_map": {"a": "s1.safetensors", "ghost": "s1.safetensors"}})");
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::Open(dir.string());
  ASSERT_FALSE(ckpt.ok());
  EXPECT_EQ(ckpt.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(ckpt.status().message().find("ghost"), std::string::npos);

  WriteText(dir / "model.safetensors.index.json", R"({"weight_map": {"a": "../s1.safetensors"}})");
  EXPECT_EQ(Checkpoint::Open(dir.string()).status().code(), absl::StatusCode::kDataLoss);
  WriteText(dir / "model.safetensors.index.json", "[1, 2");
  EXPECT_EQ(Checkpoint::Open(dir.string()).status().code(), absl::StatusCode::kDataLoss);
}

TEST(CheckpointTest, RefusesATensorInTwoShards) {
  const fs::path dir = FreshDir("dup");
  for (const char* shard : {"s1.safetensors", "s2.safetensors"}) {
    ASSERT_TRUE(
        WriteSafetensors((dir / shard).string(), {OwnedTensor::FromFloats("a", {1}, {1})}).ok());
  }
  WriteText(dir / "model.safetensors.index.json",
            R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})");
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::Open(dir.string());
  ASSERT_FALSE(ckpt.ok());
  EXPECT_NE(ckpt.status().message().find("\"a\""), std::string::npos) << ckpt.status();
}

TEST(CheckpointTest, MissingPathsAreNotFound) {
  const fs::path dir = FreshDir("empty");
  EXPECT_EQ(Checkpoint::Open(dir.string()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Checkpoint::Open((dir / "nope").string()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(SafetensorsFile::Open((dir / "nope.safetensors").string()).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace twinspan
