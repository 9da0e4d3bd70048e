// PoolLending (core/state/lending.h), the rules alone: idle hysteresis, the nodes a pool keeps, the
// owner's own demand before any loan, reclaim on the owner's demand (least borrower work lost
// first), return only once the borrowers are gone, idle loans going back; and the config's errors.
// Threading: single-threaded.
#include <gtest/gtest.h>

#include "core/state/lending.h"

namespace tidal {
namespace {

using Kind = PoolLending::Change::Kind;

class LendingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    policy_.pool = "slurm";
    policy_.idle_s = 60;
    policy_.grace_cap_s = 120;
    for (int i = 0; i < 4; ++i) nodes_.push_back({"s" + std::to_string(i), "slurm", true, 8, 0, 0, 0});
  }
  // Kubernetes (the borrower) waits for `gpus`; Slurm (the owner) for `owner`.
  std::vector<PoolLending::Change> Step(int64_t gpus, int64_t owner = 0) {
    PoolLending::Demand d;
    d.borrower_gpus["slurm"] = gpus;
    d.owner_gpus["slurm"] = owner;
    return lending_.Step(nodes_, d, now_, {policy_});
  }
  std::vector<std::string> Of(const std::vector<PoolLending::Change>& c, Kind k) {
    std::vector<std::string> out;
    for (const auto& x : c) {
      if (x.kind == k) out.push_back(x.node);
    }
    return out;
  }
  void Borrow(size_t i, int64_t gpus, int64_t at_risk = 0) {
    nodes_[i].used_gpus = nodes_[i].borrower_gpus = gpus;
    nodes_[i].at_risk_gpu_s = at_risk;
  }

  LendingPolicy policy_;
  std::vector<PoolLending::NodeFacts> nodes_;
  PoolLending lending_;
  int64_t now_ = 1000;
};

TEST_F(LendingTest, AnIdleNodeIsLentOnlyAfterIdleSecondsAndOnlyWhatTheBorrowerNeeds) {
  EXPECT_TRUE(Step(16).empty()) << "idle for 0 s";
  now_ += 59;
  EXPECT_TRUE(Step(16).empty()) << "idle for 59 s";
  now_ += 1;
  auto c = Step(16);
  EXPECT_EQ(Of(c, Kind::kLent), (std::vector<std::string>{"s0", "s1"})) << "16 GPUs: two 8-GPU nodes";
  ASSERT_NE(lending_.Find("s0"), nullptr);
  EXPECT_TRUE(lending_.Find("s0")->preemptible_only);
  EXPECT_EQ(lending_.Find("s0")->grace_cap_s, 120);
  EXPECT_TRUE(Step(16).empty()) << "the lent nodes' free GPUs cover the demand now";
}

TEST_F(LendingTest, NothingIsLentWithoutBorrowerDemandOrWhileTheOwnerWaitsOrBelowKeep) {
  now_ += 100;
  Step(0);
  now_ += 100;
  EXPECT_TRUE(Step(0).empty()) << "no borrower demand";
  EXPECT_TRUE(Step(64, 40).empty()) << "the owner waits for more than its free 32 GPUs";
  auto c = Step(64, 16);
  EXPECT_EQ(Of(c, Kind::kLent).size(), 2u) << "the owner's 16 stay covered by two unlent nodes";
  lending_.Clear();
  policy_.keep_nodes = 3;
  EXPECT_EQ(Of(Step(64), Kind::kLent).size(), 0u) << "the idle clocks start again after Clear";
  now_ += 60;
  EXPECT_EQ(Of(Step(64), Kind::kLent), (std::vector<std::string>{"s0"})) << "keep: 3 of 4 stay";
  policy_.keep_nodes = 0;
  policy_.lend = false;
  c = Step(64);
  EXPECT_EQ(Of(c, Kind::kReclaiming), (std::vector<std::string>{"s0"})) << "a pool that stops lending takes its loans back";
  EXPECT_EQ(Of(c, Kind::kReturned), (std::vector<std::string>{"s0"})) << "nothing of the borrower's there: back at once";
}

TEST_F(LendingTest, AUsedNodeIsNotLentAndIdleHysteresisRestartsAfterUse) {
  nodes_.resize(1);
  nodes_[0].used_gpus = 1;  // the owner's own job
  Step(8);
  now_ += 120;
  EXPECT_TRUE(Step(8).empty());
  nodes_[0].used_gpus = 0;
  EXPECT_TRUE(Step(8).empty()) << "idle from now";
  now_ += 60;
  EXPECT_EQ(Of(Step(8), Kind::kLent).size(), 1u);
}

TEST_F(LendingTest, TheOwnersDemandReclaimsTheLeastLossLoansFirstAndTheyReturnWhenTheBorrowersAreGone) {
  Step(32);
  now_ += 60;
  ASSERT_EQ(Of(Step(32), Kind::kLent).size(), 4u);
  Borrow(0, 8, 5000);
  Borrow(1, 8, 100);
  Borrow(2, 8, 900);
  now_ += 10;
  EXPECT_TRUE(Step(0).empty()) << "borrowers in use: no idle return";
  // Slurm waits for 8 GPUs: s3 (unused) goes first and alone.
  auto c = Step(0, 8);
  EXPECT_EQ(Of(c, Kind::kReclaiming), (std::vector<std::string>{"s3"}));
  EXPECT_EQ(Of(c, Kind::kReturned), (std::vector<std::string>{"s3"}));
  now_ += 5;
  // Slurm waits for 24 (s3's 8 free count): s1 (100 GPU-s at risk), then s2 (900); s0 (5000)
  // keeps its borrower.
  c = Step(0, 24);
  EXPECT_EQ(Of(c, Kind::kReclaiming), (std::vector<std::string>{"s1", "s2"}));
  EXPECT_TRUE(Of(c, Kind::kReturned).empty()) << "the borrowers still hold the GPUs";
  EXPECT_GT(lending_.Find("s1")->reclaim_since_s, 0);
  now_ += 30;
  EXPECT_TRUE(Step(0, 24).empty()) << "the reclaimed nodes count as the owner's: no more reclaims";
  Borrow(1, 0);
  c = Step(0, 24);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].node, "s1");
  EXPECT_EQ(c[0].kind, Kind::kReturned);
  EXPECT_EQ(c[0].reclaim_s, 30);
  EXPECT_EQ(lending_.Find("s1"), nullptr);
  EXPECT_NE(lending_.Find("s0"), nullptr);
}

TEST_F(LendingTest, ALoanOutOfServiceIsReclaimedAndAReturnedNodeWaitsIdleSecondsAgain) {
  nodes_.resize(1);
  Step(8);
  now_ += 60;
  ASSERT_EQ(Of(Step(8), Kind::kLent).size(), 1u);
  Borrow(0, 8);
  nodes_[0].in_service = false;  // an admin's drain, or unhealthy
  auto c = Step(8);
  ASSERT_EQ(Of(c, Kind::kReclaiming).size(), 1u);
  EXPECT_NE(c[0].why.find("out of service"), std::string::npos) << c[0].why;
  Borrow(0, 0);
  EXPECT_EQ(Of(Step(8), Kind::kReturned).size(), 1u);
  EXPECT_TRUE(Step(8).empty()) << "out of service: not lent";
  nodes_[0].in_service = true;
  now_ += 59;
  EXPECT_TRUE(Step(8).empty()) << "idle again since it came back";
  now_ += 60;
  EXPECT_EQ(Of(Step(8), Kind::kLent).size(), 1u);
}

TEST_F(LendingTest, AnUnusedLoanGoesBackAfterIdleSecondsOnceNoBorrowerWaits) {
  nodes_.resize(1);
  Step(8);
  now_ += 60;
  ASSERT_EQ(Of(Step(8), Kind::kLent).size(), 1u);
  now_ += 100;
  EXPECT_TRUE(Step(8).empty()) << "the borrower still waits (its pod has not bound yet)";
  now_ += 100;
  auto c = Step(0);
  ASSERT_EQ(Of(c, Kind::kReturned).size(), 1u);
  EXPECT_EQ(c[0].reclaim_s, -1);
  nodes_.clear();
  Step(8);
  EXPECT_TRUE(lending_.loans().empty());
}

TEST_F(LendingTest, ANodeThatLeavesEndsItsLoan) {
  nodes_.resize(1);
  Step(8);
  now_ += 60;
  ASSERT_EQ(Of(Step(8), Kind::kLent).size(), 1u);
  nodes_.clear();
  auto c = Step(8);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kind, Kind::kReturned);
  EXPECT_TRUE(lending_.loans().empty());
}

TEST_F(LendingTest, BorrowerWorkOnAnOwnerNodeWithoutALoanIsAdoptedAndReclaimedLikeAnyLoan) {
  // An engine restart: the loans are forgotten, the borrower's pod still runs on s2.
  Borrow(2, 8, 100);
  auto c = Step(0);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].node, "s2");
  EXPECT_EQ(c[0].kind, Kind::kLent);
  EXPECT_NE(c[0].why.find("adopted"), std::string::npos) << c[0].why;
  ASSERT_NE(lending_.Find("s2"), nullptr);
  // The owner wants more than its three free nodes: the adopted loan is reclaimed.
  c = Step(0, 32);
  EXPECT_EQ(Of(c, Kind::kReclaiming), (std::vector<std::string>{"s2"}));
  Borrow(2, 0);
  EXPECT_EQ(Of(Step(0, 32), Kind::kReturned), (std::vector<std::string>{"s2"}));
}

TEST_F(LendingTest, AReclaimTakesTheLoansTheOwnersWorkCanUseAndOnlyThoseWhenItCanUseNoOther) {
  now_ += 60;
  Step(32);  // idle clocks start
  now_ += 60;
  ASSERT_EQ(Of(Step(32), Kind::kLent).size(), 4u);
  for (size_t i = 0; i < 4; ++i) Borrow(i, 8, 100 * static_cast<int64_t>(i + 1));  // s0 loses the least
  const PoolLending before = lending_;
  PoolLending::Demand d;
  d.owner_gpus["slurm"] = 8;
  d.owner_only.insert("slurm");
  d.owner_wanted = {"s2"};  // e.g. a job pinned to s2
  PoolLending pinned = before;
  EXPECT_EQ(Of(pinned.Step(nodes_, d, now_, {policy_}), Kind::kReclaiming), std::vector<std::string>{"s2"});
  d.owner_wanted.clear();  // the owner's work can use none of the loans: reclaiming would not help
  PoolLending none = before;
  EXPECT_TRUE(Of(none.Step(nodes_, d, now_, {policy_}), Kind::kReclaiming).empty());
  d.owner_only.clear();  // work that may go anywhere: the least work lost first
  PoolLending any = before;
  EXPECT_EQ(Of(any.Step(nodes_, d, now_, {policy_}), Kind::kReclaiming), std::vector<std::string>{"s0"});
  d.owner_wanted = {"s3"};  // and a pinned job's node before it
  PoolLending both = before;
  EXPECT_EQ(Of(both.Step(nodes_, d, now_, {policy_}), Kind::kReclaiming), std::vector<std::string>{"s3"});
}

TEST_F(LendingTest, AJobPinnedToALoanGetsItBackWhileThePoolsOtherNodesAreFree) {
  now_ += 60;
  Step(8);
  now_ += 60;
  ASSERT_EQ(Of(Step(8), Kind::kLent), std::vector<std::string>{"s0"});
  Borrow(0, 8);
  PoolLending::Demand d;
  d.owner_gpus["slurm"] = 8;
  d.owner_only.insert("slurm");
  d.owner_wanted = {"s0"};  // pinned to s0 (-w, a node selector): s1-s3's 24 free GPUs do not help it
  const PoolLending before = lending_;
  EXPECT_EQ(Of(lending_.Step(nodes_, d, now_, {policy_}), Kind::kReclaiming), std::vector<std::string>{"s0"});
  // A gang pinned to all four that needs 32 GPUs: s1-s3's 24 free help it; only s0 comes back.
  PoolLending gang = before;
  d.owner_gpus["slurm"] = 32;
  d.owner_usable = {"s1", "s2", "s3"};
  EXPECT_EQ(Of(gang.Step(nodes_, d, now_, {policy_}), Kind::kReclaiming), std::vector<std::string>{"s0"});
  // Needing only 16 of them, it is covered by the free nodes: nothing is reclaimed.
  PoolLending covered = before;
  d.owner_gpus["slurm"] = 16;
  EXPECT_TRUE(Of(covered.Step(nodes_, d, now_, {policy_}), Kind::kReclaiming).empty());
}

TEST_F(LendingTest, NextDueIsTheEarliestIdleClockStillToExpire) {
  EXPECT_EQ(lending_.NextDue(nodes_, now_, {policy_}), INT64_MAX) << "no idle clock started yet";
  Step(8);  // idle clocks start at 1000
  EXPECT_EQ(lending_.NextDue(nodes_, now_, {policy_}), 1060);
  now_ = 1060;
  EXPECT_EQ(Of(Step(8), Kind::kLent).size(), 1u);
  // The loan is unused from 1060 (its idle clock), the other nodes' clocks expired: nothing due
  // after 1060 but the loan's own, at 1120.
  Step(8);
  EXPECT_EQ(lending_.NextDue(nodes_, now_, {policy_}), 1120);
  EXPECT_EQ(lending_.NextDue(nodes_, 1120, {policy_}), INT64_MAX) << "only times after now";
  EXPECT_EQ(lending_.NextDue(nodes_, now_, {}), INT64_MAX) << "no policy: nothing is due";
}

TEST(LentView, ALentNodeIsTheBorrowersAndAReclaimedOneTakesNoNewWork) {
  Node n;
  n.name = "s0";
  n.pool = Pool::kSlurm;
  PoolLending::Loan loan;
  loan.pool = "slurm";
  loan.preemptible_only = true;
  Node v = LentView(loan, n);
  EXPECT_EQ(v.pool, Pool::kKubernetes);
  EXPECT_EQ(v.lent_by, Pool::kSlurm);
  EXPECT_TRUE(v.lent_preemptible_only);
  EXPECT_EQ(v.health, NodeHealth::kReady);
  loan.reclaim_since_s = 5;
  EXPECT_EQ(LentView(loan, n).health, NodeHealth::kDraining);
  n.health = NodeHealth::kUnhealthy;
  EXPECT_EQ(LentView(loan, n).health, NodeHealth::kUnhealthy) << "an unhealthy node stays unhealthy";
  n.pool = Pool::kKubernetes;  // not the loan's owner pool: unchanged
  EXPECT_EQ(LentView(loan, n).lent_by, Pool::kShared);
}

TEST(LendingConfig, DecodesAPolicyAndNamesTheFieldOfABadOne) {
  std::vector<LendingPolicy> out;
  ASSERT_TRUE(DecodeLending(nlohmann::json::parse(
                                R"({"slurm": {"lend": true, "keep": 2, "to": "any", "idleSeconds": 30, "graceCapSeconds": 90}})"),
                            &out)
                  .ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pool, "slurm");
  EXPECT_EQ(out[0].keep_nodes, 2);
  EXPECT_FALSE(out[0].preemptible_only);
  EXPECT_EQ(out[0].idle_s, 30);
  EXPECT_EQ(out[0].grace_cap_s, 90);
  for (const auto& [text, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"inference": {}})", "pools.inference.queues: a named pool needs its owner queues"},
           {R"({"inference": {"queues": []}})", "pools.inference.queues: must be a non-empty list"},
           {R"({"inference": {"queues": ["a"]}, "serve": {"queues": ["a"]}})", "pools.serve.queues: queue a already owns pool inference"},
           {R"({"shared": {"queues": ["a"]}})", "pools.shared: a named pool's name"},
           {R"({"inference": {"queues": ["a"], "selector": {"x": 1}}})", "pools.inference.selector.x: must be a string"},
           {R"({"slurm": {"queues": ["a"]}})", "pools.slurm.queues: unknown field"},
           {R"({"slurm": {"keep": -1}})", "pools.slurm.keep"},
           {R"({"slurm": {"to": "everyone"}})", "pools.slurm.to: unknown value"},
           {R"({"kubernetes": {"graceCapSeconds": 1.5}})", "pools.kubernetes.graceCapSeconds"},
           {R"({"slurm": {"lend": "yes"}})", "pools.slurm.lend"},
           {R"({"slurm": {"idle": 5}})", "pools.slurm.idle: unknown field"},
           {R"({"slurm": 3})", "pools.slurm: must be a mapping"},
           {R"([1])", "pools: must be a mapping"},
       }) {
    std::vector<LendingPolicy> bad;
    Status st = DecodeLending(nlohmann::json::parse(text), &bad);
    ASSERT_FALSE(st.ok()) << text;
    EXPECT_NE(st.ToString().find(field), std::string::npos) << st.ToString();
  }
}

}  // namespace
}  // namespace tidal

namespace tidal {
namespace {

TEST(LendingTerm, ALoanEndsAtItsTermAndNextDueWakesForIt) {
  LendingPolicy pol;
  pol.pool = "slurm";
  pol.idle_s = 0;
  pol.loan_s = 300;
  std::vector<PoolLending::NodeFacts> nodes = {{"s0", "slurm", true, 8, 0, 0, 0}};
  PoolLending lending;
  PoolLending::Demand d;
  d.borrower_gpus["slurm"] = 8;
  ASSERT_EQ(lending.Step(nodes, d, 1000, {pol}).size(), 1u);
  ASSERT_NE(lending.Find("s0"), nullptr);
  EXPECT_EQ(lending.Find("s0")->until_s, 1300);
  nodes[0].used_gpus = nodes[0].borrower_gpus = 8;
  EXPECT_EQ(lending.NextDue(nodes, 1000, {pol}), 1300);
  EXPECT_TRUE(lending.Step(nodes, d, 1299, {pol}).empty());
  auto c = lending.Step(nodes, d, 1300, {pol});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kind, PoolLending::Change::Kind::kReclaiming);
  EXPECT_NE(c[0].why.find("term"), std::string::npos);
}

}  // namespace
}  // namespace tidal
