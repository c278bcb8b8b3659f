// The cache of recent prompt prefixes, by token blocks: block i of a prompt is its tokens
// [i * B, (i + 1) * B), stored under the blocks before it, so prompts that share a beginning share
// its blocks. What a block holds (K/V rows, a recurrent state) is its owner's business: a
// CachedBlock. A memory bound evicts the least recently used blocks, leaves first, so every cached
// block's ancestors are cached too and a match is always a whole chain from the first block.
#ifndef TWINSPAN_SERVICES_PREFIX_PREFIX_TREE_H_
#define TWINSPAN_SERVICES_PREFIX_PREFIX_TREE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"

namespace twinspan::prefix {

// One block's state, owned by the tree. Its destructor frees it (on the owner's device).
class CachedBlock {
 public:
  virtual ~CachedBlock() = default;
  // What the block occupies, counted against PrefixTreeOptions::max_bytes.
  virtual size_t bytes() const = 0;
};

struct PrefixTreeOptions {
  int64_t block_tokens = 256;  // B: tokens per block, in [1, 65536]
  size_t max_bytes = 0;        // the bound on the blocks' bytes; 0 keeps nothing
  // InvalidArgument naming the field.
  absl::Status Validate() const;
};

// What the tree holds and has done, for metrics.
struct PrefixTreeStats {
  int64_t blocks = 0;
  size_t bytes = 0;
  int64_t evicted_blocks = 0;
};

// Not thread-safe: its owner serializes every call (and frees blocks on the right thread).
class PrefixTree {
 public:
  // REQUIRES: options.Validate() is OK.
  explicit PrefixTree(const PrefixTreeOptions& options);
  ~PrefixTree();
  PrefixTree(const PrefixTree&) = delete;
  PrefixTree& operator=(const PrefixTree&) = delete;

  int64_t block_tokens() const { return options_.block_tokens; }

  // The cached blocks 0, 1, ... of `tokens`, as many as are cached in a row, at most
  // `max_blocks`; each is marked used now. Whole blocks only: a tail shorter than B never matches.
  std::vector<const CachedBlock*> Match(absl::Span<const uint32_t> tokens, int64_t max_blocks);
  // Match with the blocks as the owner's type. REQUIRES: every block inserted is a T.
  template <typename T>
  std::vector<const T*> MatchAs(absl::Span<const uint32_t> tokens, int64_t max_blocks) {
    std::vector<const T*> blocks;
    for (const CachedBlock* block : Match(tokens, max_blocks)) {
      blocks.push_back(static_cast<const T*>(block));
    }
    return blocks;
  }
  // True when block `index` of `tokens` (and so every block before it) is cached. Marks nothing.
  bool Contains(absl::Span<const uint32_t> tokens, int64_t index) const;
  // The blocks Match would return, marked nothing: for the owner's bookkeeping on its blocks.
  std::vector<CachedBlock*> Peek(absl::Span<const uint32_t> tokens, int64_t max_blocks);

  // Caches `block` as block `index` of `tokens`, marked used now, then evicts least recently used
  // blocks until the bound holds (the new block itself when it alone exceeds the bound).
  // FailedPrecondition when block index - 1 is not cached (an evicted parent: nothing is stored);
  // AlreadyExists when block `index` is; InvalidArgument when `tokens` ends before the block or
  // `block` is null.
  absl::Status Insert(absl::Span<const uint32_t> tokens, int64_t index,
                      std::unique_ptr<CachedBlock> block);

  // Drops every block.
  void Clear();
  PrefixTreeStats stats() const;

 private:
  struct Node;
  // Block `index` of `tokens` as a map key (its bytes).
  std::string Key(absl::Span<const uint32_t> tokens, int64_t index) const;
  // The node of block `index`, or null; REQUIRES: tokens hold that block.
  Node* Find(absl::Span<const uint32_t> tokens, int64_t index) const;
  // The nodes of blocks 0, 1, ... of `tokens`, as many as are cached in a row, at most
  // `max_blocks`; marks nothing.
  std::vector<Node*> Chain(absl::Span<const uint32_t> tokens, int64_t max_blocks) const;
  // Moves `node` and its ancestors to the front of the LRU list, ancestors first, so a parent is
  // always more recent than its children and the list's back is a leaf.
  void Touch(Node* node);
  // Removes the least recently used block (a leaf).
  void EvictOne();

  const PrefixTreeOptions options_;
  std::unique_ptr<Node> root_;  // holds no block; its children are the first blocks
  std::list<Node*> lru_;        // most recently used first; every node but the root
  PrefixTreeStats stats_;
};

}  // namespace twinspan::prefix

#endif  // TWINSPAN_SERVICES_PREFIX_PREFIX_TREE_H_
