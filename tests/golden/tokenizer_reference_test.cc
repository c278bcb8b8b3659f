// Compares our tokenizer with the JavaScript port of Hugging Face tokenizers on a >= 1 MB corpus.
// The corpus and the reference ids come from the ctest fixtures in tests/golden/tokenizer.cmake.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/tokenizer/stream_decoder.h"
#include "common/tokenizer/tokenizer.h"
#include "common/tokenizer/utf8.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/golden.h"

namespace twinspan::tokenizer {
namespace {

std::string EnvPath(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return nlohmann::json::parse(buffer.str(), nullptr, false);
}

class TokenizerReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string corpus_path = EnvPath("TWINSPAN_TOKENIZER_CORPUS");
    const std::string reference_path = EnvPath("TWINSPAN_TOKENIZER_REFERENCE");
    const std::string model_path = EnvPath("TWINSPAN_TOKENIZER_REFERENCE_MODEL");
    ASSERT_FALSE(corpus_path.empty() || reference_path.empty() || model_path.empty())
        << "run through ctest: the fixture tests set the corpus and reference paths";
    corpus_ = ReadJson(corpus_path);
    reference_ = ReadJson(reference_path);
    ASSERT_TRUE(corpus_.is_array()) << corpus_path;
    ASSERT_TRUE(reference_.is_object()) << reference_path;
    ASSERT_EQ(reference_["ids"].size(), corpus_.size());
    auto tokenizer = Tokenizer::Open(model_path);
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = *std::move(tokenizer);
  }

  nlohmann::json corpus_;
  nlohmann::json reference_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(TokenizerReferenceTest, ReferenceModelIsTheGoldenQwen3Tokenizer) {
  auto golden = Tokenizer::Open(twinspan::testing::GoldenPath("exl3_qwen3_tiny"));
  ASSERT_TRUE(golden.ok()) << golden.status();
  EXPECT_EQ(tokenizer_->sha256(), (*golden)->sha256());
  EXPECT_EQ(tokenizer_->sha256(),
            "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4");
}

TEST_F(TokenizerReferenceTest, CorpusIsAtLeastOneMegabyte) {
  size_t bytes = 0;
  for (const auto& doc : corpus_) bytes += doc.get<std::string>().size();
  EXPECT_GE(bytes, 1000000u);
}

TEST_F(TokenizerReferenceTest, EncodeMatchesReferenceIds) {
  int mismatches = 0;
  for (size_t d = 0; d < corpus_.size(); ++d) {
    const std::string doc = corpus_[d].get<std::string>();
    const std::vector<int32_t> expected = reference_["ids"][d].get<std::vector<int32_t>>();
    auto ids = tokenizer_->Encode(doc);
    ASSERT_TRUE(ids.ok()) << "document " << d << ": " << ids.status();
    if (*ids == expected) continue;
    size_t i = 0;
    while (i < ids->size() && i < expected.size() && (*ids)[i] == expected[i]) ++i;
    ADD_FAILURE() << "document " << d << " differs at token " << i << " of " << expected.size()
                  << ": ours " << (i < ids->size() ? (*ids)[i] : -1) << ", reference "
                  << (i < expected.size() ? expected[i] : -1) << "; text near there: "
                  << nlohmann::json(
                         tokenizer_->Decode(absl::MakeSpan(expected).subspan(i > 3 ? i - 3 : 0, 8))
                             .value_or("?"))
                         .dump();
    if (++mismatches >= 10) break;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_F(TokenizerReferenceTest, DecodeMatchesReferenceText) {
  for (size_t d = 0; d < corpus_.size(); ++d) {
    const std::vector<int32_t> ids = reference_["ids"][d].get<std::vector<int32_t>>();
    auto text = tokenizer_->Decode(ids);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(*text, reference_["decoded"][d].get<std::string>()) << "document " << d;
    auto skipped = tokenizer_->Decode(ids, /*skip_special=*/true);
    ASSERT_TRUE(skipped.ok()) << skipped.status();
    EXPECT_EQ(*skipped, reference_["decoded_skip_special"][d].get<std::string>())
        << "document " << d;
  }
}

TEST_F(TokenizerReferenceTest, DecodeOfEncodeIsTheNfcText) {
  int non_nfc = 0;
  for (size_t d = 0; d < corpus_.size(); ++d) {
    const std::string doc = corpus_[d].get<std::string>();
    const std::string nfc = reference_["nfc"][d].get<std::string>();
    if (doc != nfc) ++non_nfc;
    auto ids = tokenizer_->Encode(doc);
    ASSERT_TRUE(ids.ok()) << ids.status();
    auto text = tokenizer_->Decode(*ids);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(*text, nfc) << "document " << d;
  }
  // The corpus must exercise normalization, and many documents must round-trip byte for byte.
  EXPECT_GT(non_nfc, 0);
  EXPECT_GT(static_cast<int>(corpus_.size()) - non_nfc, 100);
}

TEST_F(TokenizerReferenceTest, StreamDecodeEqualsDecodeAndEmitsWholeCharacters) {
  for (size_t d = 0; d < corpus_.size(); ++d) {
    const std::vector<int32_t> ids = reference_["ids"][d].get<std::vector<int32_t>>();
    StreamDecoder stream(*tokenizer_);
    std::string joined;
    for (int32_t id : ids) {
      auto piece = stream.Add({id});
      ASSERT_TRUE(piece.ok()) << piece.status();
      ASSERT_TRUE(ValidateUtf8(*piece).ok()) << "document " << d;
      joined += *piece;
    }
    joined += stream.Finish();
    EXPECT_EQ(joined, reference_["decoded"][d].get<std::string>()) << "document " << d;
  }
}

}  // namespace
}  // namespace twinspan::tokenizer
