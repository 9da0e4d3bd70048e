// gang plugin: PreFilter validation and Wait for missing members, Permit guard, args.
#include "plugins/gang/gang.h"

#include <memory>
#include <string>

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

std::unique_ptr<Plugin> NewGang(const nlohmann::json& args = nlohmann::json::object()) {
  auto p = Gang::New(args, PluginContext{TopologyLevels::Default()});
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? std::move(p).value() : nullptr;
}

struct PreFilterCase {
  std::string name;
  Workload w;
  int32_t members_before;  // constraints.members on entry (normally w.members)
  StatusCode code;
  int32_t members_after;   // constraints.members on return
  std::string message;     // substring when not ok
};

class GangPreFilterTest : public ::testing::TestWithParam<PreFilterCase> {};

TEST_P(GangPreFilterTest, ValidatesAndNarrows) {
  const auto& c = GetParam();
  auto plugin = NewGang();
  auto* pf = dynamic_cast<PreFilterPlugin*>(plugin.get());
  ASSERT_NE(pf, nullptr);
  CycleState cs;
  PlacementConstraints pc;
  pc.members = c.members_before;
  pc.required_level = 1;
  Status s = pf->PreFilter(cs, c.w, TopologyLevels::Default(), pc);
  EXPECT_EQ(s.code(), c.code) << s.ToString();
  EXPECT_EQ(pc.members, c.members_after);
  EXPECT_EQ(pc.required_level, 1) << "gang does not touch topology constraints";
  if (c.code != StatusCode::kSuccess) {
    EXPECT_THAT(s.Message(), ::testing::StartsWith("gang " + c.w.id + ": "));
    EXPECT_THAT(s.Message(), HasSubstr(c.message));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, GangPreFilterTest,
    ::testing::Values(
        PreFilterCase{"RigidGang", MakeGang("g").Members(4).Gpus(8).Obj(), 4, StatusCode::kSuccess, 4, ""},
        PreFilterCase{"ElasticGang", MakeGang("g").Members(8).MinMembers(2).Gpus(8).Obj(), 8, StatusCode::kSuccess, 8, ""},
        PreFilterCase{"CpuOnlyMembers", MakeGang("g").Gpus(0).Cpu(500).Obj(), 1, StatusCode::kSuccess, 1, ""},
        PreFilterCase{"ZeroMembers", MakeGang("g").Members(0).Obj(), 0, StatusCode::kUnschedulableAndUnresolvable, 0,
                      "members: must be at least 1, got 0"},
        PreFilterCase{"NegativeMembers", MakeGang("g").Members(-2).Obj(), -2, StatusCode::kUnschedulableAndUnresolvable,
                      -2, "members: must be at least 1, got -2"},
        PreFilterCase{"ZeroMinMembers", MakeGang("g").Members(4).MinMembers(0).Obj(), 4,
                      StatusCode::kUnschedulableAndUnresolvable, 4, "minMembers: must be 1..4, got 0"},
        PreFilterCase{"MinMembersAboveMembers", MakeGang("g").Members(2).MinMembers(3).Obj(), 2,
                      StatusCode::kUnschedulableAndUnresolvable, 2, "minMembers: must be 1..2, got 3"},
        PreFilterCase{"NegativeRequest", MakeGang("g").Gpus(1).Cpu(-1).Obj(), 1, StatusCode::kUnschedulableAndUnresolvable,
                      1, "request: must not be negative"},
        PreFilterCase{"EmptyRequest", MakeGang("g").Gpus(0).Obj(), 1, StatusCode::kUnschedulableAndUnresolvable, 1,
                      "request: must ask for at least one resource"},
        PreFilterCase{"NoneArrived", MakeGang("g").Members(4).Gpus(8).Arrived(0).Obj(), 4, StatusCode::kWait, 4,
                      "0 of 4 required members have arrived"},
        PreFilterCase{"FewerThanMinArrived", MakeGang("g").Members(4).Gpus(8).Arrived(3).Obj(), 4, StatusCode::kWait, 4,
                      "3 of 4 required members have arrived"},
        PreFilterCase{"ElasticFewerThanMinArrived", MakeGang("g").Members(8).MinMembers(4).Gpus(8).Arrived(3).Obj(), 8,
                      StatusCode::kWait, 8, "3 of 4 required members have arrived"},
        PreFilterCase{"ElasticMinArrivedNarrows", MakeGang("g").Members(8).MinMembers(4).Gpus(8).Arrived(4).Obj(), 8,
                      StatusCode::kSuccess, 4, ""},
        PreFilterCase{"ElasticSomeArrivedNarrows", MakeGang("g").Members(8).MinMembers(4).Gpus(8).Arrived(6).Obj(), 8,
                      StatusCode::kSuccess, 6, ""},
        PreFilterCase{"AllArrived", MakeGang("g").Members(4).Gpus(8).Arrived(4).Obj(), 4, StatusCode::kSuccess, 4, ""},
        PreFilterCase{"MoreThanMembersArrived", MakeGang("g").Members(4).Gpus(8).Arrived(9).Obj(), 4, StatusCode::kSuccess,
                      4, ""},
        PreFilterCase{"ArrivedDoesNotWidenNarrowedConstraint",
                      MakeGang("g").Members(8).MinMembers(2).Gpus(8).Arrived(6).Obj(), 5, StatusCode::kSuccess, 5, ""},
        PreFilterCase{"ValidationBeforeWait", MakeGang("g").Members(4).Gpus(0).Arrived(1).Obj(), 4,
                      StatusCode::kUnschedulableAndUnresolvable, 4, "request: must ask for at least one resource"}),
    CaseName());

struct PermitCase {
  std::string name;
  Workload w;
  std::vector<MemberAssignment> assignments;
  bool ok;
};

class GangPermitTest : public ::testing::TestWithParam<PermitCase> {};

TEST_P(GangPermitTest, GuardsMemberCount) {
  const auto& c = GetParam();
  auto plugin = NewGang();
  auto* permit = dynamic_cast<PermitPlugin*>(plugin.get());
  ASSERT_NE(permit, nullptr);
  CycleState cs;
  Candidate cand;
  cand.assignments = c.assignments;
  Status s = permit->Permit(cs, c.w, cand);
  if (c.ok) {
    EXPECT_TRUE(s.ok()) << s.ToString();
  } else {
    EXPECT_EQ(s.code(), StatusCode::kUnschedulable);
    EXPECT_THAT(s.Message(), HasSubstr("gang " + c.w.id + ": candidate places " + std::to_string(cand.PlacedMembers()) +
                                       " members, need " + std::to_string(c.w.min_members) + ".." +
                                       std::to_string(c.w.members)));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, GangPermitTest,
    ::testing::Values(
        PermitCase{"RigidExact", MakeGang("g").Members(4).Obj(), {{0, 2}, {1, 2}}, true},
        PermitCase{"RigidOneShort", MakeGang("g").Members(4).Obj(), {{0, 2}, {1, 1}}, false},
        PermitCase{"RigidOneOver", MakeGang("g").Members(4).Obj(), {{0, 4}, {1, 1}}, false},
        PermitCase{"Empty", MakeGang("g").Members(1).Obj(), {}, false},
        PermitCase{"SingleMember", MakeGang("g").Obj(), {{3, 1}}, true},
        PermitCase{"ElasticAtMin", MakeGang("g").Members(8).MinMembers(4).Obj(), {{0, 4}}, true},
        PermitCase{"ElasticBetween", MakeGang("g").Members(8).MinMembers(4).Obj(), {{0, 3}, {1, 3}}, true},
        PermitCase{"ElasticAtMax", MakeGang("g").Members(8).MinMembers(4).Obj(), {{0, 8}}, true},
        PermitCase{"ElasticBelowMin", MakeGang("g").Members(8).MinMembers(4).Obj(), {{0, 3}}, false},
        PermitCase{"ElasticAboveMax", MakeGang("g").Members(8).MinMembers(4).Obj(), {{0, 8}, {1, 1}}, false}),
    CaseName());

struct ArgsCase {
  std::string name;
  nlohmann::json args;
  std::string error;  // "" = accepted
};

class GangArgsTest : public ::testing::TestWithParam<ArgsCase> {};

TEST_P(GangArgsTest, Validates) {
  auto p = Gang::New(GetParam().args, PluginContext{TopologyLevels::Default()});
  if (GetParam().error.empty()) {
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ((*p)->Name(), "gang");
  } else {
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().Message(), GetParam().error);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, GangArgsTest,
                         ::testing::Values(ArgsCase{"EmptyMapping", nlohmann::json::object(), ""},
                                           ArgsCase{"Null", nullptr, ""},
                                           ArgsCase{"UnknownKey", {{"timeout", 5}}, "timeout: unknown argument (accepted: none)"},
                                           ArgsCase{"NotAMapping", nlohmann::json::array({1}), "args must be a mapping"}),
                         CaseName());

TEST(GangTest, ExtensionPoints) {
  auto plugin = NewGang();
  ASSERT_NE(plugin, nullptr);
  EXPECT_NE(dynamic_cast<PreFilterPlugin*>(plugin.get()), nullptr);
  EXPECT_NE(dynamic_cast<PermitPlugin*>(plugin.get()), nullptr);
  EXPECT_EQ(dynamic_cast<ScorePlugin*>(plugin.get()), nullptr);
  EXPECT_EQ(dynamic_cast<QueueSortPlugin*>(plugin.get()), nullptr);
}

TEST(GangTest, SchedulerHoldsGangUntilMembersArrive) {
  ClusterState s = tidal::testing::FabricState(1, 1, 2, 2);
  Scheduler sched = tidal::testing::DefaultScheduler();
  Decision waiting = sched.ScheduleOne(s, MakeGang("g").Members(4).Gpus(8).Arrived(3).Obj(), 0);
  EXPECT_EQ(waiting.outcome, Outcome::kWaiting);
  EXPECT_EQ(waiting.status.plugin(), "gang");
  EXPECT_TRUE(waiting.placement.assignments.empty());
  EXPECT_TRUE(s.running().empty()) << "a waiting gang holds no capacity";
  Decision placed = sched.ScheduleOne(s, MakeGang("g").Members(4).Gpus(8).Arrived(4).Obj(), 0);
  EXPECT_EQ(placed.outcome, Outcome::kPlaced) << placed.status.ToString();
  EXPECT_EQ(placed.placement.PlacedMembers(), 4);
}

TEST(GangTest, SchedulerPlacesOnlyArrivedMembersOfElasticGang) {
  ClusterState s = tidal::testing::FabricState(1, 1, 2, 2);
  Scheduler sched = tidal::testing::DefaultScheduler();
  Decision d = sched.ScheduleOne(s, MakeGang("g").Members(4).MinMembers(2).Gpus(8).Arrived(3).Obj(), 0);
  ASSERT_EQ(d.outcome, Outcome::kPlaced) << d.status.ToString();
  EXPECT_EQ(d.placement.PlacedMembers(), 3);
  EXPECT_EQ(s.FreeGpus(s.root()), 8);
}

}  // namespace
}  // namespace tidal::plugins
