// Registry and Profile: registration rules, Profile::Build validation, ProfileSpec::FromJson, and
// how the profile runs its extension points (score weights and clamping, permit precedence).
#include "core/framework/profile.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/framework/registry.h"
#include "plugins/registry.h"
#include "test/support/builders.h"

namespace tidal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::CaseName;
using testing::MakeGang;

template <typename T>
  requires requires(const T& t) { t.name; }
void PrintTo(const T& c, std::ostream* os) {
  *os << c.name;
}

// ---------------------------------------------------------------------------------------------
// Test-only plugins
// ---------------------------------------------------------------------------------------------

class FifoSort final : public QueueSortPlugin {
 public:
  std::string_view Name() const override { return "fifo"; }
  bool Less(const Workload& a, const Workload& b) const override { return a.submit_time_s < b.submit_time_s; }
};

class Inert final : public Plugin {
 public:
  std::string_view Name() const override { return "inert"; }
};

class ConstScore final : public ScorePlugin {
 public:
  explicit ConstScore(int64_t v) : v_(v) {}
  std::string_view Name() const override { return "const-score"; }
  int64_t Score(const CycleState&, const Workload&, const Candidate&) const override { return v_; }

 private:
  int64_t v_;
};

class AnswerPermit final : public PermitPlugin {
 public:
  AnswerPermit(std::string name, Status answer) : name_(std::move(name)), answer_(std::move(answer)) {}
  std::string_view Name() const override { return name_; }
  Status Permit(CycleState&, const Workload&, const Candidate&) override { return answer_; }

 private:
  std::string name_;
  Status answer_;
};

template <typename P, typename... Args>
PluginFactory Factory(Args... args) {
  return [=](const nlohmann::json&, const PluginContext&) -> StatusOr<std::unique_ptr<Plugin>> {
    return std::unique_ptr<Plugin>(std::make_unique<P>(args...));
  };
}

// The built-in plugins plus the test-only ones above.
Registry TestRegistry() {
  Registry r = plugins::DefaultRegistry();
  EXPECT_TRUE(r.Register("fifo", Factory<FifoSort>()).ok());
  EXPECT_TRUE(r.Register("inert", Factory<Inert>()).ok());
  EXPECT_TRUE(r.Register("const-score", [](const nlohmann::json& args, const PluginContext&) -> StatusOr<std::unique_ptr<Plugin>> {
                 return std::unique_ptr<Plugin>(std::make_unique<ConstScore>(args.value("value", int64_t{50})));
               }).ok());
  EXPECT_TRUE(r.Register("wait-permit", Factory<AnswerPermit>(std::string("wait-permit"), Status::Wait("later"))).ok());
  EXPECT_TRUE(r.Register("deny-permit", Factory<AnswerPermit>(std::string("deny-permit"), Status::Unschedulable("no"))).ok());
  return r;
}

PluginContext Ctx() { return PluginContext{TopologyLevels::Default()}; }

// ---------------------------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------------------------

TEST(RegistryTest, DefaultRegistryHasTheBuiltins) {
  Registry r = plugins::DefaultRegistry();
  const std::vector<std::string> names = r.Names();
  EXPECT_THAT(names, ::testing::IsSupersetOf({"gang", "priority", "topology"}));
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(r.Find("gang"), nullptr);
  EXPECT_EQ(r.Find("no-such-plugin"), nullptr);
}

TEST(RegistryTest, RefusesEmptyName) {
  Registry r;
  Status s = r.Register("", Factory<Inert>());
  EXPECT_EQ(s.code(), StatusCode::kError);
  EXPECT_THAT(s.Message(), HasSubstr("plugin name must not be empty"));
  EXPECT_TRUE(r.Names().empty());
}

TEST(RegistryTest, RefusesEmptyFactory) {
  Registry r;
  Status s = r.Register("x", PluginFactory{});
  EXPECT_EQ(s.code(), StatusCode::kError);
  EXPECT_THAT(s.Message(), HasSubstr("plugin x: factory must not be empty"));
  EXPECT_EQ(r.Find("x"), nullptr);
}

TEST(RegistryTest, RefusesDuplicateAndKeepsTheFirst) {
  Registry r;
  ASSERT_TRUE(r.Register("sort", Factory<FifoSort>()).ok());
  Status s = r.Register("sort", Factory<Inert>());
  EXPECT_EQ(s.code(), StatusCode::kError);
  EXPECT_THAT(s.Message(), HasSubstr("registry: plugin sort is already registered"));
  const PluginFactory* f = r.Find("sort");
  ASSERT_NE(f, nullptr);
  auto made = (*f)(nlohmann::json::object(), Ctx());
  ASSERT_TRUE(made.ok());
  EXPECT_EQ((*made)->Name(), "fifo") << "the first registration is not overwritten";
  EXPECT_THAT(r.Names(), ElementsAre("sort"));
}

TEST(RegistryTest, RegisterAllNamesTheTakenName) {
  Registry r;
  ASSERT_TRUE(r.Register("topology", Factory<Inert>()).ok());
  Status s = plugins::RegisterAll(r);
  EXPECT_EQ(s.code(), StatusCode::kError);
  EXPECT_THAT(s.Message(), HasSubstr("topology"));
}

// ---------------------------------------------------------------------------------------------
// Profile::Build
// ---------------------------------------------------------------------------------------------

PluginSpec P(std::string name, int64_t weight = 0, nlohmann::json args = nlohmann::json::object()) {
  return PluginSpec{std::move(name), weight, std::move(args)};
}

ProfileSpec Spec(std::vector<PluginSpec> plugins, int max_candidates = 4) {
  ProfileSpec s;
  s.name = "test";
  s.plugins = std::move(plugins);
  s.max_candidates = max_candidates;
  return s;
}

struct BuildErrorCase {
  std::string name;
  ProfileSpec spec;
  std::string message;  // substring
};

class ProfileBuildErrorTest : public ::testing::TestWithParam<BuildErrorCase> {};

TEST_P(ProfileBuildErrorTest, Refuses) {
  auto p = Profile::Build(GetParam().spec, TestRegistry(), Ctx());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kError);
  EXPECT_THAT(p.status().Message(), HasSubstr(GetParam().message));
  EXPECT_THAT(p.status().Message(), HasSubstr("profile test"));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ProfileBuildErrorTest,
    ::testing::Values(
        BuildErrorCase{"ListedTwice", Spec({P("priority"), P("gang"), P("gang")}), "plugins[2] (gang): listed twice"},
        BuildErrorCase{"NoQueueSort", Spec({P("gang"), P("topology")}),
                       "plugins: no QueueSort plugin enabled (exactly one is required)"},
        BuildErrorCase{"EmptyPluginList", Spec({}), "no QueueSort plugin enabled"},
        BuildErrorCase{"TwoQueueSorts", Spec({P("priority"), P("gang"), P("fifo")}),
                       "plugins[2] (fifo): a second QueueSort plugin (priority is already enabled)"},
        BuildErrorCase{"WeightOnNonScorePlugin", Spec({P("priority"), P("gang", 5)}),
                       "plugins[1] (gang): weight: only Score plugins take a weight"},
        BuildErrorCase{"WeightOnQueueSort", Spec({P("priority", 1)}), "plugins[0] (priority): weight: only Score"},
        BuildErrorCase{"WeightTooLarge", Spec({P("priority"), P("topology", 101)}),
                       "plugins[1] (topology): weight: must be 1..100, got 101"},
        BuildErrorCase{"WeightNegative", Spec({P("priority"), P("topology", -3)}), "weight: must be 1..100, got -3"},
        BuildErrorCase{"MaxCandidatesZero", Spec({P("priority")}, 0), "maxCandidates: must be 1..64, got 0"},
        BuildErrorCase{"MaxCandidatesTooMany", Spec({P("priority")}, 65), "maxCandidates: must be 1..64, got 65"},
        BuildErrorCase{"TopologyUnknownArg", Spec({P("priority"), P("topology", 0, {{"bogus", 1}})}),
                       "plugins[1] (topology): args: bogus: unknown argument (accepted: localityWeight, fitWeight, "
                       "wholeNodeWeight)"},
        BuildErrorCase{"TopologyArgOutOfRange", Spec({P("priority"), P("topology", 0, {{"fitWeight", 500}})}),
                       "plugins[1] (topology): args: fitWeight: must be 0..100, got 500"},
        BuildErrorCase{"TopologyArgNotInteger", Spec({P("priority"), P("topology", 0, {{"localityWeight", "high"}})}),
                       "args: localityWeight: must be an integer"},
        BuildErrorCase{"TopologyAllWeightsZero",
                       Spec({P("priority"),
                             P("topology", 0, {{"localityWeight", 0}, {"fitWeight", 0}, {"wholeNodeWeight", 0}})}),
                       "must not all be 0"},
        BuildErrorCase{"GangTakesNoArgs", Spec({P("priority"), P("gang", 0, {{"x", 1}})}),
                       "plugins[1] (gang): args: x: unknown argument (accepted: none)"},
        BuildErrorCase{"PriorityArgsNotMapping", Spec({P("priority", 0, nlohmann::json::array({1}))}),
                       "plugins[0] (priority): args: args must be a mapping"},
        BuildErrorCase{"NoExtensionPoint", Spec({P("priority"), P("inert")}),
                       "plugins[1] (inert): implements no extension point"}),
    CaseName());

TEST(ProfileBuildTest, UnknownPluginListsEveryRegisteredName) {
  const Registry r = TestRegistry();
  std::string registered;
  for (const auto& n : r.Names()) registered += (registered.empty() ? "" : ", ") + n;
  EXPECT_THAT(r.Names(), ::testing::IsSupersetOf({"const-score", "deny-permit", "fifo", "gang", "inert", "priority",
                                                   "topology", "wait-permit"}));
  auto p = Profile::Build(Spec({P("priority"), P("no-such-plugin")}), r, Ctx());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().Message(),
            "profile test: plugins[1] (no-such-plugin): unknown plugin (registered: " + registered + ")");
}

struct BuildOkCase {
  std::string name;
  ProfileSpec spec;
  std::vector<std::string> plugins;
  int max_candidates;
};

class ProfileBuildOkTest : public ::testing::TestWithParam<BuildOkCase> {};

TEST_P(ProfileBuildOkTest, Builds) {
  auto p = Profile::Build(GetParam().spec, TestRegistry(), Ctx());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->name(), GetParam().spec.name);
  // Plugins are instantiated in the spec's order ({} = every plugin the spec lists).
  std::vector<std::string> expected = GetParam().plugins;
  if (expected.empty()) {
    for (const auto& ps : GetParam().spec.plugins) expected.push_back(ps.name);
    EXPECT_FALSE(expected.empty());
  }
  EXPECT_EQ((*p)->PluginNames(), expected);
  EXPECT_EQ((*p)->max_candidates(), GetParam().max_candidates);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ProfileBuildOkTest,
    ::testing::Values(BuildOkCase{"Default", ProfileSpec::Default(), {}, 4},
                      BuildOkCase{"MinimalQueueSortOnly", Spec({P("priority")}, 1), {"priority"}, 1},
                      BuildOkCase{"OtherQueueSort", Spec({P("fifo"), P("gang")}, 64), {"fifo", "gang"}, 64},
                      BuildOkCase{"WeightBounds", Spec({P("priority"), P("topology", 100), P("const-score", 1)}),
                                  {"priority", "topology", "const-score"}, 4},
                      BuildOkCase{"TopologyArgsAtBounds",
                                  Spec({P("priority"), P("topology", 0, {{"fitWeight", 100}, {"localityWeight", 0}})}),
                                  {"priority", "topology"}, 4},
                      BuildOkCase{"NullArgsAccepted", Spec({P("priority", 0, nullptr)}), {"priority"}, 4}),
    CaseName());

// ---------------------------------------------------------------------------------------------
// Running the extension points
// ---------------------------------------------------------------------------------------------

struct ScoreCase {
  std::string name;
  int64_t value;   // what const-score returns
  int64_t weight;  // its weight (0 = default 1)
  int64_t expected;
};

class ProfileScoreTest : public ::testing::TestWithParam<ScoreCase> {};

TEST_P(ProfileScoreTest, WeightsAndClamps) {
  const auto& c = GetParam();
  auto p = Profile::Build(Spec({P("priority"), P("const-score", c.weight, {{"value", c.value}})}), TestRegistry(), Ctx());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  CycleState cs;
  Candidate cand;
  cand.score = -999;
  (*p)->RunScore(cs, MakeGang("g").Obj(), cand);
  EXPECT_EQ(cand.score, c.expected);
}

INSTANTIATE_TEST_SUITE_P(Table, ProfileScoreTest,
                         ::testing::Values(ScoreCase{"DefaultWeightIsOne", 40, 0, 40},
                                           ScoreCase{"Weighted", 40, 3, 120},
                                           ScoreCase{"ClampedAbove", 150, 2, 200},
                                           ScoreCase{"ClampedBelow", -20, 5, 0},
                                           ScoreCase{"MaxWeight", 100, 100, 10000}),
                         CaseName());

TEST(ProfileRunTest, ScoresAreSummedOverPlugins) {
  // Topology without preferred data: locality on the deepest level (1 span = 100), fit 16/32 = 50,
  // no whole node broken = 100 -> (50*100 + 30*50 + 20*100) / 100 = 85; weight 2 -> 170. Plus 60.
  auto p = Profile::Build(Spec({P("priority"), P("topology", 2), P("const-score", 0, {{"value", 60}})}), TestRegistry(), Ctx());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  CycleState cs;
  Candidate cand;
  cand.spans = {1, 1, 1, 2};
  cand.domain_free_gpus = 32;
  cand.assignments = {{0, 1}, {1, 1}};
  (*p)->RunScore(cs, MakeGang("g").Members(2).Gpus(8).Obj(), cand);
  EXPECT_EQ(cand.score, 170 + 60);
}

struct PermitCase {
  std::string name;
  std::vector<PluginSpec> extra;
  StatusCode code;
  std::string plugin;
};

class ProfilePermitTest : public ::testing::TestWithParam<PermitCase> {};

TEST_P(ProfilePermitTest, Precedence) {
  std::vector<PluginSpec> plugins = {P("priority"), P("gang")};
  for (const auto& e : GetParam().extra) plugins.push_back(e);
  auto p = Profile::Build(Spec(plugins), TestRegistry(), Ctx());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  CycleState cs;
  Candidate cand;
  cand.assignments = {{0, 2}};
  Status s = (*p)->RunPermit(cs, MakeGang("g").Members(2).Obj(), cand);
  EXPECT_EQ(s.code(), GetParam().code) << s.ToString();
  EXPECT_EQ(s.plugin(), GetParam().plugin);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ProfilePermitTest,
    ::testing::Values(PermitCase{"AllAllow", {}, StatusCode::kSuccess, ""},
                      PermitCase{"WaitHolds", {P("wait-permit")}, StatusCode::kWait, "wait-permit"},
                      PermitCase{"DenyBeatsEarlierWait", {P("wait-permit"), P("deny-permit")}, StatusCode::kUnschedulable,
                                 "deny-permit"},
                      PermitCase{"DenyBeatsLaterWait", {P("deny-permit"), P("wait-permit")}, StatusCode::kUnschedulable,
                                 "deny-permit"}),
    CaseName());

TEST(ProfileRunTest, GangPermitRefusesPartialCandidateWithPluginName) {
  auto p = Profile::Build(ProfileSpec::Default(), TestRegistry(), Ctx());
  ASSERT_TRUE(p.ok());
  CycleState cs;
  Candidate cand;
  cand.assignments = {{0, 1}};
  Status s = (*p)->RunPermit(cs, MakeGang("g").Members(2).Obj(), cand);
  EXPECT_EQ(s.code(), StatusCode::kUnschedulable);
  EXPECT_EQ(s.plugin(), "gang");
}

TEST(ProfileRunTest, PostFilterWithoutPluginsCannotHelp) {
  ProfileSpec spec = ProfileSpec::Default();
  spec.plugins.erase(std::remove_if(spec.plugins.begin(), spec.plugins.end(),
                                    [](const PluginSpec& x) { return x.name == "preemption"; }),
                     spec.plugins.end());
  auto p = Profile::Build(spec, TestRegistry(), Ctx());
  ASSERT_TRUE(p.ok());
  CycleState cs;
  PostFilterResult r;
  ClusterState cluster = testing::FabricState(1, 1, 1, 1);
  PostFilterContext ctx{cluster, 0, [](const PlacementConstraints&) { return false; }};
  Status s = (*p)->RunPostFilter(cs, MakeGang("g").Obj(), Status::Unschedulable("full"), ctx, PlacementConstraints{}, r);
  EXPECT_EQ(s.code(), StatusCode::kUnschedulable);
  EXPECT_THAT(s.Message(), HasSubstr("no PostFilter plugin could help"));
  EXPECT_TRUE(r.victims.empty());
}

TEST(ProfileRunTest, QueueSortIsTheConfiguredOne) {
  auto p = Profile::Build(Spec({P("fifo")}), TestRegistry(), Ctx());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->queue_sort().Name(), "fifo");
  // fifo ignores priority.
  EXPECT_TRUE((*p)->queue_sort().Less(MakeGang("a").Priority(0).Submitted(1).Obj(), MakeGang("b").Priority(9).Submitted(2).Obj()));
}

// ---------------------------------------------------------------------------------------------
// ProfileSpec::FromJson
// ---------------------------------------------------------------------------------------------

struct FromJsonErrorCase {
  std::string name;
  std::string json;
  std::string message;  // exact
};

class FromJsonErrorTest : public ::testing::TestWithParam<FromJsonErrorCase> {};

TEST_P(FromJsonErrorTest, NamesTheField) {
  auto s = ProfileSpec::FromJson(nlohmann::json::parse(GetParam().json));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kError);
  EXPECT_EQ(s.status().Message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Table, FromJsonErrorTest,
    ::testing::Values(
        FromJsonErrorCase{"NotAMapping", R"([1, 2])", "profile: must be a mapping"},
        FromJsonErrorCase{"EmptyName", R"({"name": ""})", "profile.name: must be a non-empty string"},
        FromJsonErrorCase{"NameNotString", R"({"name": 7})", "profile.name: must be a non-empty string"},
        FromJsonErrorCase{"MaxCandidatesString", R"({"maxCandidates": "4"})", "profile.maxCandidates: must be an integer"},
        FromJsonErrorCase{"MaxCandidatesFloat", R"({"maxCandidates": 4.5})", "profile.maxCandidates: must be an integer"},
        FromJsonErrorCase{"MaxCandidatesBeyondInt", R"({"maxCandidates": 4294967297})",
                          "profile.maxCandidates: must be 1..64, got 4294967297"},
        FromJsonErrorCase{"PluginsNotList", R"({"plugins": {"name": "gang"}})", "profile.plugins: must be a list"},
        FromJsonErrorCase{"PluginEntryNumber", R"({"plugins": ["priority", 5]})",
                          "profile.plugins[1]: must be a plugin name or a mapping"},
        FromJsonErrorCase{"PluginWithoutName", R"({"plugins": [{"weight": 2}]})", "profile.plugins[0].name: must be set"},
        FromJsonErrorCase{"PluginEmptyStringName", R"({"plugins": [""]})", "profile.plugins[0].name: must be set"},
        FromJsonErrorCase{"PluginNameNotString", R"({"plugins": [{"name": 3}]})",
                          "profile.plugins[0].name: must be a string"},
        FromJsonErrorCase{"PluginWeightNotInteger", R"({"plugins": [{"name": "topology", "weight": "x"}]})",
                          "profile.plugins[0].weight: must be an integer"},
        FromJsonErrorCase{"PluginArgsNotMapping", R"({"plugins": [{"name": "topology", "args": [1]}]})",
                          "profile.plugins[0].args: must be a mapping"},
        FromJsonErrorCase{"PluginUnknownField", R"({"plugins": ["gang", {"name": "topology", "wieght": 1}]})",
                          "profile.plugins[1].wieght: unknown field (accepted: name, weight, args)"},
        FromJsonErrorCase{"UnknownTopLevelField", R"({"name": "x", "bogus": 1})",
                          "profile.bogus: unknown field (accepted: name, maxCandidates, plugins, backfill)"}),
    CaseName());

TEST(FromJsonTest, FieldPrefixIsUsed) {
  auto s = ProfileSpec::FromJson(nlohmann::json::parse(R"({"plugins": [{"name": "gang", "x": 1}]})"), "profiles[2]");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message(), "profiles[2].plugins[0].x: unknown field (accepted: name, weight, args)");
}

TEST(FromJsonTest, DecodesEveryField) {
  auto s = ProfileSpec::FromJson(nlohmann::json::parse(R"({
      "name": "gpu",
      "maxCandidates": 8,
      "plugins": ["priority", {"name": "gang"}, {"name": "topology", "weight": 5, "args": {"fitWeight": 10}}]})"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->name, "gpu");
  EXPECT_EQ(s->max_candidates, 8);
  ASSERT_EQ(s->plugins.size(), 3u);
  EXPECT_EQ(s->plugins[0].name, "priority");
  EXPECT_EQ(s->plugins[0].weight, 0);
  EXPECT_EQ(s->plugins[1].name, "gang");
  EXPECT_EQ(s->plugins[2].name, "topology");
  EXPECT_EQ(s->plugins[2].weight, 5);
  EXPECT_EQ(s->plugins[2].args, nlohmann::json({{"fitWeight", 10}}));
  auto p = Profile::Build(*s, plugins::DefaultRegistry(), Ctx());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->max_candidates(), 8);
}

TEST(FromJsonTest, DefaultsWhenEmpty) {
  auto s = ProfileSpec::FromJson(nlohmann::json::object());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->name, "default");
  EXPECT_EQ(s->max_candidates, 4);
  EXPECT_TRUE(s->plugins.empty());
  // Without plugins the profile itself is refused when built.
  auto p = Profile::Build(*s, plugins::DefaultRegistry(), Ctx());
  EXPECT_FALSE(p.ok());
}

TEST(FromJsonTest, OutOfRangeMaxCandidatesIsRefusedByBuild) {
  auto s = ProfileSpec::FromJson(nlohmann::json::parse(R"({"maxCandidates": 100, "plugins": ["priority"]})"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto p = Profile::Build(*s, plugins::DefaultRegistry(), Ctx());
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().Message(), HasSubstr("maxCandidates: must be 1..64, got 100"));
}


// Regressions (admin exploration): every problem is reported, weight 0 is refused, a bare profile
// file's fields have no leading dot.
TEST(FromJsonTest, ReportsEveryProblem) {
  auto s = ProfileSpec::FromJson(nlohmann::json::parse(
      R"({"backfill": {"depth": -2, "minGpus": -1}, "plugins": [{"name": "topology", "weight": 0, "x": 1}], "bogus": 1})"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().reasons(),
              ::testing::UnorderedElementsAre("profile.backfill.depth: must be -1 (all), 0 (off) or 1..100000",
                                              "profile.backfill.minGpus: must be a non-negative integer (0 = one node's GPUs)",
                                              "profile.plugins[0].weight: must be 1..100, got 0",
                                              "profile.plugins[0].x: unknown field (accepted: name, weight, args)",
                                              "profile.bogus: unknown field (accepted: name, maxCandidates, plugins, backfill)"));
}

TEST(FromJsonTest, WeightZeroIsRefusedAbsentIsTheDefault) {
  auto zero = ProfileSpec::FromJson(nlohmann::json::parse(R"({"plugins": ["priority", {"name": "topology", "weight": 0}]})"));
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().Message(), "profile.plugins[1].weight: must be 1..100, got 0");
  auto absent = ProfileSpec::FromJson(nlohmann::json::parse(R"({"plugins": ["priority", {"name": "topology"}]})"));
  ASSERT_TRUE(absent.ok()) << absent.status().ToString();
  EXPECT_EQ(absent->plugins[1].weight, 0);
  EXPECT_TRUE(Profile::Build(*absent, plugins::DefaultRegistry(), Ctx()).ok());
}

TEST(FromJsonTest, EmptyPrefixHasNoLeadingDot) {
  auto s = ProfileSpec::FromJson(nlohmann::json::parse(R"({"bogus": 1, "backfill": {"dpeth": 1}})"), "");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().reasons(),
              ::testing::UnorderedElementsAre("bogus: unknown field (accepted: name, maxCandidates, plugins, backfill)",
                                              "backfill.dpeth: unknown field (accepted: depth, minGpus, agedAfter, defaultRuntime)"));
}

TEST(ProfileBuildTest, ReportsEveryProblem) {
  auto p = Profile::Build(Spec({P("priority"), P("quotaa"), P("gang", 5), P("nope")}, 0), TestRegistry(), Ctx());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().reasons().size(), 4u) << p.status().ToString();
  EXPECT_EQ(ProfileErrorField(p.status().reasons()[0]), "maxCandidates");
  EXPECT_EQ(ProfileErrorField(p.status().reasons()[1]), "plugins[1]");
  EXPECT_EQ(ProfileErrorField(p.status().reasons()[2]), "plugins[2]");
  EXPECT_EQ(ProfileErrorField(p.status().reasons()[3]), "plugins[3]");
  EXPECT_EQ(ProfileErrorField("something else"), "");
}

}  // namespace
}  // namespace tidal
