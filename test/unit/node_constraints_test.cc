// Cordoned nodes (spec.unschedulable) and the node.kubernetes.io/unschedulable toleration: the
// node-static check (NodeConstraints), the aggregates that keep cordoned capacity apart
// (ClusterState, with_cordoned), and the search and scheduler that use it only for pods that
// tolerate the taint (kube-scheduler's NodeUnschedulable; DaemonSet-like pods).
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/api/node_constraints.h"
#include "core/framework/cycle.h"
#include "core/framework/placement.h"
#include "core/framework/scheduler.h"
#include "test/support/builders.h"

namespace tidal {
namespace {

using testing::DefaultScheduler;
using testing::MakeGang;
using testing::MakeNode;
using testing::NodesState;

Toleration Tol(std::string key, bool exists, std::optional<TaintEffect> effect, std::string value = "") {
  return Toleration{std::move(key), std::move(value), exists, effect};
}

std::shared_ptr<const NodeConstraints> Tolerating(Toleration t) {
  auto c = std::make_shared<NodeConstraints>();
  c->tolerations.push_back(std::move(t));
  return c;
}

Workload WithConstraints(Workload w, std::shared_ptr<const NodeConstraints> c) {
  w.constraints_sig = c->Signature();
  w.constraints = std::move(c);
  return w;
}

TEST(CordonToleration, WhichTolerationsAdmitACordonedNode) {
  const Node cordoned = MakeNode("n0").Health(NodeHealth::kCordoned).Obj();
  struct Case {
    const char* name;
    std::vector<Toleration> tolerations;
    bool admits;
  };
  const Case cases[] = {
      {"none", {}, false},
      {"Exists NoSchedule (DaemonSet)", {Tol(kTaintUnschedulable, true, TaintEffect::kNoSchedule)}, true},
      {"Exists, any effect", {Tol(kTaintUnschedulable, true, std::nullopt)}, true},
      {"Equal with the empty value", {Tol(kTaintUnschedulable, false, TaintEffect::kNoSchedule)}, true},
      {"Equal with another value", {Tol(kTaintUnschedulable, false, TaintEffect::kNoSchedule, "yes")}, false},
      {"wildcard: empty key with Exists", {Tol("", true, std::nullopt)}, true},
      {"another effect", {Tol(kTaintUnschedulable, true, TaintEffect::kNoExecute)}, false},
      {"another key", {Tol("node.kubernetes.io/not-ready", true, std::nullopt)}, false},
  };
  for (const auto& c : cases) {
    NodeConstraints nc;
    nc.tolerations = c.tolerations;
    EXPECT_EQ(nc.ToleratesUnschedulable(), c.admits) << c.name;
    EXPECT_EQ(nc.Refusal(cordoned).empty(), c.admits) << c.name << ": " << nc.Refusal(cordoned);
    EXPECT_EQ(cordoned.SchedulableFor(nc.ToleratesUnschedulable()), c.admits) << c.name;
  }
  EXPECT_EQ(NodeConstraints{}.Refusal(cordoned),
            "node is cordoned (spec.unschedulable) and the pod does not tolerate node.kubernetes.io/unschedulable:NoSchedule");
  // The toleration is about cordoning only: other health still refuses, a ready node is not affected.
  EXPECT_FALSE(MakeNode("n1").Health(NodeHealth::kUnhealthy).Obj().SchedulableFor(true));
  EXPECT_FALSE(MakeNode("n2").Health(NodeHealth::kDraining).Obj().SchedulableFor(true));
  EXPECT_EQ(NodeConstraints{}.Refusal(MakeNode("n3").Obj()), "");
  // A cordoned node usually carries the taint too (the node lifecycle controller adds it).
  Node tainted = cordoned;
  tainted.taints.push_back(Taint{kTaintUnschedulable, "", TaintEffect::kNoSchedule});
  EXPECT_EQ(Tolerating(Tol(kTaintUnschedulable, true, TaintEffect::kNoSchedule))->Refusal(tainted), "");
}

// Cordoned capacity by brute force, to check the with_cordoned aggregates against.
int64_t CordonedFree(const ClusterState& s, NodeId n) {
  const Node& node = s.node(n);
  return node.health == NodeHealth::kCordoned ? std::clamp<int64_t>(node.capacity.gpus - node.allocated.gpus, 0, s.max_gpus_per_node())
                                              : 0;
}

void ExpectCordonedAggregatesExact(const ClusterState& s) {
  const int64_t max = s.max_gpus_per_node();
  for (VertexId v = 0; v < s.vertex_count(); ++v) {
    SCOPED_TRACE("vertex " + s.vertex(v).path);
    int64_t free = 0;
    for (NodeId n = s.vertex(v).node_begin; n < s.vertex(v).node_end; ++n) {
      free += std::clamp<int64_t>(s.node(n).FreeGpus(), 0, max) + CordonedFree(s, n);
    }
    ASSERT_EQ(s.FreeGpus(v, true), free);
    for (int64_t g = 1; g <= max; ++g) {
      int64_t cap = 0;
      for (NodeId n = s.vertex(v).node_begin; n < s.vertex(v).node_end; ++n) {
        cap += (std::clamp<int64_t>(s.node(n).FreeGpus(), 0, max) + CordonedFree(s, n)) / g;
      }
      ASSERT_EQ(s.MemberCapacity(v, g, true), cap) << "g=" << g;
      for (int32_t m = 1; m <= 2; ++m) {
        int64_t best = max + 1;
        for (NodeId n = s.vertex(v).node_begin; n < s.vertex(v).node_end; ++n) {
          const int64_t f = std::clamp<int64_t>(s.node(n).FreeGpus(), 0, max) + CordonedFree(s, n);
          if (f >= g * m) best = std::min(best, f);
        }
        ASSERT_EQ(s.TightestNodeFree(v, g, m, true), best) << "g=" << g << " m=" << m;
      }
    }
  }
}

TEST(CordonToleration, CordonedCapacityIsKeptApartAndExactUnderMutation) {
  ClusterState s = NodesState({MakeNode("n0").At("b0", "l0", "v0").Health(NodeHealth::kCordoned).Obj(),
                               MakeNode("n1").At("b0", "l0", "v0").Obj(), MakeNode("n2").At("b0", "l1", "v1").Gpus(4).Obj()});
  EXPECT_EQ(s.FreeGpus(s.root()), 12);
  EXPECT_EQ(s.FreeGpus(s.root(), true), 20);
  EXPECT_EQ(s.MemberCapacity(s.root(), 8), 1);
  EXPECT_EQ(s.MemberCapacity(s.root(), 8, true), 2);
  ExpectCordonedAggregatesExact(s);
  std::mt19937 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const NodeHealth healths[] = {NodeHealth::kReady, NodeHealth::kUnhealthy, NodeHealth::kCordoned};
  std::vector<std::pair<NodeId, Resources>> live;
  for (int step = 0; step < 200; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const NodeId n = static_cast<NodeId>(pick(0, s.node_count() - 1));
    switch (pick(0, 2)) {
      case 0: {
        const Resources r{pick(0, 10), 0, 0};
        s.Allocate(n, r);
        live.emplace_back(n, r);
        break;
      }
      case 1:
        if (!live.empty()) {
          s.Release(live.back().first, live.back().second);
          live.pop_back();
        }
        break;
      default:
        s.SetHealth(n, healths[pick(0, 2)]);
    }
    ExpectCordonedAggregatesExact(s);
  }
}

TEST(CordonToleration, OnlyAPodThatToleratesTheTaintLandsOnACordonedNode) {
  // One leaf: n0 is cordoned, n1 is half used; a whole-node member fits only on n0.
  ClusterState s = NodesState({MakeNode("n0").At("b0", "l0", "v0").Health(NodeHealth::kCordoned).Obj(),
                               MakeNode("n1").At("b0", "l0", "v0").Used(4).Obj()});
  const Scheduler sched = DefaultScheduler();
  const Decision plain = sched.ScheduleOne(s, MakeGang("plain").Gpus(8).Obj(), 0);
  EXPECT_EQ(plain.outcome, Outcome::kPending) << plain.explanation;
  // Tolerations that do not cover the cordon change nothing.
  const Decision other = sched.ScheduleOne(
      s, WithConstraints(MakeGang("other").Gpus(8).Obj(), Tolerating(Tol("dedicated", true, std::nullopt))), 0);
  EXPECT_EQ(other.outcome, Outcome::kPending) << other.explanation;

  const auto daemon = Tolerating(Tol(kTaintUnschedulable, true, TaintEffect::kNoSchedule));
  const Decision d = sched.ScheduleOne(s, WithConstraints(MakeGang("daemon").Gpus(8).Obj(), daemon), 0);
  ASSERT_EQ(d.outcome, Outcome::kPlaced) << d.explanation;
  ASSERT_EQ(d.placement.assignments.size(), 1u);
  EXPECT_EQ(s.node(d.placement.assignments[0].node).name, "n0");
  EXPECT_NE(d.explanation.find("8 -> 0 free GPUs"), std::string::npos) << d.explanation;
  EXPECT_EQ(s.FreeGpus(s.root(), true), 4) << "the placement is charged to the cordoned node";
  // A tolerating gang may span cordoned and ready nodes of one domain.
  ClusterState mixed = NodesState({MakeNode("n0").At("b0", "l0", "v0").Health(NodeHealth::kCordoned).Obj(),
                                   MakeNode("n1").At("b0", "l0", "v0").Obj()});
  const Decision gang = sched.ScheduleOne(mixed, WithConstraints(MakeGang("gang").Members(2).Gpus(8).Obj(), daemon), 0);
  ASSERT_EQ(gang.outcome, Outcome::kPlaced) << gang.explanation;
  EXPECT_EQ(gang.placement.assignments.size(), 2u);
}

TEST(CordonToleration, AToleratingWorkloadKeepsItsReservationOnACordonedNode) {
  ClusterState s = NodesState({MakeNode("n0").At("b0", "l0", "v0").Obj(), MakeNode("n1").At("b0", "l0", "v0").Obj()});
  s.SetHealth(1, NodeHealth::kCordoned);
  std::map<std::string, Reservation> book;
  book["daemon"] = Reservation{"daemon", 100, {{1, 1}}, Resources{8, 0, 0}, 200};
  book["plain"] = Reservation{"plain", 100, {{1, 1}}, Resources{8, 0, 0}, 200};
  const Workload daemon =
      WithConstraints(MakeGang("daemon").Gpus(8).Obj(), Tolerating(Tol(kTaintUnschedulable, true, std::nullopt)));
  const Workload plain = MakeGang("plain").Gpus(8).Obj();
  const KeptReservations k = KeepReservations(book, {&daemon, &plain}, s);
  EXPECT_EQ(k.kept.count("daemon"), 1u);
  EXPECT_EQ(k.kept.count("plain"), 0u) << "a cordoned node holds no reservation for a pod that may not use it";
}

// A tolerating preemptor may make room on a cordoned node: low-priority work still runs on n0
// (cordoned after it started) and n1 runs work nobody may preempt. The victim search judged the
// room without the cordoned node (FitsInside, the GPU estimate) and found no victims, although
// the placement after the eviction would use n0; a pod that does not tolerate the cordon still
// finds none.
TEST(CordonToleration, AToleratingPreemptorMakesRoomOnACordonedNode) {
  ClusterState s = NodesState({MakeNode("n0").At("b0", "l0", "v0").Obj(), MakeNode("n1").At("b0", "l0", "v0").Obj()});
  Workload low = MakeGang("low").Gpus(8).Priority(1).Obj();
  low.preemptible = true;
  ASSERT_TRUE(s.AddRunning(Allocation{low, {{0, 1}}, 0}).ok());
  ASSERT_TRUE(s.AddRunning(Allocation{MakeGang("pinned").Gpus(8).Priority(1).Obj(), {{1, 1}}, 0}).ok());
  s.SetHealth(0, NodeHealth::kCordoned);
  const Scheduler sched = DefaultScheduler();
  const Decision plain = sched.ScheduleOne(s, MakeGang("plain").Gpus(8).Priority(50).Obj(), 10000);
  EXPECT_TRUE(plain.preemption.victims.empty()) << "a pod that does not tolerate the cordon may not use n0";
  const auto daemon = Tolerating(Tol(kTaintUnschedulable, true, TaintEffect::kNoSchedule));
  const Decision d = sched.ScheduleOne(s, WithConstraints(MakeGang("burn-in").Gpus(8).Priority(50).Obj(), daemon), 10000);
  EXPECT_EQ(d.outcome, Outcome::kPending) << d.explanation;
  EXPECT_EQ(d.preemption.victims, std::vector<std::string>{"low"}) << d.explanation;
}

}  // namespace
}  // namespace tidal
