// The scheduling framework's extension points with test-only plugins: Reserve, Permit, PostFilter
// and Filter refusals roll back everything (no half-placed gang), and the Scheduler's queue order
// and placement explanations. Split from placement_test.cc (the search's own table and properties).
#include "core/framework/scheduler.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plugins/registry.h"
#include "test/support/builders.h"

namespace tidal {
namespace {

using ::testing::HasSubstr;
using testing::CaseName;
using testing::DefaultProfile;
using testing::DefaultScheduler;
using testing::FabricState;
using testing::MakeGang;
using testing::MakeNode;
using testing::NodesState;
using testing::PrioritySpec;

// The fabric the cases run on: 2 blocks x 2 leaves x 2 NVLink domains x 2 nodes of 8 GPUs.
ClusterState Fabric() { return FabricState(2, 2, 2, 2); }

template <typename T>
  requires requires(const T& t) { t.name; }
void PrintTo(const T& c, std::ostream* os) {
  *os << c.name;
}

// ---------------------------------------------------------------------------------------------
// Framework: Reserve / Permit / PostFilter with test-only plugins; rollback leaves no trace.
// ---------------------------------------------------------------------------------------------

struct Calls {
  int reserve = 0, unreserve = 0, permit = 0, postfilter = 0;
};

class TestPermit final : public PermitPlugin {
 public:
  TestPermit(Status answer, Calls* calls) : answer_(std::move(answer)), calls_(calls) {}
  std::string_view Name() const override { return "test-permit"; }
  Status Permit(CycleState&, const Workload&, const Candidate&) override {
    ++calls_->permit;
    return answer_;
  }

 private:
  Status answer_;
  Calls* calls_;
};

class TestReserve final : public ReservePlugin {
 public:
  TestReserve(Status answer, Calls* calls) : answer_(std::move(answer)), calls_(calls) {}
  std::string_view Name() const override { return "test-reserve"; }
  Status Reserve(CycleState&, const ClusterState&, const Workload&, const Candidate&) override {
    ++calls_->reserve;
    return answer_;
  }
  void Unreserve(CycleState&, const ClusterState&, const Workload&, const Candidate&) override { ++calls_->unreserve; }

 private:
  Status answer_;
  Calls* calls_;
};

class TestPostFilter final : public PostFilterPlugin {
 public:
  explicit TestPostFilter(Calls* calls) : calls_(calls) {}
  std::string_view Name() const override { return "test-postfilter"; }
  Status PostFilter(CycleState&, const Workload&, const Status&, PostFilterContext&, const PlacementConstraints&,
                    PostFilterResult& r) override {
    ++calls_->postfilter;
    r.victims = {"victim-a", "victim-b"};
    r.nominated_domain = "block-0";
    return Status::Ok();
  }

 private:
  Calls* calls_;
};

struct FrameworkCase {
  std::string name;
  Status reserve;  // what test-reserve answers
  Status permit;   // what test-permit answers
  Outcome outcome;
  bool holds_capacity;
  int unreserve_calls;
};

class FrameworkTest : public ::testing::TestWithParam<FrameworkCase> {
 protected:
  std::unique_ptr<Profile> Build(const FrameworkCase& c) {
    Registry r = plugins::DefaultRegistry();
    Calls* calls = &calls_;
    Status reserve = c.reserve, permit = c.permit;
    EXPECT_TRUE(r.Register("test-reserve", [calls, reserve](const nlohmann::json&, const PluginContext&) {
                   return StatusOr<std::unique_ptr<Plugin>>(std::make_unique<TestReserve>(reserve, calls));
                 }).ok());
    EXPECT_TRUE(r.Register("test-permit", [calls, permit](const nlohmann::json&, const PluginContext&) {
                   return StatusOr<std::unique_ptr<Plugin>>(std::make_unique<TestPermit>(permit, calls));
                 }).ok());
    ProfileSpec spec = ProfileSpec::Default();
    spec.plugins.push_back({"test-reserve", 0, nlohmann::json::object()});
    spec.plugins.push_back({"test-permit", 0, nlohmann::json::object()});
    auto p = Profile::Build(spec, r, PluginContext{TopologyLevels::Default()});
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return std::move(p).value();
  }
  Calls calls_;
};

TEST_P(FrameworkTest, RefusalRollsBackEverything) {
  const auto& c = GetParam();
  Scheduler sched(Build(c));
  ClusterState s = Fabric();
  s.Allocate(s.FindNode("node-3"), {2, 0, 0});
  const ClusterState before = s;
  Decision d = sched.ScheduleOne(s, MakeGang("g").Members(6).Gpus(8).Obj(), 5);
  EXPECT_EQ(OutcomeName(d.outcome), OutcomeName(c.outcome)) << d.status.ToString();
  EXPECT_EQ(calls_.reserve, 1);
  EXPECT_EQ(calls_.unreserve, c.unreserve_calls);
  if (c.holds_capacity) {
    ASSERT_EQ(s.running().count("g"), 1u);
    EXPECT_EQ(d.placement.PlacedMembers(), 6);
    EXPECT_EQ(s.FreeGpus(s.root()), before.FreeGpus(before.root()) - 48);
  } else {
    EXPECT_TRUE(s.running().empty());
    EXPECT_TRUE(d.placement.assignments.empty());
    for (VertexId v = 0; v < s.vertex_count(); ++v) {
      EXPECT_EQ(s.FreeGpus(v), before.FreeGpus(v)) << s.vertex(v).path;
      EXPECT_EQ(s.WholeFreeNodes(v), before.WholeFreeNodes(v)) << s.vertex(v).path;
      for (int64_t g = 1; g <= 8; ++g) EXPECT_EQ(s.MemberCapacity(v, g), before.MemberCapacity(v, g));
    }
    for (NodeId n = 0; n < s.node_count(); ++n) EXPECT_EQ(s.node(n).allocated, before.node(n).allocated);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, FrameworkTest,
    ::testing::Values(
        FrameworkCase{"PermitAllows", Status::Ok(), Status::Ok(), Outcome::kPlaced, true, 0},
        FrameworkCase{"PermitRefuses", Status::Ok(), Status::Unschedulable("quota says no"), Outcome::kPending, false, 1},
        FrameworkCase{"PermitErrors", Status::Ok(), Status::Error("broken"), Outcome::kError, false, 1},
        FrameworkCase{"PermitWaitHoldsReservation", Status::Ok(), Status::Wait("approval"), Outcome::kWaiting, true, 0},
        FrameworkCase{"ReserveRefuses", Status::Unschedulable("no"), Status::Ok(), Outcome::kPending, false, 0}),
    CaseName());

TEST(FrameworkPluginTest, PermitRefusalNamesPluginAndReason) {
  Registry r = plugins::DefaultRegistry();
  Calls calls;
  ASSERT_TRUE(r.Register("test-permit", [&calls](const nlohmann::json&, const PluginContext&) {
                 return StatusOr<std::unique_ptr<Plugin>>(
                     std::make_unique<TestPermit>(Status::Unschedulable("quota says no"), &calls));
               }).ok());
  ProfileSpec spec = ProfileSpec::Default();
  spec.plugins.push_back({"test-permit", 0, nlohmann::json::object()});
  auto p = Profile::Build(spec, r, PluginContext{TopologyLevels::Default()});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Scheduler sched(std::move(p).value());
  ClusterState s = Fabric();
  // The first workload is refused; the second must still see the whole cluster.
  CycleResult res = sched.RunCycle(s, {MakeGang("a").Members(16).Gpus(8).Priority(1).Obj(), MakeGang("b").Gpus(8).Obj()}, 0);
  ASSERT_EQ(res.decisions.size(), 2u);
  EXPECT_EQ(res.decisions[0].workload_id, "a");
  EXPECT_EQ(res.decisions[0].status.plugin(), "test-permit");
  EXPECT_THAT(res.decisions[0].explanation, HasSubstr("quota says no"));
  EXPECT_EQ(calls.permit, 2);
  EXPECT_TRUE(s.running().count("b") == 0) << "b was refused by the same permit";
  EXPECT_EQ(s.FreeGpus(s.root()), 128);
}

TEST(FrameworkPluginTest, WaitPermitKeepsCapacityAndExplains) {
  Registry r = plugins::DefaultRegistry();
  Calls calls;
  ASSERT_TRUE(r.Register("test-permit", [&calls](const nlohmann::json&, const PluginContext&) {
                 return StatusOr<std::unique_ptr<Plugin>>(std::make_unique<TestPermit>(Status::Wait("approval"), &calls));
               }).ok());
  ProfileSpec spec = ProfileSpec::Default();
  spec.plugins.push_back({"test-permit", 0, nlohmann::json::object()});
  Scheduler sched(std::move(Profile::Build(spec, r, PluginContext{TopologyLevels::Default()})).value());
  ClusterState s = Fabric();
  Decision d = sched.ScheduleOne(s, MakeGang("g").Members(2).Gpus(8).Obj(), 0);
  EXPECT_EQ(d.outcome, Outcome::kWaiting);
  EXPECT_EQ(d.status.code(), StatusCode::kWait);
  EXPECT_THAT(d.explanation, HasSubstr("held: approval"));
  EXPECT_EQ(s.running().count("g"), 1u);
}

TEST(FrameworkPluginTest, PostFilterRunsOnlyForUnschedulable) {
  Registry r = plugins::DefaultRegistry();
  Calls calls;
  ASSERT_TRUE(r.Register("test-postfilter", [&calls](const nlohmann::json&, const PluginContext&) {
                 return StatusOr<std::unique_ptr<Plugin>>(std::make_unique<TestPostFilter>(&calls));
               }).ok());
  ProfileSpec spec = ProfileSpec::Default();
  spec.plugins.push_back({"test-postfilter", 0, nlohmann::json::object()});
  Scheduler sched(std::move(Profile::Build(spec, r, PluginContext{TopologyLevels::Default()})).value());
  ClusterState s = FabricState(1, 1, 1, 2);
  s.Allocate(0, {8, 0, 0});
  // Does not fit now: PostFilter proposes victims.
  Decision d = sched.ScheduleOne(s, MakeGang("g").Members(2).Gpus(8).Obj(), 0);
  EXPECT_EQ(d.outcome, Outcome::kPending);
  EXPECT_EQ(calls.postfilter, 1);
  EXPECT_EQ(d.preemption.victims, (std::vector<std::string>{"victim-a", "victim-b"}));
  EXPECT_THAT(d.status.Message(), HasSubstr("proposed: 2 victim(s)"));
  EXPECT_TRUE(s.running().empty()) << "PostFilter only proposes; nothing is evicted or placed";
  // Can never fit: PostFilter is skipped.
  Decision never = sched.ScheduleOne(s, MakeGang("h").Members(3).Gpus(8).Obj(), 0);
  EXPECT_EQ(never.outcome, Outcome::kRejected);
  EXPECT_EQ(calls.postfilter, 1);
  EXPECT_TRUE(never.preemption.victims.empty());
}

class FenceFilter final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "fence"; }
  Status Filter(const CycleState&, const Workload&, const Node& n) const override {
    if (n.name == "node-0" || n.name == "node-1") return Status::Unschedulable("node " + n.name + " is fenced");
    return Status::Ok();
  }
};

TEST(FrameworkPluginTest, FilterRefusesNodesAndIsExplainedOncePerNode) {
  Registry r = plugins::DefaultRegistry();
  ASSERT_TRUE(r.Register("fence", [](const nlohmann::json&, const PluginContext&) {
                 return StatusOr<std::unique_ptr<Plugin>>(std::make_unique<FenceFilter>());
               }).ok());
  ProfileSpec spec = ProfileSpec::Default();
  spec.plugins.push_back({"fence", 0, nlohmann::json::object()});
  Scheduler sched(std::move(Profile::Build(spec, r, PluginContext{TopologyLevels::Default()})).value());
  ClusterState s = Fabric();
  // node-0 is the tightest fit, but fenced.
  s.Allocate(s.FindNode("node-0"), {4, 0, 0});
  Decision small = sched.ScheduleOne(s, MakeGang("small").Gpus(2).Obj(), 0);
  ASSERT_EQ(small.outcome, Outcome::kPlaced) << small.status.ToString();
  EXPECT_NE(s.node(small.placement.assignments.at(0).node).name, "node-0");
  EXPECT_NE(s.node(small.placement.assignments.at(0).node).name, "node-1");
  // The whole cluster minus what is taken: the GPUs are there but two nodes are fenced. Each
  // fenced node is counted once although every domain level visits it.
  Decision all = sched.ScheduleOne(s, MakeGang("all").Members(14).Gpus(8).Obj(), 0);
  EXPECT_EQ(all.outcome, Outcome::kPending);
  EXPECT_THAT(all.status.Message(),
              HasSubstr("; 1 node(s) refused by filters, first: Unschedulable [fence]: node node-1 is fenced"));
  EXPECT_EQ(s.running().size(), 1u);
}

TEST(SchedulerTest, QueueOrderAndTieBreakById) {
  Scheduler sched = DefaultScheduler(PrioritySpec());
  std::vector<Workload> q = {MakeGang("c").Priority(1).Submitted(5).Obj(), MakeGang("b").Priority(1).Submitted(5).Obj(),
                             MakeGang("a").Priority(0).Submitted(0).Obj(), MakeGang("d").Priority(9).Submitted(9).Obj(),
                             MakeGang("e").Priority(1).Submitted(1).Obj()};
  sched.SortQueue(q);
  std::vector<std::string> ids;
  for (const auto& w : q) ids.push_back(w.id);
  EXPECT_THAT(ids, ::testing::ElementsAre("d", "e", "b", "c", "a"));
}

TEST(SchedulerTest, PlacedDecisionDescribesDomain) {
  Scheduler sched = DefaultScheduler();
  ClusterState s = Fabric();
  Decision d = sched.ScheduleOne(s, MakeGang("g").Members(4).Gpus(8).Required("leaf").Preferred("nvlink").Obj(), 0);
  ASSERT_EQ(d.outcome, Outcome::kPlaced) << d.status.ToString();
  EXPECT_EQ(d.explanation,
            "in leaf block-0/leaf-0 (required leaf); 4 node(s), 2 nvlink; preferred nvlink not met (spans 2); "
            "best fit of 4: 32 -> 0 free GPUs in domain");
  EXPECT_EQ(s.running().at("g").start_time_s, 0);
}


}  // namespace
}  // namespace tidal
