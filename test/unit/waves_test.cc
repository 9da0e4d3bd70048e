// Rolling-upgrade waves (engine/waves.h): packing by node count and by topology domain, rigid
// gangs kept whole in one wave, elastic gangs not linking, gangs partly outside the set, the
// notes, the errors, determinism and a 10,000-node partition.
// Threading: single-threaded; pure functions.
#include "engine/waves.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

namespace tidal {
namespace {

// Nodes "b<B>-l<L>-n<K>" with domains {"block-<B>", "leaf-<L>"}.
std::vector<WaveNode> Fleet(int blocks, int leaves, int per_leaf) {
  std::vector<WaveNode> v;
  for (int b = 0; b < blocks; ++b)
    for (int l = 0; l < leaves; ++l)
      for (int k = 0; k < per_leaf; ++k)
        v.push_back({"b" + std::to_string(b) + "-l" + std::to_string(l) + "-n" + std::to_string(k),
                     {"block-" + std::to_string(b), "leaf-" + std::to_string(l)}});
  return v;
}

WaveOptions ByCount(int32_t n) {
  WaveOptions o;
  o.max_nodes = n;
  return o;
}
WaveOptions ByDomain(int32_t level) {
  WaveOptions o;
  o.domain_level = level;
  return o;
}

WavePlan Plan(const std::vector<WaveNode>& nodes, const std::vector<WaveGang>& gangs, const WaveOptions& o) {
  auto r = PlanWaves(nodes, gangs, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : WavePlan{};
}

std::vector<std::string> Names(std::initializer_list<const char*> v) { return {v.begin(), v.end()}; }

// Every node in exactly one wave, none from outside; every rigid gang's in-set nodes in one wave,
// listed there (and only there); elastic gangs never listed; sorted nodes and gangs.
void ExpectValid(const WavePlan& plan, const std::vector<WaveNode>& nodes, const std::vector<WaveGang>& gangs) {
  std::map<std::string, size_t> wave_of;
  std::set<std::string> in_set;
  for (const auto& n : nodes) in_set.insert(n.name);
  std::map<std::string, std::vector<size_t>> gang_waves;
  for (size_t w = 0; w < plan.waves.size(); ++w) {
    const Wave& wave = plan.waves[w];
    EXPECT_FALSE(wave.nodes.empty()) << "wave " << w + 1;
    EXPECT_TRUE(std::is_sorted(wave.nodes.begin(), wave.nodes.end())) << "wave " << w + 1;
    EXPECT_TRUE(std::is_sorted(wave.gangs.begin(), wave.gangs.end())) << "wave " << w + 1;
    for (const auto& n : wave.nodes) {
      EXPECT_TRUE(in_set.count(n)) << n << " is not in the upgrade set";
      EXPECT_TRUE(wave_of.emplace(n, w).second) << n << " is in two waves";
    }
    for (const auto& g : wave.gangs) gang_waves[g].push_back(w);
  }
  EXPECT_EQ(wave_of.size(), in_set.size());
  for (const auto& g : gangs) {
    std::set<size_t> waves;
    for (const auto& n : g.nodes)
      if (wave_of.count(n)) waves.insert(wave_of[n]);
    if (g.elastic || waves.empty()) {
      EXPECT_FALSE(gang_waves.count(g.id)) << g.id << " should not be listed";
      continue;
    }
    ASSERT_EQ(waves.size(), 1u) << "rigid gang " << g.id << " is split";
    ASSERT_EQ(gang_waves[g.id].size(), 1u) << g.id;
    EXPECT_EQ(gang_waves[g.id][0], *waves.begin()) << g.id;
  }
}

TEST(Waves, PacksByMaxNodesInTopologyOrder) {
  auto nodes = Fleet(1, 2, 4);  // leaf-0: b0-l0-n0..3, leaf-1: b0-l1-n0..3
  WavePlan p = Plan(nodes, {}, ByCount(3));
  ExpectValid(p, nodes, {});
  ASSERT_EQ(p.waves.size(), 3u);
  EXPECT_EQ(p.waves[0].nodes, Names({"b0-l0-n0", "b0-l0-n1", "b0-l0-n2"}));
  EXPECT_EQ(p.waves[1].nodes, Names({"b0-l0-n3", "b0-l1-n0", "b0-l1-n1"}));
  EXPECT_EQ(p.waves[2].nodes, Names({"b0-l1-n2", "b0-l1-n3"}));
  EXPECT_EQ(p.waves[0].why, "3 nodes (max 3) in block-0/leaf-0");
  EXPECT_EQ(p.waves[1].why, "3 nodes (max 3) in block-0");
  EXPECT_TRUE(p.notes.empty());

  // A leaf's worth per wave: the waves are exactly the leaves.
  p = Plan(nodes, {}, ByCount(4));
  ASSERT_EQ(p.waves.size(), 2u);
  EXPECT_EQ(p.waves[0].why, "4 nodes (max 4) in block-0/leaf-0");
  EXPECT_EQ(p.waves[1].why, "4 nodes (max 4) in block-0/leaf-1");

  // Topology, not input or name order, decides: a node named "a" on leaf-1 comes after leaf-0.
  std::vector<WaveNode> mixed = {{"a", {"block-0", "leaf-1"}}, {"z", {"block-0", "leaf-0"}}, {"m", {"block-0", "leaf-0"}}};
  p = Plan(mixed, {}, ByCount(2));
  ASSERT_EQ(p.waves.size(), 2u);
  EXPECT_EQ(p.waves[0].nodes, Names({"m", "z"}));
  EXPECT_EQ(p.waves[1].nodes, Names({"a"}));
}

TEST(Waves, RigidGangSpanningTwoLeavesKeepsItsNodesTogether) {
  auto nodes = Fleet(1, 2, 4);
  std::vector<WaveGang> gangs = {{"team/train", {"b0-l0-n3", "b0-l1-n0"}, false},
                                 {"team/solo", {"b0-l1-n3"}, false}};
  WavePlan p = Plan(nodes, gangs, ByCount(4));
  ExpectValid(p, nodes, gangs);
  ASSERT_EQ(p.waves.size(), 3u);
  EXPECT_EQ(p.waves[0].nodes, Names({"b0-l0-n0", "b0-l0-n1", "b0-l0-n2"}));
  EXPECT_TRUE(p.waves[0].gangs.empty());
  EXPECT_EQ(p.waves[1].nodes, Names({"b0-l0-n3", "b0-l1-n0", "b0-l1-n1", "b0-l1-n2"}));
  EXPECT_EQ(p.waves[1].gangs, Names({"team/train"}));
  EXPECT_EQ(p.waves[2].nodes, Names({"b0-l1-n3"}));
  EXPECT_EQ(p.waves[2].gangs, Names({"team/solo"}));
  EXPECT_TRUE(p.notes.empty());
}

TEST(Waves, ElasticGangDoesNotLinkNodes) {
  auto nodes = Fleet(1, 2, 4);
  std::vector<WaveGang> gangs = {{"team/elastic", {"b0-l0-n3", "b0-l1-n0", "b0-l1-n1"}, true}};
  WavePlan p = Plan(nodes, gangs, ByCount(4));
  ExpectValid(p, nodes, gangs);
  ASSERT_EQ(p.waves.size(), 2u);  // the leaves, as with no gang at all
  EXPECT_EQ(p.waves[0].nodes, Names({"b0-l0-n0", "b0-l0-n1", "b0-l0-n2", "b0-l0-n3"}));
  EXPECT_TRUE(p.waves[0].gangs.empty());
  EXPECT_TRUE(p.waves[1].gangs.empty());
  // Same in domain mode: no merge.
  p = Plan(nodes, gangs, ByDomain(1));
  ASSERT_EQ(p.waves.size(), 2u);
  EXPECT_TRUE(p.notes.empty());
}

TEST(Waves, OversizeGroupIsItsOwnWaveWithANote) {
  auto nodes = Fleet(1, 2, 4);
  // Two rigid gangs chained over 5 nodes: one group of 5 > 2.
  std::vector<WaveGang> gangs = {{"team/train", {"b0-l0-n1", "b0-l0-n2", "b0-l0-n3"}, false},
                                 {"team/eval", {"b0-l0-n3", "b0-l1-n0", "b0-l1-n1"}, false}};
  WavePlan p = Plan(nodes, gangs, ByCount(2));
  ExpectValid(p, nodes, gangs);
  ASSERT_EQ(p.waves.size(), 3u);
  EXPECT_EQ(p.waves[0].nodes, Names({"b0-l0-n0"}));  // the group of 5 does not join it
  EXPECT_EQ(p.waves[1].nodes, Names({"b0-l0-n1", "b0-l0-n2", "b0-l0-n3", "b0-l1-n0", "b0-l1-n1"}));
  EXPECT_EQ(p.waves[1].gangs, Names({"team/eval", "team/train"}));
  EXPECT_EQ(p.waves[1].why, "5 nodes > max 2: rigid gangs team/eval, team/train span them");
  EXPECT_EQ(p.waves[2].nodes, Names({"b0-l1-n2", "b0-l1-n3"}));
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_EQ(p.notes[0], "wave 2 has 5 nodes > 2: rigid gangs team/eval, team/train span them");

  // One gang: the singular.
  gangs = {{"team/train", {"b0-l0-n0", "b0-l0-n1", "b0-l0-n2"}, false}};
  p = Plan(nodes, gangs, ByCount(2));
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_EQ(p.notes[0], "wave 1 has 3 nodes > 2: rigid gang team/train spans them");
}

TEST(Waves, DomainModeOneWavePerDomainAndMergesLinkedDomains) {
  auto nodes = Fleet(2, 3, 2);  // block-0 and block-1, each leaf-0..2 (the leaf names repeat)
  WavePlan p = Plan(nodes, {}, ByDomain(1));
  ExpectValid(p, nodes, {});
  ASSERT_EQ(p.waves.size(), 6u);  // block-0/leaf-1 and block-1/leaf-1 are two domains
  EXPECT_EQ(p.waves[0].nodes, Names({"b0-l0-n0", "b0-l0-n1"}));
  EXPECT_EQ(p.waves[0].why, "domain block-0/leaf-0 (level 1)");
  EXPECT_EQ(p.waves[5].why, "domain block-1/leaf-2 (level 1)");
  p = Plan(nodes, {}, ByDomain(0));
  ASSERT_EQ(p.waves.size(), 2u);
  EXPECT_EQ(p.waves[1].why, "domain block-1 (level 0)");
  EXPECT_EQ(p.waves[1].nodes.size(), 6u);

  // A rigid gang over block-0/leaf-0 and block-0/leaf-2 merges them; an in-leaf gang merges nothing.
  std::vector<WaveGang> gangs = {{"team/train", {"b0-l2-n1", "b0-l0-n0"}, false},
                                 {"team/local", {"b1-l1-n0", "b1-l1-n1"}, false}};
  p = Plan(nodes, gangs, ByDomain(1));
  ExpectValid(p, nodes, gangs);
  ASSERT_EQ(p.waves.size(), 5u);
  EXPECT_EQ(p.waves[0].nodes, Names({"b0-l0-n0", "b0-l0-n1", "b0-l2-n0", "b0-l2-n1"}));
  EXPECT_EQ(p.waves[0].gangs, Names({"team/train"}));
  EXPECT_EQ(p.waves[0].why, "domains block-0/leaf-0, block-0/leaf-2 (level 1) merged: rigid gang team/train spans them");
  EXPECT_EQ(p.waves[1].why, "domain block-0/leaf-1 (level 1)");
  EXPECT_EQ(p.waves[3].nodes, Names({"b1-l1-n0", "b1-l1-n1"}));
  EXPECT_EQ(p.waves[3].gangs, Names({"team/local"}));
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_EQ(p.notes[0], "wave 1 merges domains block-0/leaf-0, block-0/leaf-2 (level 1): rigid gang team/train spans them");
}

TEST(Waves, DomainModeNodeWithTooFewLevelsIsAnError) {
  std::vector<WaveNode> nodes = {{"n0", {"block-0", "leaf-0", "nvl-0"}}, {"n1", {"block-0"}}};
  auto r = PlanWaves(nodes, {}, ByDomain(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kError);
  EXPECT_EQ(r.status().Message(), "waves.nodes[1].domains: node \"n1\" has 1 domain level; domain_level 1 needs 2");
  EXPECT_TRUE(PlanWaves(nodes, {}, ByDomain(0)).ok());
  EXPECT_TRUE(PlanWaves(nodes, {}, ByCount(1)).ok());  // levels do not matter by count
}

TEST(Waves, ErrorsNameTheField) {
  auto nodes = Fleet(1, 1, 2);
  auto msg = [](const StatusOr<WavePlan>& r) { return r.ok() ? std::string("ok") : r.status().Message(); };
  WaveOptions both;
  both.max_nodes = 4;
  both.domain_level = 0;
  EXPECT_EQ(msg(PlanWaves(nodes, {}, both)), "waves: give max_nodes or domain_level, not both");
  EXPECT_EQ(msg(PlanWaves(nodes, {}, WaveOptions{})), "waves: give max_nodes or domain_level, not both");
  EXPECT_EQ(msg(PlanWaves(nodes, {}, ByCount(-3))), "waves.max_nodes: must be >= 0 (0 = unset), got -3");
  EXPECT_EQ(msg(PlanWaves(nodes, {}, ByDomain(-2))), "waves.domain_level: must be >= 0 (-1 = unset), got -2");

  auto dup = nodes;
  dup.push_back({"b0-l0-n0", {"block-0", "leaf-0"}});
  EXPECT_EQ(msg(PlanWaves(dup, {}, ByCount(4))), "waves.nodes[2].name: duplicate node \"b0-l0-n0\" (also waves.nodes[0])");
  auto empty = nodes;
  empty.insert(empty.begin() + 1, WaveNode{"", {"block-0"}});
  EXPECT_EQ(msg(PlanWaves(empty, {}, ByCount(4))), "waves.nodes[1].name: empty node name");

  EXPECT_EQ(msg(PlanWaves(nodes, {{"", {"b0-l0-n0"}, false}}, ByCount(4))), "waves.gangs[0].id: empty gang id");
  EXPECT_EQ(msg(PlanWaves(nodes, {{"a/x", {}, false}, {"a/x", {}, true}}, ByCount(4))),
            "waves.gangs[1].id: duplicate gang \"a/x\" (also waves.gangs[0])");

  // Nothing to upgrade is not an error: no waves.
  auto none = PlanWaves({}, {{"a/x", {"elsewhere"}, false}}, ByCount(4));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->waves.empty());
  EXPECT_TRUE(none->notes.empty());
}

TEST(Waves, GangPartlyOutsideTheSet) {
  auto nodes = Fleet(1, 2, 2);
  std::vector<WaveGang> gangs = {
      {"team/train", {"b0-l0-n1", "other-7", "b0-l1-n0", "other-8", "other-7"}, false},  // other-* not upgraded
      {"team/away", {"other-1", "other-2"}, false},                                        // wholly outside
      {"team/wide", {"b0-l1-n1", "other-3"}, true}};                                       // elastic: no note
  WavePlan p = Plan(nodes, gangs, ByCount(2));
  ExpectValid(p, nodes, gangs);
  ASSERT_EQ(p.waves.size(), 3u);
  EXPECT_EQ(p.waves[0].nodes, Names({"b0-l0-n0"}));
  EXPECT_EQ(p.waves[1].nodes, Names({"b0-l0-n1", "b0-l1-n0"}));
  EXPECT_EQ(p.waves[1].gangs, Names({"team/train"}));
  EXPECT_EQ(p.waves[2].nodes, Names({"b0-l1-n1"}));
  for (const auto& w : p.waves) {
    for (const auto& n : w.nodes) EXPECT_EQ(n.rfind("other-", 0), std::string::npos) << n;
    EXPECT_EQ(std::count(w.gangs.begin(), w.gangs.end(), "team/away"), 0);
  }
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_EQ(p.notes[0], "rigid gang team/train also runs on 2 nodes outside the upgrade set (not upgraded): taken down in wave 2");
}

TEST(Waves, DeterministicWhateverTheInputOrder) {
  auto nodes = Fleet(2, 3, 3);
  std::vector<WaveGang> gangs = {{"t/a", {"b0-l0-n2", "b0-l1-n0"}, false}, {"t/b", {"b1-l2-n0", "b1-l0-n0", "x"}, false},
                                 {"t/c", {"b0-l2-n0", "b1-l2-n2"}, true},  {"t/d", {"b1-l1-n1"}, false},
                                 {"t/e", {"b0-l0-n0", "b0-l0-n1", "b0-l0-n2", "b0-l1-n1"}, false}};
  for (const WaveOptions& o : {ByCount(4), ByDomain(1), ByDomain(0)}) {
    WavePlan want = Plan(nodes, gangs, o);
    ExpectValid(want, nodes, gangs);
    std::mt19937 rng(7);
    for (int round = 0; round < 5; ++round) {
      auto n2 = nodes;
      auto g2 = gangs;
      std::shuffle(n2.begin(), n2.end(), rng);
      std::shuffle(g2.begin(), g2.end(), rng);
      for (auto& g : g2) std::shuffle(g.nodes.begin(), g.nodes.end(), rng);
      WavePlan got = Plan(n2, g2, o);
      ASSERT_EQ(got.waves.size(), want.waves.size());
      for (size_t w = 0; w < want.waves.size(); ++w) {
        EXPECT_EQ(got.waves[w].nodes, want.waves[w].nodes) << "wave " << w + 1;
        EXPECT_EQ(got.waves[w].gangs, want.waves[w].gangs) << "wave " << w + 1;
        EXPECT_EQ(got.waves[w].why, want.waves[w].why) << "wave " << w + 1;
      }
      EXPECT_EQ(got.notes, want.notes);
    }
  }
}

TEST(Waves, TenThousandNodesFiveThousandGangsPartition) {
  auto nodes = Fleet(10, 25, 40);  // 10,000 nodes
  ASSERT_EQ(nodes.size(), 10000u);
  std::mt19937 rng(42);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto node = [&](int b, int l, int k) {
    return "b" + std::to_string(b) + "-l" + std::to_string(l) + "-n" + std::to_string(k);
  };
  std::vector<WaveGang> gangs;
  for (int g = 0; g < 5000; ++g) {
    WaveGang gang;
    gang.id = "ns" + std::to_string(g % 17) + "/gang-" + std::to_string(g);
    gang.elastic = pick(0, 4) == 0;
    const int b = pick(0, 9), l = pick(0, 24);
    const int size = pick(1, 4);
    for (int m = 0; m < size; ++m) gang.nodes.push_back(node(b, l, pick(0, 39)));
    if (pick(0, 49) == 0) gang.nodes.push_back(node(pick(0, 9), pick(0, 24), pick(0, 39)));  // across leaves
    if (pick(0, 19) == 0) gang.nodes.push_back("outside-" + std::to_string(pick(0, 99)));
    gangs.push_back(std::move(gang));
  }
  for (const WaveOptions& o : {ByCount(64), ByDomain(1)}) {
    WavePlan p = Plan(nodes, gangs, o);
    ExpectValid(p, nodes, gangs);
    EXPECT_GT(p.waves.size(), 1u);
    size_t noted = 0;
    for (size_t w = 0; w < p.waves.size(); ++w) {
      if (o.max_nodes > 0 && p.waves[w].nodes.size() > 64u) ++noted;
    }
    size_t oversize_notes = 0;
    for (const auto& n : p.notes)
      if (n.find(" nodes > 64:") != std::string::npos) ++oversize_notes;
    EXPECT_EQ(noted, oversize_notes);
  }
}

}  // namespace
}  // namespace tidal
