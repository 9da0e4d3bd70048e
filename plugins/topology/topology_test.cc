// topology plugin: PreFilter level resolution, Score components and ordering, args validation.
#include "plugins/topology/topology.h"

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/support/builders.h"

namespace tidal::plugins {
namespace {

using ::testing::HasSubstr;
using tidal::testing::CaseName;
using tidal::testing::MakeGang;

template <typename T>
  requires requires(const T& t) { t.name; }
void PrintTo(const T& c, std::ostream* os) {
  *os << c.name;
}

TopologyLevels ZoneRack() {
  TopologyLevels l;
  l.levels = {{"zone", "example.com/zone"}, {"rack", "example.com/rack"}};
  return l;
}

std::unique_ptr<Topology> NewTopology(const nlohmann::json& args = nlohmann::json::object(),
                                      const TopologyLevels& levels = TopologyLevels::Default()) {
  auto p = Topology::New(args, PluginContext{levels});
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return nullptr;
  return std::unique_ptr<Topology>(dynamic_cast<Topology*>(std::move(p).value().release()));
}

// ---------------------------------------------------------------------------------------------
// PreFilter
// ---------------------------------------------------------------------------------------------

struct PreFilterCase {
  std::string name;
  TopologyLevels levels;
  std::string required, preferred;
  StatusCode code;
  int required_level, preferred_level;  // when ok
  std::string message;                  // exact, when not ok
};

class TopologyPreFilterTest : public ::testing::TestWithParam<PreFilterCase> {};

TEST_P(TopologyPreFilterTest, ResolvesLevelNames) {
  const auto& c = GetParam();
  auto t = NewTopology(nlohmann::json::object(), c.levels);
  ASSERT_NE(t, nullptr);
  CycleState cs;
  PlacementConstraints pc;
  pc.members = 3;
  Status s = t->PreFilter(cs, MakeGang("team/job").Required(c.required).Preferred(c.preferred).Obj(), c.levels, pc);
  EXPECT_EQ(s.code(), c.code) << s.ToString();
  EXPECT_EQ(pc.members, 3);
  if (c.code == StatusCode::kSuccess) {
    EXPECT_EQ(pc.required_level, c.required_level);
    EXPECT_EQ(pc.preferred_level, c.preferred_level);
  } else {
    EXPECT_EQ(s.Message(), c.message);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, TopologyPreFilterTest,
    ::testing::Values(
        PreFilterCase{"NoConstraints", TopologyLevels::Default(), "", "", StatusCode::kSuccess, -1, -1, ""},
        PreFilterCase{"RequiredBlock", TopologyLevels::Default(), "block", "", StatusCode::kSuccess, 0, -1, ""},
        PreFilterCase{"RequiredLeaf", TopologyLevels::Default(), "leaf", "", StatusCode::kSuccess, 1, -1, ""},
        PreFilterCase{"RequiredNvlink", TopologyLevels::Default(), "nvlink", "", StatusCode::kSuccess, 2, -1, ""},
        PreFilterCase{"RequiredNode", TopologyLevels::Default(), "node", "", StatusCode::kSuccess, 3, -1, ""},
        PreFilterCase{"PreferredOnly", TopologyLevels::Default(), "", "nvlink", StatusCode::kSuccess, -1, 2, ""},
        PreFilterCase{"Both", TopologyLevels::Default(), "block", "leaf", StatusCode::kSuccess, 0, 1, ""},
        PreFilterCase{"UnknownRequired", TopologyLevels::Default(), "rack", "", StatusCode::kUnschedulableAndUnresolvable,
                      0, 0,
                      "workload team/job: topology-required: unknown level \"rack\" (accepted: block, leaf, nvlink, "
                      "node)"},
        PreFilterCase{"UnknownPreferred", TopologyLevels::Default(), "leaf", "zone",
                      StatusCode::kUnschedulableAndUnresolvable, 0, 0,
                      "workload team/job: topology-preferred: unknown level \"zone\" (accepted: block, leaf, nvlink, "
                      "node)"},
        PreFilterCase{"CaseSensitive", TopologyLevels::Default(), "Leaf", "", StatusCode::kUnschedulableAndUnresolvable, 0,
                      0, "workload team/job: topology-required: unknown level \"Leaf\" (accepted: block, leaf, nvlink, node)"},
        PreFilterCase{"ClusterIsNotALevel", TopologyLevels::Default(), "cluster", "",
                      StatusCode::kUnschedulableAndUnresolvable, 0, 0,
                      "workload team/job: topology-required: unknown level \"cluster\" (accepted: block, leaf, nvlink, "
                      "node)"},
        PreFilterCase{"CustomLevelResolves", ZoneRack(), "rack", "zone", StatusCode::kSuccess, 1, 0, ""},
        PreFilterCase{"CustomNodeLevel", ZoneRack(), "node", "", StatusCode::kSuccess, 2, -1, ""},
        PreFilterCase{"DefaultNameUnknownInCustomLevels", ZoneRack(), "leaf", "", StatusCode::kUnschedulableAndUnresolvable,
                      0, 0, "workload team/job: topology-required: unknown level \"leaf\" (accepted: zone, rack, node)"}),
    CaseName());

// ---------------------------------------------------------------------------------------------
// Score
// ---------------------------------------------------------------------------------------------

// A candidate of `members` 8-GPU members on default levels: spans {block, leaf, nvlink, node}.
Candidate Cand(std::vector<int32_t> spans, int64_t domain_free, int32_t broken, int32_t members = 2) {
  Candidate c;
  c.spans = std::move(spans);
  c.domain_free_gpus = domain_free;
  c.whole_nodes_broken = broken;
  for (int32_t i = 0; i < members; ++i) c.assignments.push_back({i, 1});
  return c;
}

struct ScoreCase {
  std::string name;
  nlohmann::json args;
  std::string preferred;  // run PreFilter with this preferred level first ("" = none)
  Candidate cand;
  int64_t gpus_per_member;
  int64_t expected;
};

class TopologyScoreTest : public ::testing::TestWithParam<ScoreCase> {};

TEST_P(TopologyScoreTest, Exact) {
  const auto& c = GetParam();
  auto t = NewTopology(c.args);
  ASSERT_NE(t, nullptr);
  CycleState cs;
  const Workload w = MakeGang("g").Members(c.cand.PlacedMembers()).Gpus(c.gpus_per_member).Preferred(c.preferred).Obj();
  PlacementConstraints pc;
  pc.members = w.members;
  ASSERT_TRUE(t->PreFilter(cs, w, TopologyLevels::Default(), pc).ok());
  const int64_t score = t->Score(cs, w, c.cand);
  EXPECT_EQ(score, c.expected);
  EXPECT_GE(score, 0);
  EXPECT_LE(score, ScorePlugin::kMaxScore);
}

const nlohmann::json kDefaults = nlohmann::json::object();
const nlohmann::json kLocalityOnly = {{"localityWeight", 100}, {"fitWeight", 0}, {"wholeNodeWeight", 0}};
const nlohmann::json kFitOnly = {{"localityWeight", 0}, {"fitWeight", 1}, {"wholeNodeWeight", 0}};
const nlohmann::json kWholeOnly = {{"localityWeight", 0}, {"fitWeight", 0}, {"wholeNodeWeight", 7}};

// Defaults: (50 * locality + 30 * fit + 20 * whole) / 100.
INSTANTIATE_TEST_SUITE_P(
    Table, TopologyScoreTest,
    ::testing::Values(
        ScoreCase{"Perfect", kDefaults, "", Cand({1, 1, 1, 2}, 16, 0), 8, 100},
        ScoreCase{"TwoNvlinks", kDefaults, "", Cand({1, 1, 2, 2}, 16, 0), 8, 75},
        ScoreCase{"ThreeNvlinks", kDefaults, "", Cand({1, 1, 3, 3}, 24, 0, 3), 8, 66},
        ScoreCase{"QuarterFit", kDefaults, "", Cand({1, 1, 1, 2}, 64, 0), 8, 77},
        ScoreCase{"OneWholeNodeBroken", kDefaults, "", Cand({1, 1, 1, 1}, 16, 1), 8, 90},
        ScoreCase{"ThreeWholeNodesBroken", kDefaults, "", Cand({1, 1, 1, 2}, 16, 3), 8, 85},
        ScoreCase{"EmptyDomainCountsAsFullFit", kDefaults, "", Cand({1, 1, 1, 2}, 0, 0), 8, 100},
        ScoreCase{"GpuLessMembersHaveNoFit", kDefaults, "", Cand({1, 1, 1, 2}, 16, 0), 0, 70},
        ScoreCase{"PreferredLeafLooksAtLeaves", kDefaults, "leaf", Cand({1, 2, 2, 4}, 32, 0, 4), 8, 75},
        ScoreCase{"PreferredLeafIgnoresNvlinkSpans", kDefaults, "leaf", Cand({1, 1, 4, 4}, 32, 0, 4), 8, 100},
        ScoreCase{"PreferredNodeCountsNodes", kLocalityOnly, "node", Cand({1, 1, 1, 4}, 32, 0, 4), 8, 25},
        ScoreCase{"LocalityOnly", kLocalityOnly, "", Cand({1, 1, 4, 4}, 32, 0), 8, 25},
        ScoreCase{"FitOnly", kFitOnly, "", Cand({1, 1, 4, 4}, 40, 0), 8, 40},
        ScoreCase{"WholeOnly", kWholeOnly, "", Cand({1, 1, 4, 4}, 32, 4), 8, 20},
        ScoreCase{"ZeroSpansTreatedAsOne", kLocalityOnly, "", Cand({0, 0, 0, 1}, 8, 0, 1), 8, 100}),
    CaseName());

class TopologyOrderingTest : public ::testing::Test {
 protected:
  int64_t Score(const Candidate& c, int64_t gpus = 8, const std::string& preferred = "") {
    CycleState cs;
    const Workload w = MakeGang("g").Members(c.PlacedMembers()).Gpus(gpus).Preferred(preferred).Obj();
    PlacementConstraints pc;
    pc.members = w.members;
    EXPECT_TRUE(t_->PreFilter(cs, w, TopologyLevels::Default(), pc).ok());
    return t_->Score(cs, w, c);
  }
  std::unique_ptr<Topology> t_ = NewTopology();
};

TEST_F(TopologyOrderingTest, FewerSpansScoreHigher) {
  int64_t prev = Score(Cand({1, 1, 1, 4}, 32, 0, 4));
  for (int32_t spans = 2; spans <= 4; ++spans) {
    const int64_t s = Score(Cand({1, 1, spans, 4}, 32, 0, 4));
    EXPECT_LT(s, prev) << spans << " nvlinks";
    prev = s;
  }
}

TEST_F(TopologyOrderingTest, PreferredLevelSpansDecide) {
  // With preferred leaf, one leaf beats two leaves even when the nvlink spans say otherwise.
  EXPECT_GT(Score(Cand({1, 1, 4, 4}, 32, 0, 4), 8, "leaf"), Score(Cand({1, 2, 2, 4}, 32, 0, 4), 8, "leaf"));
  // Without it, the deepest level (nvlink) decides.
  EXPECT_LT(Score(Cand({1, 1, 4, 4}, 32, 0, 4)), Score(Cand({1, 2, 2, 4}, 32, 0, 4)));
}

TEST_F(TopologyOrderingTest, TighterFitScoresHigher) {
  int64_t prev = Score(Cand({1, 1, 1, 2}, 16, 0));
  for (int64_t free : {20, 32, 64, 128}) {
    const int64_t s = Score(Cand({1, 1, 1, 2}, free, 0));
    EXPECT_LT(s, prev) << free << " free GPUs";
    prev = s;
  }
}

TEST_F(TopologyOrderingTest, BreakingWholeNodesScoresLower) {
  int64_t prev = Score(Cand({1, 1, 1, 1}, 16, 0, 1), 1);
  for (int32_t broken = 1; broken <= 3; ++broken) {
    const int64_t s = Score(Cand({1, 1, 1, 1}, 16, broken, 1), 1);
    EXPECT_LT(s, prev) << broken << " broken";
    prev = s;
  }
}

TEST_F(TopologyOrderingTest, WithoutPreFilterDataUsesDeepestLevel) {
  CycleState empty;
  const Workload w = MakeGang("g").Members(2).Gpus(8).Obj();
  EXPECT_EQ(t_->Score(empty, w, Cand({1, 1, 2, 2}, 16, 0)), 75);
}

TEST(TopologyScoreTest, NoConfiguredLevelsScoresOnNodes) {
  auto t = NewTopology(kLocalityOnly, TopologyLevels{});
  ASSERT_NE(t, nullptr);
  CycleState cs;
  EXPECT_EQ(t->Score(cs, MakeGang("g").Members(2).Gpus(8).Obj(), Cand({2}, 16, 0)), 50);
}

// ---------------------------------------------------------------------------------------------
// Args
// ---------------------------------------------------------------------------------------------

struct ArgsCase {
  std::string name;
  nlohmann::json args;
  std::string error;  // exact; "" = accepted
};

class TopologyArgsTest : public ::testing::TestWithParam<ArgsCase> {};

TEST_P(TopologyArgsTest, Validates) {
  auto p = Topology::New(GetParam().args, PluginContext{TopologyLevels::Default()});
  if (GetParam().error.empty()) {
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ((*p)->Name(), "topology");
  } else {
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kError);
    EXPECT_EQ(p.status().Message(), GetParam().error);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, TopologyArgsTest,
    ::testing::Values(
        ArgsCase{"Empty", nlohmann::json::object(), ""}, ArgsCase{"Null", nullptr, ""},
        ArgsCase{"AllWeightsAtBounds", {{"localityWeight", 100}, {"fitWeight", 0}, {"wholeNodeWeight", 100}}, ""},
        ArgsCase{"UnknownKey", {{"bogus", 1}}, "bogus: unknown argument (accepted: localityWeight, fitWeight, wholeNodeWeight)"},
        ArgsCase{"FitWeightTooLarge", {{"fitWeight", 500}}, "fitWeight: must be 0..100, got 500"},
        ArgsCase{"LocalityWeightNegative", {{"localityWeight", -1}}, "localityWeight: must be 0..100, got -1"},
        ArgsCase{"WholeNodeWeightTooLarge", {{"wholeNodeWeight", 101}}, "wholeNodeWeight: must be 0..100, got 101"},
        ArgsCase{"WeightNotInteger", {{"fitWeight", "high"}}, "fitWeight: must be an integer"},
        ArgsCase{"WeightFloat", {{"fitWeight", 1.5}}, "fitWeight: must be an integer"},
        ArgsCase{"AllZero", {{"localityWeight", 0}, {"fitWeight", 0}, {"wholeNodeWeight", 0}},
                 "localityWeight+fitWeight+wholeNodeWeight: must not all be 0"},
        ArgsCase{"NotAMapping", nlohmann::json::array({1}), "args must be a mapping"}),
    CaseName());

TEST(TopologyTest, ExtensionPoints) {
  auto t = NewTopology();
  ASSERT_NE(t, nullptr);
  Plugin* p = t.get();
  EXPECT_NE(dynamic_cast<PreFilterPlugin*>(p), nullptr);
  EXPECT_NE(dynamic_cast<ScorePlugin*>(p), nullptr);
  EXPECT_EQ(dynamic_cast<PermitPlugin*>(p), nullptr);
  EXPECT_EQ(dynamic_cast<QueueSortPlugin*>(p), nullptr);
}

}  // namespace
}  // namespace tidal::plugins
