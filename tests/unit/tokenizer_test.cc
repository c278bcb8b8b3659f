#include "common/tokenizer/tokenizer.h"

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/stream_decoder.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/golden.h"

namespace twinspan::tokenizer {
namespace {

// A byte-level BPE with the 256 byte tokens (ids 0..255), a few merges and added tokens.
nlohmann::json TinyTokenizerJson(bool legacy_merges = false) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[BytesToByteLevel(std::string(1, static_cast<char>(b)))] = b;
  vocab["ab"] = 256;
  vocab["bc"] = 257;
  vocab["abc"] = 258;
  vocab
      ["\xC4\xA0"
       "a"] = 259;  // "Ġa": space + a
  nlohmann::json merges = nlohmann::json::array();
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"b", "c"}, {"a", "b"}, {"a", "bc"}, {"\xC4\xA0", "a"}};
  for (const auto& [a, b] : pairs) {
    if (legacy_merges) {
      merges.push_back(a + " " + b);
    } else {
      merges.push_back({a, b});
    }
  }
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens",
       {{{"id", 300},
         {"content", "<|s|>"},
         {"special", true},
         {"lstrip", false},
         {"rstrip", false},
         {"normalized", false},
         {"single_word", false}},
        {{"id", 301}, {"content", "<|s|>x"}, {"special", true}, {"normalized", false}},
        {{"id", 302}, {"content", "<tag>"}, {"special", false}, {"normalized", false}},
        {{"id", 303}, {"content", "[L]"}, {"special", true}, {"lstrip", true}, {"rstrip", true}}}},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", R"( ?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"byte_fallback", false},
        {"vocab", vocab},
        {"merges", merges}}},
  };
}

std::unique_ptr<Tokenizer> Make(const nlohmann::json& json) {
  auto tokenizer = Tokenizer::FromJsonBytes(json.dump(), "tiny");
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return tokenizer.ok() ? *std::move(tokenizer) : nullptr;
}

std::vector<int32_t> Ids(const Tokenizer& t, const std::string& text, bool parse_special = true) {
  auto ids = t.Encode(text, parse_special);
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

TEST(TokenizerTest, MergesApplyByRankNotByPosition) {
  auto t = Make(TinyTokenizerJson());
  ASSERT_NE(t, nullptr);
  // "abc": b+c (rank 0) beats a+b (rank 1), then a+bc makes "abc".
  EXPECT_EQ(Ids(*t, "abc"), std::vector<int32_t>({258}));
  EXPECT_EQ(Ids(*t, "ab"), std::vector<int32_t>({256}));
  EXPECT_EQ(Ids(*t, "abab"), std::vector<int32_t>({256, 256}));
  EXPECT_EQ(Ids(*t, "x a"), std::vector<int32_t>({'x', 259}));
}

TEST(TokenizerTest, BothMergeFormatsGiveTheSameIds) {
  auto modern = Make(TinyTokenizerJson(false));
  auto legacy = Make(TinyTokenizerJson(true));
  ASSERT_NE(modern, nullptr);
  ASSERT_NE(legacy, nullptr);
  for (const std::string text : {"abcab cab", "a b c", "bcabcabc"}) {
    EXPECT_EQ(Ids(*modern, text), Ids(*legacy, text)) << text;
  }
}

TEST(TokenizerTest, LongPiecesUseTheHeapPathWithTheSameResult) {
  auto t = Make(TinyTokenizerJson());
  ASSERT_NE(t, nullptr);
  std::string text;
  for (int i = 0; i < 100; ++i) text += "abc";
  const std::vector<int32_t> ids = Ids(*t, text);
  EXPECT_EQ(ids, std::vector<int32_t>(100, 258));
}

TEST(TokenizerTest, AddedTokensMatchLeftmostLongest) {
  auto t = Make(TinyTokenizerJson());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(Ids(*t, "<|s|>"), std::vector<int32_t>({300}));
  EXPECT_EQ(Ids(*t, "<|s|>x"), std::vector<int32_t>({301}));
  EXPECT_EQ(Ids(*t, "ab<tag>ab"), std::vector<int32_t>({256, 302, 256}));
}

TEST(TokenizerTest, ParseSpecialFalseKeepsSpecialTokensAsText) {
  auto t = Make(TinyTokenizerJson());
  ASSERT_NE(t, nullptr);
  const std::vector<int32_t> ids = Ids(*t, "<|s|><tag>", /*parse_special=*/false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.back(), 302);  // non-special added tokens are still parsed
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 300), 0);
  auto text = t->Decode(ids);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "<|s|><tag>");
}

TEST(TokenizerTest, LstripAndRstripSwallowWhitespace) {
  auto t = Make(TinyTokenizerJson());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(Ids(*t, "ab  [L] \n ab"), std::vector<int32_t>({256, 303, 256}));
}

TEST(TokenizerTest, NormalizesToNfcBeforeBpe) {
  auto t = Make(TinyTokenizerJson());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(Ids(*t, "e\xCC\x81"), Ids(*t, "\xC3\xA9"));
}

TEST(TokenizerTest, InvalidUtf8IsRefusedWithTheOffset) {
  auto t = Make(TinyTokenizerJson());
  ASSERT_NE(t, nullptr);
  auto ids = t->Encode("ab\xFF");
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(ids.status().message()).find("offset 2"), std::string::npos)
      << ids.status();
}

TEST(TokenizerTest, DecodeRefusesUnknownIdsAndSkipsSpecial) {
  auto t = Make(TinyTokenizerJson());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->vocab_size(), 304);
  EXPECT_FALSE(t->Decode({5000}).ok());
  EXPECT_FALSE(t->Decode({-1}).ok());
  EXPECT_FALSE(t->Decode({280}).ok());  // a hole between the vocab and the added tokens
  auto skipped = t->Decode({256, 300, 302}, /*skip_special=*/true);
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(*skipped, "ab<tag>");
  EXPECT_EQ(t->TokenId("<tag>"), 302);
  EXPECT_EQ(t->TokenId("abc"), 258);
  EXPECT_EQ(t->IdToToken(259),
            "\xC4\xA0"
            "a");
  EXPECT_FALSE(t->TokenId("nope").has_value());
}

TEST(TokenizerTest, StreamDecoderWaitsForWholeCharacters) {
  auto t = Make(TinyTokenizerJson());
  ASSERT_NE(t, nullptr);
  StreamDecoder stream(*t);
  // U+1F600 is F0 9F 98 80: four byte tokens.
  const int32_t bytes[] = {0xF0, 0x9F, 0x98, 0x80};
  for (int i = 0; i < 3; ++i) {
    auto piece = stream.Add({bytes[i]});
    ASSERT_TRUE(piece.ok());
    EXPECT_EQ(*piece, "");
  }
  auto last = stream.Add({bytes[3]});
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, "\xF0\x9F\x98\x80");
  auto partial = stream.Add({0xE4, 0xBD});
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(*partial, "");
  EXPECT_FALSE(stream.Add({9999}).ok());
  EXPECT_EQ(stream.Finish(), "\xEF\xBF\xBD");  // a truncated character flushes as U+FFFD
}

TEST(TokenizerTest, RefusesWhatItDoesNotImplement) {
  const auto refuse = [](nlohmann::json json, const std::string& expected) {
    auto t = Tokenizer::FromJsonBytes(json.dump(), "bad.json");
    ASSERT_FALSE(t.ok()) << expected;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(t.status().message()).find(expected), std::string::npos) << t.status();
    EXPECT_NE(std::string(t.status().message()).find("bad.json"), std::string::npos) << t.status();
  };
  nlohmann::json j = TinyTokenizerJson();
  j["model"]["type"] = "WordPiece";
  refuse(j, "WordPiece");
  j = TinyTokenizerJson();
  j["normalizer"] = {{"type", "Lowercase"}};
  refuse(j, "Lowercase");
  j = TinyTokenizerJson();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  refuse(j, "Whitespace");
  j = TinyTokenizerJson();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Isolated"}};
  refuse(j, "ByteLevel");
  j = TinyTokenizerJson();
  j["decoder"] = {{"type", "Metaspace"}};
  refuse(j, "Metaspace");
  j = TinyTokenizerJson();
  j["model"]["merges"].push_back({"c", "a"});
  refuse(j, "not in the vocab");
  j = TinyTokenizerJson();
  j["model"]["vocab"].erase("\xC4\xA0");
  refuse(j, "byte 32");
  j = TinyTokenizerJson();
  j["added_tokens"][0]["single_word"] = true;
  refuse(j, "single_word");
  j = TinyTokenizerJson();
  j["truncation"] = {{"max_length", 8}};
  refuse(j, "truncation");
  j = TinyTokenizerJson();  // ids index dense tables: a far id must not size them
  j["added_tokens"][3]["id"] = 2000000000;
  refuse(j, "token id 2000000000");
  j = TinyTokenizerJson();
  j["model"]["vocab"]["\xC4\xA0"] = 475000000;
  refuse(j, "token id 475000000");
  j = TinyTokenizerJson();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  refuse(j, "does not compile");
  EXPECT_FALSE(Tokenizer::FromJsonBytes("{not json", "x").ok());
  EXPECT_EQ(Tokenizer::Open("/nonexistent/tokenizer").status().code(), absl::StatusCode::kNotFound);
}

TEST(TokenizerTest, ConstMethodsAreSafeFromManyThreads) {
  auto t = Make(TinyTokenizerJson());
  ASSERT_NE(t, nullptr);
  const std::string text = "abc ab <|s|> a bcab 123 \xC3\xA9\xE4\xBD\xA0";
  const std::vector<int32_t> expected = Ids(*t, text);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < 500; ++i) {
        auto ids = t->Encode(text + std::to_string(i % 7));
        if (!ids.ok() || !std::equal(expected.begin(), expected.end(), ids->begin())) ++failures[k];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

// The real Qwen3 tokenizer gives the ids Hugging Face's Rust tokenizer gave for the golden prompt.
TEST(TokenizerTest, Qwen3MatchesTheGoldenPromptIds) {
  auto t = Tokenizer::Open(twinspan::testing::GoldenPath("exl3_qwen3_tiny"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->sha256(), "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4");
  std::ifstream in(twinspan::testing::GoldenPath("exl3_qwen3_tiny_ref/logits.safetensors"),
                   std::ios::binary);
  ASSERT_TRUE(in);
  uint64_t header_size = 0;
  in.read(reinterpret_cast<char*>(&header_size), 8);
  std::string header(header_size, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_size));
  const nlohmann::json meta = nlohmann::json::parse(header);
  const auto offsets = meta["input_ids"]["data_offsets"].get<std::vector<uint64_t>>();
  std::vector<int64_t> golden((offsets[1] - offsets[0]) / 8);
  in.seekg(static_cast<std::streamoff>(8 + header_size + offsets[0]));
  in.read(reinterpret_cast<char*>(golden.data()),
          static_cast<std::streamsize>(offsets[1] - offsets[0]));
  ASSERT_EQ(golden.size(), 10u);
  auto ids = (*t)->Encode("The quick brown fox jumps over the lazy dog, then EXL3 checks");
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_GE(ids->size(), golden.size());
  for (size_t i = 0; i < golden.size(); ++i) EXPECT_EQ((*ids)[i], golden[i]) << "token " << i;
  EXPECT_EQ((*t)->TokenId("<|im_end|>"), 151645);
  EXPECT_TRUE((*t)->IsSpecial(151645));
  EXPECT_FALSE((*t)->IsSpecial(151667));  // <think> is an added token, not a special one
}

// The generated Qwen3.5 tiny tokenizer: bytes only, GPT-2 regex inside ByteLevel, no normalizer.
TEST(TokenizerTest, Qwen35TinyByteTokenizerRoundTrips) {
  auto t = Tokenizer::Open(twinspan::testing::GoldenPath("exl3_qwen3_5_tiny"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->vocab_size(), 259);
  const std::string text = "<|im_start|>user\nHi \xC3\xA9<|im_end|>";
  auto ids = (*t)->Encode(text);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->front(), 257);
  EXPECT_EQ(ids->back(), 258);
  EXPECT_EQ(ids->size(), 2u + 10u);  // "user\nHi é" is 10 bytes
  auto back = (*t)->Decode(*ids);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, text);
}

}  // namespace
}  // namespace twinspan::tokenizer
