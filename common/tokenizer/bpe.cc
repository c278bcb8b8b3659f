#include "common/tokenizer/bpe.h"

#include <algorithm>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/piece_cache.h"
#include "common/tokenizer/utf8.h"
#include "nlohmann/json.hpp"

namespace twinspan::tokenizer {
namespace {

// Pieces up to this many bytes merge by rescanning all pairs; longer ones use a heap.
constexpr size_t kQuadraticLimit = 48;

uint64_t PairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

bool IsEmptyOrNull(const nlohmann::json& model, const char* name) {
  if (!model.contains(name) || model[name].is_null()) return true;
  return model[name].is_string() && model[name].get<std::string>().empty();
}

absl::StatusOr<std::pair<std::string, std::string>> ParseMerge(const nlohmann::json& merge,
                                                               size_t index) {
  if (merge.is_string()) {
    std::vector<std::string> parts = absl::StrSplit(merge.get<std::string>(), ' ');
    if (parts.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.json: merge ", index, " is not two space-separated tokens"));
    }
    return std::make_pair(std::move(parts[0]), std::move(parts[1]));
  }
  if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
    return std::make_pair(merge[0].get<std::string>(), merge[1].get<std::string>());
  }
  return absl::InvalidArgumentError(
      absl::StrCat("tokenizer.json: merge ", index, " is neither \"a b\" nor [\"a\", \"b\"]"));
}

}  // namespace

BpeModel::BpeModel() : cache_(std::make_unique<PieceCache>()) {}
BpeModel::~BpeModel() = default;

absl::StatusOr<std::unique_ptr<BpeModel>> BpeModel::FromJson(const nlohmann::json& model) {
  if (!model.is_object())
    return absl::InvalidArgumentError("tokenizer.json: \"model\" is not an object");
  const std::string type = model.contains("type") && model["type"].is_string()
                               ? model["type"].get<std::string>()
                               : std::string("(missing)");
  if (type != "BPE") {
    return absl::InvalidArgumentError(absl::StrCat("tokenizer.json: model type \"", type,
                                                   "\" is not supported (only byte-level BPE)"));
  }
  if (model.contains("dropout") && !model["dropout"].is_null()) {
    return absl::InvalidArgumentError("tokenizer.json: BPE dropout is not supported");
  }
  if (model.contains("byte_fallback") && model["byte_fallback"].is_boolean() &&
      model["byte_fallback"].get<bool>()) {
    return absl::InvalidArgumentError("tokenizer.json: BPE byte_fallback is not supported");
  }
  if (!IsEmptyOrNull(model, "continuing_subword_prefix") ||
      !IsEmptyOrNull(model, "end_of_word_suffix")) {
    return absl::InvalidArgumentError(
        "tokenizer.json: BPE continuing_subword_prefix / end_of_word_suffix are not supported");
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return absl::InvalidArgumentError("tokenizer.json: BPE model without a \"vocab\" object");
  }
  if (!model.contains("merges") || !model["merges"].is_array()) {
    return absl::InvalidArgumentError("tokenizer.json: BPE model without a \"merges\" array");
  }
  auto bpe = std::unique_ptr<BpeModel>(new BpeModel());
  bpe->vocab_.reserve(model["vocab"].size());
  for (const auto& [token, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.json: vocab entry \"", token, "\" has no valid id"));
    }
    bpe->vocab_[token] = static_cast<int32_t>(id.get<int64_t>());
  }
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    AppendUtf8(ByteToCodePoint(static_cast<uint8_t>(b)), &ch);
    auto it = bpe->vocab_.find(ch);
    if (it == bpe->vocab_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.json: byte-level character for byte ", b, " (\"", ch,
                       "\") is not in the vocab"));
    }
    bpe->byte_ids_[b] = it->second;
  }
  const nlohmann::json& merges = model["merges"];
  bpe->merges_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    absl::StatusOr<std::pair<std::string, std::string>> merge = ParseMerge(merges[i], i);
    if (!merge.ok()) return merge.status();
    auto left = bpe->vocab_.find(merge->first);
    auto right = bpe->vocab_.find(merge->second);
    auto result = bpe->vocab_.find(merge->first + merge->second);
    if (left == bpe->vocab_.end() || right == bpe->vocab_.end() || result == bpe->vocab_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("tokenizer.json: merge ", i, " (\"",
                                                     merge->first, "\" + \"", merge->second,
                                                     "\") uses or makes a token not in the vocab"));
    }
    bpe->merges_[PairKey(left->second, right->second)] =
        (static_cast<uint64_t>(i) << 32) | static_cast<uint32_t>(result->second);
  }
  bpe->ignore_merges_ = model.contains("ignore_merges") && model["ignore_merges"].is_boolean() &&
                        model["ignore_merges"].get<bool>();
  if (bpe->ignore_merges_) {
    for (const auto& [token, id] : bpe->vocab_) {
      std::string bytes = ByteLevelTokenBytes(token);
      if (BytesToByteLevel(bytes) == token) bpe->bytes_to_id_[bytes] = id;
    }
  }
  return bpe;
}

void BpeModel::Encode(std::string_view piece, std::vector<int32_t>* ids) const {
  if (piece.empty()) return;
  if (piece.size() == 1) {
    ids->push_back(byte_ids_[static_cast<uint8_t>(piece[0])]);
    return;
  }
  if (ignore_merges_) {
    auto it = bytes_to_id_.find(absl::string_view(piece.data(), piece.size()));
    if (it != bytes_to_id_.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  if (cache_->Lookup(piece, ids)) return;
  const size_t first = ids->size();
  Merge(piece, ids);
  cache_->Insert(piece, ids->data() + first, ids->data() + ids->size());
}

void BpeModel::Merge(std::string_view piece, std::vector<int32_t>* ids) const {
  const size_t n = piece.size();
  if (n <= kQuadraticLimit) {
    int32_t symbols[kQuadraticLimit];
    for (size_t i = 0; i < n; ++i) symbols[i] = byte_ids_[static_cast<uint8_t>(piece[i])];
    size_t count = n;
    while (count > 1) {
      uint64_t best = UINT64_MAX;
      size_t best_pos = 0;
      for (size_t i = 0; i + 1 < count; ++i) {
        auto it = merges_.find(PairKey(symbols[i], symbols[i + 1]));
        if (it != merges_.end() && it->second < best) {
          best = it->second;
          best_pos = i;
        }
      }
      if (best == UINT64_MAX) break;
      symbols[best_pos] = static_cast<int32_t>(best & 0xFFFFFFFFu);
      std::copy(symbols + best_pos + 2, symbols + count, symbols + best_pos + 1);
      --count;
    }
    ids->insert(ids->end(), symbols, symbols + count);
    return;
  }
  // Linked list of symbols plus a min-heap of candidate merges keyed by (rank, position).
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
  };
  std::vector<Symbol> symbols(n);
  for (size_t i = 0; i < n; ++i) {
    symbols[i] = {byte_ids_[static_cast<uint8_t>(piece[i])], static_cast<int32_t>(i) - 1,
                  i + 1 < n ? static_cast<int32_t>(i + 1) : -1};
  }
  struct Candidate {
    uint64_t rank_and_id;  // rank << 32 | merged id
    int32_t pos;
    int32_t left_id;
    int32_t right_id;
    bool operator>(const Candidate& o) const {
      const uint64_t a = rank_and_id >> 32, b = o.rank_and_id >> 32;
      return a != b ? a > b : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto push = [&](int32_t pos) {
    if (pos < 0) return;
    const int32_t next = symbols[pos].next;
    if (next < 0) return;
    auto it = merges_.find(PairKey(symbols[pos].id, symbols[next].id));
    if (it != merges_.end()) heap.push({it->second, pos, symbols[pos].id, symbols[next].id});
  };
  for (size_t i = 0; i + 1 < n; ++i) push(static_cast<int32_t>(i));
  std::vector<bool> removed(n, false);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    if (removed[c.pos]) continue;
    const int32_t next = symbols[c.pos].next;
    if (next < 0 || symbols[c.pos].id != c.left_id || symbols[next].id != c.right_id) continue;
    symbols[c.pos].id = static_cast<int32_t>(c.rank_and_id & 0xFFFFFFFFu);
    removed[next] = true;
    symbols[c.pos].next = symbols[next].next;
    if (symbols[next].next >= 0) symbols[symbols[next].next].prev = c.pos;
    push(symbols[c.pos].prev);
    push(c.pos);
  }
  for (int32_t pos = 0; pos >= 0; pos = symbols[pos].next) ids->push_back(symbols[pos].id);
}

}  // namespace twinspan::tokenizer
