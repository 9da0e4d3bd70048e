// A gang whose running or pending members disagree on its size, minimum or queue (hand-made pods,
// an annotation edited on some of them) is refused as a spec error naming the field, both values
// and both pods, and never planned until they agree. Before, each member went by its own spec: one
// member was planned and reserved while another waited in PreEnqueue for a larger gang, and the
// gang went round Permit timeouts with nothing saying why.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;
using testing::RunningOn;

class GangConflictTest : public testing::EngineFixture {
 protected:
  static PodInfo Member(const std::string& name, int size) { return GangPod(name, "mix", size); }
  // CheckPod's and PlanPod's answers for uid are the same spec error naming `field`.
  void ExpectRefused(const std::string& uid, const std::string& field) {
    std::string gang;
    const Status c = engine_->CheckPod(uid, &gang);
    EXPECT_EQ(c.code(), StatusCode::kUnschedulableAndUnresolvable) << c.ToString();
    EXPECT_EQ(c.plugin(), "podspec");
    EXPECT_NE(c.Message().find(field), std::string::npos) << c.Message();
    const PlanResult p = engine_->PlanPod(uid);
    EXPECT_EQ(p.status.code(), StatusCode::kUnschedulableAndUnresolvable) << p.status.ToString();
    EXPECT_EQ(p.status.Message(), c.Message());
  }
};

TEST_F(GangConflictTest, MembersDisagreeingOnTheSizeAreRefusedUntilTheyAgree) {
  ASSERT_TRUE(Add({Member("a", 2), Member("b", 3)}).ok());
  ExpectRefused("uid-a", "tidal.dev/gang-size: 2 (pod a) and 3 (pod b)");
  ExpectRefused("uid-b", "tidal.dev/gang-size");
  EXPECT_EQ(engine_->Stats().plans, 0);
  ASSERT_TRUE(Add({Member("b", 2)}).ok());  // the annotation fixed
  std::string gang;
  ASSERT_TRUE(engine_->CheckPod("uid-b", &gang).ok());
  for (const std::string uid : {"uid-a", "uid-b"}) {
    const PlanResult r = engine_->PlanPod(uid);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_TRUE(engine_->Reserve(uid, r.node).ok());
  }
  EXPECT_EQ(engine_->Permit("uid-b").allow.size(), 2u);
}

TEST_F(GangConflictTest, MembersInDifferentQueuesAreRefused) {
  PodInfo a = Member("a", 2), b = Member("b", 2);
  a.labels[kLabelQueue] = "team-a";
  b.labels[kLabelQueue] = "team-b";
  ASSERT_TRUE(Add({a, b}).ok());
  ExpectRefused("uid-a", "tidal.dev/queue: \"team-a\" (pod a) and \"team-b\" (pod b)");
}

// A member that joins with another size drops the plan made for the others.
TEST_F(GangConflictTest, AConflictingMemberDropsThePlanOfTheOthers) {
  ASSERT_TRUE(Add({Member("a", 2), Member("b", 2)}).ok());
  ASSERT_TRUE(engine_->PlanPod("uid-a").status.ok());
  EXPECT_EQ(engine_->Stats().plans, 1);
  ASSERT_TRUE(Add({Member("c", 4)}).ok());
  EXPECT_EQ(engine_->Stats().plans, 0);
  ExpectRefused("uid-c", "tidal.dev/gang-size");
}

// Succeeded pods of an earlier run of the same gang name may carry another size: no conflict.
TEST_F(GangConflictTest, FinishedMembersOfAnEarlierRunDoNotConflict) {
  PodInfo old = RunningOn(Member("old", 4), "n0", now_ - 100);
  old.phase = PodPhase::kSucceeded;
  ASSERT_TRUE(Add({old, Member("a", 2), Member("b", 2)}).ok());
  std::string gang;
  EXPECT_TRUE(engine_->CheckPod("uid-a", &gang).ok());
  EXPECT_TRUE(engine_->PlanPod("uid-a").status.ok());
}

}  // namespace
}  // namespace tidal
