// PendingMerge (engine/pending_merge.h): the queues' pending indexes merged in the cycle's order,
// fair-share rank first, then each index's own order (priority, submit time, key).
// Threading: single-threaded.
#include "engine/pending_merge.h"

#include <gtest/gtest.h>

namespace tidal {
namespace {

std::set<GangHeadKey> Index(std::initializer_list<GangHeadKey> keys) { return std::set<GangHeadKey>(keys); }

std::vector<std::string> Drain(PendingMerge& m) {
  std::vector<std::string> out;
  while (const GangHeadKey* k = m.Next()) out.push_back(k->gang);
  return out;
}

TEST(PendingMergeTest, RankFirstThenIndexOrder) {
  const auto a = Index({{-10, 5, "a1"}, {0, 1, "a2"}});
  const auto b = Index({{-20, 9, "b1"}, {0, 0, "b2"}, {0, 3, "b3"}});
  const auto c = Index({{-30, 0, "c1"}});
  PendingMerge m;
  m.Add(1, a);
  m.Add(0, b);
  m.Add(1, c);
  // Rank 0 (b) first in its own order; then a and c interleaved by (priority, submit time, key).
  EXPECT_EQ(Drain(m), (std::vector<std::string>{"b1", "b2", "b3", "c1", "a1", "a2"}));
}

TEST(PendingMergeTest, PeekDoesNotTakeAndEmptyIndexesAreSkipped) {
  const auto a = Index({{0, 2, "x"}, {0, 1, "y"}});
  const std::set<GangHeadKey> none;
  PendingMerge m;
  m.Add(0, none);
  m.Add(0, a);
  ASSERT_NE(m.Peek(), nullptr);
  EXPECT_EQ(m.Peek()->gang, "y");
  EXPECT_EQ(m.Next()->gang, "y");
  EXPECT_EQ(m.Next()->gang, "x");
  EXPECT_EQ(m.Peek(), nullptr);
  EXPECT_EQ(m.Next(), nullptr);
}

}  // namespace
}  // namespace tidal
