// Gangs that an earlier scheduler bound in part (a leader killed mid-bind, an engine restarted):
// the members still pending are planned as the rest of the gang, counting the members of this run
// that already finished (EngineGang::finished_starts, Gang::Summary::finished), also when only a
// door's resync tells the engine of them, and never twice.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;
using testing::RunningOn;

class PartialGangTest : public testing::EngineFixture {
 protected:
  // A 4-member gang "half" created at t0; members [0, bound) ran from t0 + 1.
  std::vector<PodInfo> Half(int bound) {
    std::vector<PodInfo> g;
    for (int i = 0; i < 4; ++i) {
      g.push_back(GangPod("h" + std::to_string(i), "half", 4));
      g.back().creation_unix = t0_;
      if (i < bound) g.back() = RunningOn(g.back(), "n" + std::to_string(i), t0_ + 1);
    }
    return g;
  }
  static PodInfo Succeeded(PodInfo p) {
    p.phase = PodPhase::kSucceeded;
    return p;
  }
  // One snapshot of the Kubernetes door in two messages, as the shim sends it after the engine
  // restarted: every node and the pods its informer has, then the finished members it looked up
  // (each upserted in its final state and vanished in the same, last message).
  Status Resync(const std::vector<PodInfo>& present, const std::vector<PodInfo>& finished) {
    SyncBatch first;
    first.resync = true;
    first.snapshot_continues = true;
    for (int i = 0; i < 8; ++i) first.upsert_nodes.push_back(Node(i));
    first.upsert_pods = present;
    if (Status s = Sync(first); !s.ok()) return s;
    SyncBatch last;
    for (const auto& p : finished) {
      last.upsert_pods.push_back(Succeeded(p));
      last.vanished_pods.push_back(p.uid);
    }
    return Sync(last);
  }
  // Plans and reserves each pending member; what Permit allows at the last one.
  size_t PlaceAndPermit(const std::vector<std::string>& uids) {
    for (const auto& uid : uids) {
      PlanResult r = engine_->PlanPod(uid);
      EXPECT_TRUE(r.status.ok()) << uid << ": " << r.status.ToString();
      if (!r.status.ok() || !engine_->Reserve(uid, r.node).ok()) return 0;
    }
    PermitResult p = engine_->Permit(uids.back());
    EXPECT_TRUE(p.status.ok()) << p.status.ToString();
    return p.allow.size();
  }
  const int64_t t0_ = now_;
};

// A gang an earlier scheduler bound in part (a leader killed mid-bind): the rest is planned for
// the members still pending, also when the bound members have already finished (short pods; the
// new leader took over after they ended), and also once the finished pods are gone (the Kubernetes
// door deletes a pod that finished). Before, the finished members no longer counted and the two
// pending pods waited for a gang of 4 that could never form again.
class PartlyBoundGangTest : public PartialGangTest, public ::testing::WithParamInterface<bool> {};

TEST_P(PartlyBoundGangTest, IsCompletedAlsoAfterItsBoundMembersFinished) {
  const bool deleted = GetParam();
  std::vector<PodInfo> g = Half(2);
  ASSERT_TRUE(Add(g).ok());
  ASSERT_TRUE(Add({Succeeded(g[0]), Succeeded(g[1])}).ok());
  if (deleted) {
    ASSERT_TRUE(Delete({"uid-h0", "uid-h1"}).ok());
  }
  now_ = t0_ + 10;
  std::string gang;
  ASSERT_TRUE(engine_->CheckPod("uid-h2", &gang).ok()) << "its finished members count as members that exist";
  EXPECT_EQ(PlaceAndPermit({"uid-h2", "uid-h3"}), 2u) << "the two members left, not a gang of 4";
}

INSTANTIATE_TEST_SUITE_P(FinishedPods, PartlyBoundGangTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Deleted" : "StillThere"; });

// An engine that restarts (not a failover) never saw the bound members finish, and the door's
// informer no longer has them (kube-scheduler's informer drops finished pods): the door's resync
// names them (upserted Succeeded, vanished), so the rest is planned as 2 more, and the finished
// pods do not stay in the engine.
TEST_F(PartialGangTest, ARestartedEngineLearnsFinishedMembersFromTheResync) {
  std::vector<PodInfo> g = Half(2);
  ASSERT_TRUE(Resync({g[2], g[3]}, {g[0], g[1]}).ok());
  now_ = t0_ + 10;
  std::string gang;
  ASSERT_TRUE(engine_->CheckPod("uid-h2", &gang).ok()) << "the finished members the resync named count";
  EXPECT_EQ(engine_->Stats().pods, 2) << "the finished pods were vanished, not kept";
  EXPECT_EQ(PlaceAndPermit({"uid-h2", "uid-h3"}), 2u);
}

// Every resync (a reconnect to the same engine, too) names the finished members again: each counts
// once. Before (start times in a list), a member named by two resyncs counted twice and only two of
// the three pending members were planned.
TEST_F(PartialGangTest, AFinishedMemberNamedByEveryResyncCountsOnce) {
  std::vector<PodInfo> g = Half(1);
  ASSERT_TRUE(Add(g).ok());
  ASSERT_TRUE(Add({Succeeded(g[0])}).ok());
  ASSERT_TRUE(Delete({"uid-h0"}).ok());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(Resync({g[1], g[2], g[3]}, {g[0]}).ok());
  now_ = t0_ + 10;
  EXPECT_EQ(PlaceAndPermit({"uid-h1", "uid-h2", "uid-h3"}), 3u) << "three members left, the finished one counted once";
}

// A member that finished and left before its replacement was created (a Job's next pod) is not a
// member of the replacement's run: the running members and the replacement make the gang.
TEST_F(PartialGangTest, AReplacementCreatedAfterAMemberFinishedIsPlannedBesideTheRunningOnes) {
  std::vector<PodInfo> g;
  for (int i = 0; i < 2; ++i) g.push_back(RunningOn(GangPod("r" + std::to_string(i), "wave", 2), "n" + std::to_string(i), t0_));
  ASSERT_TRUE(Add(g).ok());
  ASSERT_TRUE(Add({Succeeded(g[0])}).ok());
  ASSERT_TRUE(Delete({"uid-r0"}).ok());
  PodInfo next = GangPod("r2", "wave", 2);
  next.creation_unix = t0_ + 500;
  ASSERT_TRUE(Add({next}).ok());
  EXPECT_EQ(PlaceAndPermit({"uid-r2"}), 1u) << "one member beside the running one";
}

// Succeeded pods of an earlier run under the same gang name (started before this run's pods were
// created) are not members of this run: a new run's first pod alone does not start.
TEST_F(PartialGangTest, FinishedPodsOfAnEarlierRunOfTheGangNameDoNotStartANewRunShort) {
  std::vector<PodInfo> old;
  for (int i = 0; i < 4; ++i) {
    old.push_back(Succeeded(RunningOn(GangPod("old" + std::to_string(i), "again", 4), "n" + std::to_string(i), t0_ - 100)));
    old.back().creation_unix = t0_ - 100;
  }
  ASSERT_TRUE(Add(old).ok());
  std::vector<PodInfo> run;
  for (int i = 0; i < 4; ++i) {
    run.push_back(GangPod("new" + std::to_string(i), "again", 4));
    run.back().creation_unix = t0_;
  }
  ASSERT_TRUE(Add({run[0]}).ok());
  EXPECT_FALSE(engine_->PlanPod("uid-new0").status.ok()) << "one pod of a gang of 4 never starts alone";
  ASSERT_TRUE(Add({run[1], run[2], run[3]}).ok());
  PlanResult r = engine_->PlanPod("uid-new0");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  std::set<std::string> nodes{r.node};
  for (int i = 1; i < 4; ++i) nodes.insert(engine_->PlanPod("uid-new" + std::to_string(i)).node);
  EXPECT_EQ(nodes.size(), 4u) << "a whole gang of 4";
}

// A rigid gang evicted whole (member-lost, preemption, a drain) whose controller creates the
// replacements while the old members still terminate (a Job does not wait for them): the old pods
// are no members of the new run. Before, they counted as bound: the replacements were "surplus"
// ("already has 2 of 2 members bound") while both terminated, and then planned one by one as each
// old pod went (a plan of 1, bound alone while the rest might never fit: a half-bound gang).
TEST_F(PartialGangTest, ReplacementsOfAGangWhoseMembersStillTerminateArePlannedWhole) {
  std::vector<PodInfo> old;
  for (int i = 0; i < 2; ++i) {
    old.push_back(RunningOn(GangPod("o" + std::to_string(i), "job", 2), "n" + std::to_string(i), t0_));
    old.back().creation_unix = t0_;
  }
  ASSERT_TRUE(Add(old).ok());
  for (auto& p : old) p.terminating = true;  // evicted: their kubelets are stopping them
  ASSERT_TRUE(Add(old).ok());
  std::vector<PodInfo> run;
  for (int i = 0; i < 2; ++i) {
    run.push_back(GangPod("r" + std::to_string(i), "job", 2));
    run.back().creation_unix = t0_ + 5;
  }
  ASSERT_TRUE(Add({run[0]}).ok());
  now_ = t0_ + 10;
  std::string gang;
  EXPECT_EQ(engine_->CheckPod("uid-r0", &gang).code(), StatusCode::kWait)
      << "1 of 2 members of the new run exist; the terminating ones are not members";
  ASSERT_TRUE(Add({run[1]}).ok());
  ASSERT_TRUE(engine_->CheckPod("uid-r0", &gang).ok());
  ASSERT_TRUE(Delete({"uid-o0"}).ok());  // one old pod is gone, the other still terminates
  PlanResult r0 = engine_->PlanPod("uid-r0");
  ASSERT_TRUE(r0.status.ok()) << r0.status.ToString();
  EXPECT_NE(r0.node, "n1") << "the terminating member's GPUs are still in use";
  ASSERT_TRUE(engine_->Reserve("uid-r0", r0.node).ok());
  PermitResult p = engine_->Permit("uid-r0");
  EXPECT_EQ(p.status.code(), StatusCode::kWait) << "the plan is for both members, not the one left over: "
                                                << p.status.ToString();
  EXPECT_NE(p.status.Message().find("1 of 2 members reserved"), std::string::npos) << p.status.Message();
  EXPECT_EQ(PlaceAndPermit({"uid-r1"}), 2u) << "both replacements bind together";
}

// A member held back by spec.schedulingGates (the shim marks the converted pod: kSchedulingGates)
// cannot be placed: its gang waits for it in PreEnqueue as for a member not created yet, and the
// reason names it. Before, it counted as present: the other members were planned and reserved and
// waited in Permit for it until permitTimeoutSeconds, were released and planned again, over and
// over, holding their nodes, with only "rejected due to timeout after waiting 20s at plugin Tidal".
TEST_F(PartialGangTest, AMemberHeldBackBySchedulingGatesIsWaitedForAndNamed) {
  std::vector<PodInfo> g;
  for (int i = 0; i < 3; ++i) g.push_back(GangPod("g" + std::to_string(i), "gated", 3));
  g[2].annotations[kSchedulingGates] = "example.com/wait";
  ASSERT_TRUE(Add(g).ok());
  std::string gang;
  const Status st = engine_->CheckPod("uid-g0", &gang);
  EXPECT_EQ(st.code(), StatusCode::kWait) << st.ToString();
  EXPECT_NE(st.Message().find("2 of 3 members exist, 1 more held back by spec.schedulingGates (pod g2 waits for "
                              "example.com/wait"),
            std::string::npos)
      << st.Message();
  EXPECT_FALSE(engine_->PlanPod("uid-g0").status.ok()) << "no plan waits in Permit for a gated member";
  EXPECT_EQ(engine_->Stats().plans, 0);
  g[2].annotations.erase(kSchedulingGates);  // its gate removed
  ASSERT_TRUE(Add({g[2]}).ok());
  ASSERT_TRUE(engine_->CheckPod("uid-g0", &gang).ok());
  EXPECT_EQ(PlaceAndPermit({"uid-g0", "uid-g1", "uid-g2"}), 3u);
}

// The e2e partial-gang case: the members left are gated while the bound ones run and finish (and
// are deleted). They are members of the run all the same: once ungated, the two are placed as the
// rest of the gang, not held for a gang of 4 (the finished members were forgotten while nothing
// but gated pods was pending).
TEST_F(PartialGangTest, TheGatedRestOfAGangWhoseBoundMembersFinishedIsPlacedOnceUngated) {
  std::vector<PodInfo> g = Half(2);
  g[2].annotations[kSchedulingGates] = "e2e.tidal.dev/hold";
  g[3].annotations[kSchedulingGates] = "e2e.tidal.dev/hold";
  ASSERT_TRUE(Add(g).ok());
  ASSERT_TRUE(Add({Succeeded(g[0]), Succeeded(g[1])}).ok());
  ASSERT_TRUE(Delete({"uid-h0", "uid-h1"}).ok());
  now_ = t0_ + 10;
  g[2].annotations.clear();
  g[3].annotations.clear();
  ASSERT_TRUE(Add({g[2], g[3]}).ok());
  std::string gang;
  ASSERT_TRUE(engine_->CheckPod("uid-h2", &gang).ok()) << "its finished members still count";
  EXPECT_EQ(PlaceAndPermit({"uid-h2", "uid-h3"}), 2u);
}

}  // namespace
}  // namespace tidal
