// PrefixTree: prompts share their common blocks, a match is the longest cached chain of whole
// blocks, and the byte bound evicts least recently used leaves first, so a cached block's
// ancestors are always cached.
#include "services/prefix/prefix_tree.h"

#include <memory>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace twinspan::prefix {
namespace {

// A block that records its own destruction.
class FakeBlock : public CachedBlock {
 public:
  FakeBlock(size_t bytes, int* freed) : bytes_(bytes), freed_(freed) {}
  ~FakeBlock() override { *freed_ += 1; }
  size_t bytes() const override { return bytes_; }

 private:
  size_t bytes_;
  int* freed_;
};

std::vector<uint32_t> Tokens(int n, uint32_t first) {
  std::vector<uint32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

class PrefixTreeTest : public ::testing::Test {
 protected:
  std::unique_ptr<CachedBlock> Block(size_t bytes = 10) {
    return std::make_unique<FakeBlock>(bytes, &freed_);
  }
  // Caches every whole block of `tokens` in order.
  void InsertAll(PrefixTree& tree, const std::vector<uint32_t>& tokens) {
    for (int64_t i = 0; i < static_cast<int64_t>(tokens.size()) / tree.block_tokens(); ++i) {
      if (tree.Contains(tokens, i)) continue;
      ASSERT_TRUE(tree.Insert(tokens, i, Block()).ok()) << i;
    }
  }
  int freed_ = 0;
};

TEST_F(PrefixTreeTest, MatchesTheLongestChainOfWholeCachedBlocks) {
  PrefixTree tree({4, 1000});
  const std::vector<uint32_t> a = Tokens(14, 0);  // blocks [0,4) [4,8) [8,12), tail of 2
  InsertAll(tree, a);
  EXPECT_EQ(tree.stats().blocks, 3);
  EXPECT_EQ(tree.Match(a, 10).size(), 3u);
  EXPECT_EQ(tree.Match(a, 2).size(), 2u);
  std::vector<uint32_t> b = a;
  b[5] = 99;  // differs in block 1
  EXPECT_EQ(tree.Match(b, 10).size(), 1u);
  EXPECT_EQ(tree.Match(Tokens(3, 0), 10).size(), 0u);  // shorter than a block
  EXPECT_EQ(tree.Match(Tokens(8, 1), 10).size(), 0u);
  // b shares block 0 with a: one new block under it.
  InsertAll(tree, b);
  EXPECT_EQ(tree.stats().blocks, 5);
  EXPECT_EQ(tree.Match(b, 10).size(), 3u);
  EXPECT_EQ(tree.stats().bytes, 50u);
}

TEST_F(PrefixTreeTest, RefusesABlockWithoutItsParentOrTwice) {
  PrefixTree tree({4, 1000});
  const std::vector<uint32_t> a = Tokens(12, 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(tree.Insert(a, 1, Block())));
  ASSERT_TRUE(tree.Insert(a, 0, Block()).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(tree.Insert(a, 0, Block())));
  EXPECT_TRUE(absl::IsInvalidArgument(tree.Insert(a, 3, Block())));  // past the tokens
  EXPECT_TRUE(absl::IsInvalidArgument(tree.Insert(a, 1, nullptr)));
  EXPECT_EQ(tree.stats().blocks, 1);
  EXPECT_EQ(freed_, 3);  // The three refused blocks, freed at once.
  EXPECT_FALSE(tree.Contains(a, 1));
  EXPECT_FALSE(tree.Contains(a, 5));
}

TEST_F(PrefixTreeTest, PeeksAtTheMatchWithoutMarkingItUsed) {
  PrefixTree tree({4, 30});  // three blocks of 10 bytes
  const std::vector<uint32_t> a = Tokens(10, 0), b = Tokens(4, 100);
  InsertAll(tree, a);
  ASSERT_TRUE(tree.Insert(b, 0, Block()).ok());
  const std::vector<CachedBlock*> peeked = tree.Peek(a, 10);
  ASSERT_EQ(peeked.size(), 2u);
  const std::vector<const CachedBlock*> matched = tree.Match(a, 10);
  EXPECT_EQ(std::vector<const CachedBlock*>(peeked.begin(), peeked.end()), matched);
  EXPECT_EQ(tree.Peek(a, 1).size(), 1u);
  std::vector<uint32_t> a2 = a;
  a2[6] = 99;  // differs in block 1
  EXPECT_EQ(tree.Peek(a2, 10).size(), 1u);
  EXPECT_TRUE(tree.Peek(Tokens(3, 0), 10).empty());  // shorter than a block
  // b is now the least recent; peeking at it leaves it so: the next block pushes it out.
  EXPECT_EQ(tree.Peek(b, 10).size(), 1u);
  ASSERT_TRUE(tree.Insert(Tokens(4, 200), 0, Block()).ok());
  EXPECT_TRUE(tree.Peek(b, 10).empty());
  EXPECT_EQ(tree.Peek(a, 10).size(), 2u);
}

TEST_F(PrefixTreeTest, EvictsLeastRecentlyUsedLeavesFirst) {
  PrefixTree tree({4, 50});  // five blocks of 10 bytes
  const std::vector<uint32_t> a = Tokens(12, 0), b = Tokens(8, 100);
  InsertAll(tree, a);  // a0 a1 a2
  InsertAll(tree, b);  // b0 b1
  EXPECT_EQ(tree.stats().blocks, 5);
  EXPECT_EQ(tree.Match(a, 1).size(), 1u);  // a0 is now the most recent; a1, a2 the oldest
  const std::vector<uint32_t> c = Tokens(4, 200);
  ASSERT_TRUE(tree.Insert(c, 0, Block()).ok());
  // The least recent leaf was a2 (a1 is its parent, never evicted before it).
  EXPECT_EQ(tree.stats().blocks, 5);
  EXPECT_EQ(tree.stats().evicted_blocks, 1);
  EXPECT_EQ(tree.Match(a, 10).size(), 2u);
  ASSERT_TRUE(tree.Insert(Tokens(4, 300), 0, Block()).ok());
  ASSERT_TRUE(tree.Insert(Tokens(4, 400), 0, Block()).ok());
  // Then b's chain, leaf first: b1, b0.
  EXPECT_EQ(tree.Match(b, 10).size(), 0u);
  EXPECT_EQ(tree.Match(a, 10).size(), 2u);
  EXPECT_EQ(freed_, 3);
}

TEST_F(PrefixTreeTest, ABlockLargerThanTheBoundIsNotKept) {
  PrefixTree tree({4, 15});
  const std::vector<uint32_t> a = Tokens(8, 0);
  ASSERT_TRUE(tree.Insert(a, 0, Block(10)).ok());
  ASSERT_TRUE(tree.Insert(a, 1, Block(20)).ok());  // Evicts itself: over the bound alone.
  EXPECT_EQ(tree.stats().blocks, 1);
  EXPECT_EQ(tree.stats().bytes, 10u);
  PrefixTree none({4, 0});
  ASSERT_TRUE(none.Insert(a, 0, Block(1)).ok());
  EXPECT_EQ(none.stats().blocks, 0);
  tree.Clear();
  EXPECT_EQ(tree.stats().blocks, 0);
  EXPECT_EQ(tree.stats().evicted_blocks, 1);  // Clear is not eviction.
  EXPECT_EQ(freed_, 3);
  EXPECT_TRUE(absl::IsInvalidArgument(PrefixTreeOptions{0, 1}.Validate()));
}

}  // namespace
}  // namespace twinspan::prefix
