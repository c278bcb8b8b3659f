#include "services/prefix/prefix_tree.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"

namespace twinspan::prefix {

struct PrefixTree::Node {
  Node* parent = nullptr;
  std::string key;  // the block's tokens as bytes (empty for the root)
  std::unique_ptr<CachedBlock> block;
  absl::flat_hash_map<std::string, std::unique_ptr<Node>> children;
  std::list<Node*>::iterator lru;
};

absl::Status PrefixTreeOptions::Validate() const {
  if (block_tokens < 1 || block_tokens > 65536) {
    return absl::InvalidArgumentError(
        absl::StrFormat("prefix cache block size %d tokens is outside [1, 65536]", block_tokens));
  }
  return absl::OkStatus();
}

PrefixTree::PrefixTree(const PrefixTreeOptions& options)
    : options_(options), root_(std::make_unique<Node>()) {}

PrefixTree::~PrefixTree() { Clear(); }

std::string PrefixTree::Key(absl::Span<const uint32_t> tokens, int64_t index) const {
  const uint32_t* first = tokens.data() + index * options_.block_tokens;
  return std::string(reinterpret_cast<const char*>(first),
                     static_cast<size_t>(options_.block_tokens) * sizeof(uint32_t));
}

PrefixTree::Node* PrefixTree::Find(absl::Span<const uint32_t> tokens, int64_t index) const {
  Node* node = root_.get();
  for (int64_t i = 0; i <= index && node != nullptr; ++i) {
    auto it = node->children.find(Key(tokens, i));
    node = it == node->children.end() ? nullptr : it->second.get();
  }
  return node;
}

std::vector<PrefixTree::Node*> PrefixTree::Chain(absl::Span<const uint32_t> tokens,
                                                 int64_t max_blocks) const {
  std::vector<Node*> chain;
  const int64_t whole = static_cast<int64_t>(tokens.size()) / options_.block_tokens;
  Node* node = root_.get();
  for (int64_t i = 0; i < std::min(whole, max_blocks); ++i) {
    auto it = node->children.find(Key(tokens, i));
    if (it == node->children.end()) break;
    node = it->second.get();
    chain.push_back(node);
  }
  return chain;
}

std::vector<const CachedBlock*> PrefixTree::Match(absl::Span<const uint32_t> tokens,
                                                  int64_t max_blocks) {
  const std::vector<Node*> chain = Chain(tokens, max_blocks);
  std::vector<const CachedBlock*> blocks;
  blocks.reserve(chain.size());
  for (Node* node : chain) blocks.push_back(node->block.get());
  if (!chain.empty()) Touch(chain.back());
  return blocks;
}

std::vector<CachedBlock*> PrefixTree::Peek(absl::Span<const uint32_t> tokens, int64_t max_blocks) {
  const std::vector<Node*> chain = Chain(tokens, max_blocks);
  std::vector<CachedBlock*> blocks;
  blocks.reserve(chain.size());
  for (Node* node : chain) blocks.push_back(node->block.get());
  return blocks;
}

bool PrefixTree::Contains(absl::Span<const uint32_t> tokens, int64_t index) const {
  if (index < 0 || (index + 1) * options_.block_tokens > static_cast<int64_t>(tokens.size())) {
    return false;
  }
  return Find(tokens, index) != nullptr;
}

absl::Status PrefixTree::Insert(absl::Span<const uint32_t> tokens, int64_t index,
                                std::unique_ptr<CachedBlock> block) {
  if (index < 0 || (index + 1) * options_.block_tokens > static_cast<int64_t>(tokens.size())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("prefix cache: block %d of %d tokens needs %d tokens", index,
                        options_.block_tokens, (index + 1) * options_.block_tokens));
  }
  if (block == nullptr) return absl::InvalidArgumentError("prefix cache: a null block");
  Node* parent = index == 0 ? root_.get() : Find(tokens, index - 1);
  if (parent == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrFormat("prefix cache: block %d's parent is not cached", index));
  }
  std::string key = Key(tokens, index);
  if (parent->children.contains(key)) {
    return absl::AlreadyExistsError(absl::StrFormat("prefix cache: block %d is cached", index));
  }
  auto node = std::make_unique<Node>();
  node->parent = parent;
  node->key = key;
  node->block = std::move(block);
  stats_.bytes += node->block->bytes();
  stats_.blocks += 1;
  lru_.push_front(node.get());
  node->lru = lru_.begin();
  Node* added = node.get();
  parent->children.emplace(std::move(key), std::move(node));
  Touch(added);
  while (stats_.bytes > options_.max_bytes && !lru_.empty()) EvictOne();
  return absl::OkStatus();
}

void PrefixTree::Touch(Node* node) {
  std::vector<Node*> chain;
  for (Node* n = node; n != root_.get(); n = n->parent) chain.push_back(n);
  // Leaf first, so the first block ends at the front: ancestors are always more recent.
  for (Node* n : chain) lru_.splice(lru_.begin(), lru_, n->lru);
}

void PrefixTree::EvictOne() {
  Node* victim = lru_.back();
  lru_.pop_back();
  stats_.bytes -= victim->block->bytes();
  stats_.blocks -= 1;
  stats_.evicted_blocks += 1;
  // The back is a leaf (see Touch); erasing it from its parent frees it.
  const std::string key = victim->key;
  victim->parent->children.erase(key);
}

void PrefixTree::Clear() {
  while (!lru_.empty()) {
    EvictOne();
    stats_.evicted_blocks -= 1;  // Cleared, not evicted.
  }
}

PrefixTreeStats PrefixTree::stats() const { return stats_; }

}  // namespace twinspan::prefix
