// Pools lending across the doors (engine/engine_lending.cc): a Slurm pool's idle nodes are lent to
// Kubernetes' pending preemptible pods (never its non-preemptible ones, never both sides at once),
// Slurm's pending job reclaims them (the borrowers get at most graceCapSeconds of notice, cause
// reclaim), the node goes back only once the borrowers are gone and the Slurm job then starts
// there; an admin's drain of a lent node stays; every step is measured.
// Threading: single-threaded; the engine's clock is now_.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/observability.h"
#include "test/support/engine_objects.h"

namespace tidal {
namespace {

using testing::GangPod;
using testing::GpuNode;
using testing::SlurmMember;

class EngineLendingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Start("queues:\n  - name: batch\n    weight: 1\n  - name: hpc\n    weight: 1\n"
          "pools:\n  slurm: {idleSeconds: 60, graceCapSeconds: 30}\n");
  }
  void Start(const std::string& yaml) {
    auto cfg = ParseEngineConfig(yaml, "t.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto e = Engine::Create(*cfg, [this] { return now_; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    engine_->SetObservability(&metrics_, nullptr);
    // s0 and s1: Slurm's nodes (tidal.dev/pool=slurm) that both doors report.
    for (FrontDoor door : {FrontDoor::kKubernetes, FrontDoor::kSlurm}) {
      SyncBatch b;
      b.resync = true;
      b.upsert_nodes = {SlurmNode("s0", false), SlurmNode("s1", false)};
      ASSERT_TRUE(Sync(b, door).ok());
    }
  }
  static NodeInfo SlurmNode(const std::string& name, bool unschedulable) {
    NodeInfo n = GpuNode(name, "l0", "v-" + name);
    n.labels["tidal.dev/pool"] = "slurm";
    n.unschedulable = unschedulable;
    return n;
  }
  Status Sync(SyncBatch b, FrontDoor door) {
    b.door = door;
    for (auto& p : b.upsert_pods) p.door = door;
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  Status AddPod(PodInfo p) {
    SyncBatch b;
    b.upsert_pods = {std::move(p)};
    return Sync(b, FrontDoor::kKubernetes);
  }
  static PodInfo KubePod(const std::string& name, bool preemptible, const std::string& notice = "", int64_t gpus = 8) {
    PodInfo p = GangPod(name, "", 1, gpus);
    p.labels[kLabelQueue] = "batch";
    if (preemptible) p.labels[kLabelPreemptible] = "true";
    if (!notice.empty()) p.annotations[kLabelCheckpointOnNotice] = notice;
    return p;
  }
  // Plans the pod, binds it there and reports it running; the node ("" when it found none).
  std::string Run(PodInfo p) {
    EXPECT_TRUE(AddPod(p).ok());
    PlanResult plan = engine_->PlanPod(p.uid);
    if (!plan.status.ok()) return "";
    p.node_name = plan.node;
    p.phase = PodPhase::kRunning;
    p.start_unix = now_;
    EXPECT_TRUE(AddPod(p).ok());
    return plan.node;
  }
  std::vector<DisruptionAction> Poll() { return engine_->Disruptions(FrontDoor::kKubernetes); }
  double Lent() {
    double v = 0;
    for (const auto& r : engine_->Gauges().lent_gpus) v += r.value;
    return v;
  }
  // The Slurm door's pending job `job` of `nodes` 8-GPU members.
  void SubmitSlurm(const std::string& job, int nodes, int64_t gpus = 8) {
    SyncBatch s;
    for (int i = 0; i < nodes; ++i) s.upsert_pods.push_back(SlurmMember(job, i, nodes, "hpc", gpus));
    ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  }
  // Slurm's 2-node job 7 arrives and is tried (it needs a node Slurm lent).
  void SlurmWantsBothNodes() {
    SubmitSlurm("7", 2);
    engine_->Admit(FrontDoor::kSlurm, 0);
  }
  // Lends s0 to a running preemptible pod "borrower" (with `notice` on notice); its node.
  std::string LendToABorrower(const std::string& notice = "", int64_t gpus = 8) {
    EXPECT_EQ(Run(KubePod("borrower", true, notice, gpus)), "") << "Slurm's node: not lent yet";
    Poll();
    now_ += 60;
    Poll();
    return Run(KubePod("borrower", true, notice, gpus));
  }

  int64_t now_ = 100000;
  metrics::Registry registry_;
  EngineMetrics metrics_{registry_};
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineLendingTest, AnIdleSlurmNodeIsLentToPreemptiblePodsOnly) {
  PodInfo rigid = KubePod("rigid", false, "", 4);
  EXPECT_EQ(Run(rigid), "");
  Poll();
  now_ += 120;
  EXPECT_TRUE(Poll().empty());
  EXPECT_EQ(Lent(), 0) << "only non-preemptible pods wait: the pool lends to preemptible work";
  const std::string node = LendToABorrower("", 4);
  EXPECT_EQ(node, "s0");
  EXPECT_EQ(Lent(), 8) << "one node: what the borrower needed";
  // s0 has 4 free GPUs, but not for the non-preemptible pod.
  EXPECT_EQ(metrics_.pool_lends.With({"slurm", "kubernetes"}).Value(), 1);
  auto events = engine_->TakeNodeLending().events;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].node, "s0");
  EXPECT_EQ(events[0].reason, "TidalNodeLent");
  EXPECT_NE(events[0].message.find("pool slurm, borrower kubernetes"), std::string::npos) << events[0].message;
  EXPECT_TRUE(engine_->TakeNodeLending().events.empty()) << "each event is taken once";
  PlanResult plan = engine_->PlanPod(rigid.uid);
  ASSERT_FALSE(plan.status.ok());
  EXPECT_NE(plan.status.ToString().find("lent by their owner pool to preemptible work only"), std::string::npos)
      << plan.status.ToString();
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/borrower", &text).ok());
  EXPECT_NE(text.find("lent by pool slurm"), std::string::npos) << text;
}

TEST_F(EngineLendingTest, SlurmsDemandReclaimsWithCappedNoticeAndItsJobStartsOnceTheBorrowerIsGone) {
  ASSERT_EQ(LendToABorrower("600s"), "s0");
  // A 2-node Slurm job: s1 alone is not enough.
  SubmitSlurm("7", 2);
  AdmitResult r = engine_->Admit(FrontDoor::kSlurm, 0);
  EXPECT_TRUE(r.admitted.empty());
  ASSERT_EQ(r.waiting.size(), 1u);
  const int64_t reclaimed = now_;
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kNotice);
  EXPECT_EQ(a[0].cause, "reclaim");
  EXPECT_EQ(a[0].deadline_unix, now_ + 30) << "600 s asked, the pool's grace cap is 30 s";
  EXPECT_NE(a[0].reason.find("reclaimed by its owner pool slurm"), std::string::npos) << a[0].reason;
  EXPECT_EQ(metrics_.pool_reclaims.With({"slurm", "kubernetes"}).Value(), 1);
  bool reclaimed_event = false;
  for (const auto& e : engine_->TakeNodeLending().events) reclaimed_event = reclaimed_event || e.reason == "TidalNodeReclaimed";
  EXPECT_TRUE(reclaimed_event);
  // Nobody new lands on the node being reclaimed, not even another borrower.
  EXPECT_EQ(Run(KubePod("late", true)), "");
  EXPECT_TRUE(engine_->Admit(FrontDoor::kSlurm, 0).admitted.empty()) << "the borrower still holds s0";
  now_ += 30;
  a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kEvict);
  now_ += 2;
  SyncBatch gone;
  gone.delete_pods = {"uid-borrower"};
  ASSERT_TRUE(Sync(gone, FrontDoor::kKubernetes).ok());
  Poll();
  EXPECT_EQ(Lent(), 0);
  EXPECT_EQ(metrics_.pool_reclaim_seconds.With({"slurm", "kubernetes"}).Collect().histogram.sample_count, 1u);
  EXPECT_DOUBLE_EQ(metrics_.pool_reclaim_seconds.With({"slurm", "kubernetes"}).Collect().histogram.sample_sum,
                   static_cast<double>(now_ - reclaimed));
  r = engine_->Admit(FrontDoor::kSlurm, 0);
  ASSERT_EQ(r.admitted.size(), 1u) << "Slurm's job starts on its nodes";
  EXPECT_EQ(metrics_.disruptions.With({"reclaim"}).Value(), 1);
}

TEST_F(EngineLendingTest, ABorrowerThatEndsWithinTheGraceCapFinishesInsteadOfBeingDisrupted) {
  PodInfo p = KubePod("borrower", true);
  p.annotations[kLabelRuntimeLimit] = "100s";
  EXPECT_EQ(Run(p), "");
  Poll();
  now_ += 60;
  Poll();
  ASSERT_EQ(Run(p), "s0");
  now_ += 80;  // 20 s of its 100 s limit left; the grace cap is 30 s
  SlurmWantsBothNodes();
  EXPECT_TRUE(Poll().empty()) << "it ends before the owner's deadline: left to end";
  now_ += 31;  // past the deadline and still there (its limit is not enforced here)
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].cause, "reclaim");
}

TEST_F(EngineLendingTest, ALentNodeIsNeverUsedByBothSidesAtOnce) {
  Start("queues:\n  - name: batch\n    weight: 1\n  - name: hpc\n    weight: 1\n"
        "pools:\n  slurm: {to: any, idleSeconds: 60}\n");
  ASSERT_EQ(LendToABorrower("", 4), "s0");
  // A 4-GPU Slurm job: it takes s1, not the lent s0's 4 free GPUs, and reclaims nothing.
  SubmitSlurm("8", 1, 4);
  AdmitResult r = engine_->Admit(FrontDoor::kSlurm, 0);
  ASSERT_EQ(r.admitted.size(), 1u);
  ASSERT_EQ(r.admitted[0].nodes.size(), 1u);
  EXPECT_EQ(r.admitted[0].nodes[0], "s1");
  EXPECT_TRUE(Poll().empty());
  EXPECT_EQ(Lent(), 8);
}

TEST_F(EngineLendingTest, AnAdminDrainOfALentNodeReclaimsItAndStays) {
  ASSERT_EQ(LendToABorrower(), "s0");
  SyncBatch s;
  s.upsert_nodes = {SlurmNode("s0", true)};  // scontrol update state=drain, by an admin
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].cause, "reclaim");
  SyncBatch gone;
  gone.delete_pods = {"uid-borrower"};
  ASSERT_TRUE(Sync(gone, FrontDoor::kKubernetes).ok());
  Poll();
  EXPECT_EQ(Lent(), 0);
  now_ += 600;
  Poll();
  EXPECT_EQ(Lent(), 0) << "still drained: not lent again";
  SubmitSlurm("9", 2);
  EXPECT_TRUE(engine_->Admit(FrontDoor::kSlurm, 0).admitted.empty()) << "the drain stays";
}

TEST_F(EngineLendingTest, AfterARestartTheBorrowersNodeIsALoanAgain) {
  ASSERT_EQ(LendToABorrower(), "s0");
  // A new engine (loans live in memory): both doors resync, the borrower still runs on s0.
  Start("queues:\n  - name: batch\n    weight: 1\n  - name: hpc\n    weight: 1\n"
        "pools:\n  slurm: {idleSeconds: 60, graceCapSeconds: 30}\n");
  PodInfo p = KubePod("borrower", true);
  p.node_name = "s0";
  p.phase = PodPhase::kRunning;
  p.start_unix = now_;
  ASSERT_TRUE(AddPod(p).ok());
  Poll();
  EXPECT_EQ(Lent(), 8) << "adopted at the first poll";
  EXPECT_EQ(engine_->Admit(FrontDoor::kSlurm, 0).lent_nodes, std::vector<std::string>{"s0"})
      << "tidal-slurm keeps s0 drained";
  // Slurm's 2-node job reclaims it, as any loan.
  SlurmWantsBothNodes();
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].cause, "reclaim");
}

TEST_F(EngineLendingTest, OwnerWorkThatALoanWouldNotHelpNeitherBlocksLendingNorReclaims) {
  Start("queues:\n  - name: batch\n    weight: 1\n  - {name: hpc, nominal: {gpus: 8}, borrowingLimit: {gpus: 0}}\n"
        "pools:\n  slurm: {idleSeconds: 60, graceCapSeconds: 30}\n");
  // Slurm's 2-node job waits for its queue's quota (8 GPUs), not for room.
  SubmitSlurm("7", 2);
  AdmitResult r = engine_->Admit(FrontDoor::kSlurm, 0);
  ASSERT_EQ(r.waiting.size(), 1u);
  EXPECT_NE(r.waiting[0].reason.find("hpc"), std::string::npos) << r.waiting[0].reason;
  ASSERT_EQ(LendToABorrower(), "s0") << "the quota-bound job does not keep the idle nodes from Kubernetes";
  engine_->Admit(FrontDoor::kSlurm, 0);
  EXPECT_TRUE(Poll().empty()) << "nor takes them back";
}

TEST_F(EngineLendingTest, OwnerWorkLargerThanItsWholePoolDoesNotBlockLending) {
  // A Kubernetes-only node k0 makes room for 3 members in the cluster, not in Slurm's pool of 2.
  SyncBatch k;
  k.upsert_nodes = {GpuNode("k0", "l0", "v-k0")};
  ASSERT_TRUE(Sync(k, FrontDoor::kKubernetes).ok());
  SubmitSlurm("7", 3);
  AdmitResult r = engine_->Admit(FrontDoor::kSlurm, 0);
  ASSERT_EQ(r.waiting.size(), 1u);
  ASSERT_TRUE(Run(KubePod("k0-user", false)) == "k0") << "k0 busy: the borrower needs Slurm's nodes";
  ASSERT_EQ(LendToABorrower(), "s0") << "no reclaim would make the 3-node job fit: it does not block the loan";
}

TEST_F(EngineLendingTest, AConfigWithoutPoolsTakesTheLoansBack) {
  ASSERT_EQ(LendToABorrower(), "s0");
  auto cfg = ParseEngineConfig("queues:\n  - name: batch\n    weight: 1\n  - name: hpc\n    weight: 1\n", "t.yaml");
  ASSERT_TRUE(cfg.ok());
  ASSERT_TRUE(engine_->Reconfigure(*cfg).ok());
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].cause, "reclaim");
}

// An owner job pinned to one node (sbatch -w s0) gets that loan back, not the one whose borrower
// would lose the least: reclaiming another would not let it start.
TEST_F(EngineLendingTest, AnOwnerJobPinnedToALentNodeGetsThatNodeBack) {
  ASSERT_EQ(LendToABorrower(), "s0");
  now_ += 100;
  EXPECT_EQ(Run(KubePod("young", true)), "");
  Poll();  // s1 has been idle long enough: lent for the young pod
  ASSERT_EQ(Run(KubePod("young", true)), "s1");
  now_ += 10;  // the young borrower on s1 would lose 10 s of work, the older on s0 110 s
  PodInfo pinned = SlurmMember("8", 0, 1, "hpc");
  auto c = std::make_shared<NodeConstraints>();
  SelectorTerm t;
  t.fields.push_back({"metadata.name", SelectorOp::kIn, {"s0"}});
  c->required.push_back(t);
  pinned.constraints = c;
  SyncBatch b;
  b.upsert_pods = {pinned};
  ASSERT_TRUE(Sync(b, FrontDoor::kSlurm).ok());
  engine_->Admit(FrontDoor::kSlurm, 0);
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].cause, "reclaim");
  EXPECT_NE(a[0].reason.find("node s0 is reclaimed"), std::string::npos) << a[0].reason;
}

// The other way round: a Kubernetes pool's idle node lent to Slurm is reported for its taint
// (TakeNodeLending().lent_to_slurm) while Slurm has it, and no longer once it is returned.
TEST_F(EngineLendingTest, AKubernetesNodeLentToSlurmIsReportedForItsTaintUntilReturned) {
  Start("queues:\n  - name: batch\n    weight: 1\n  - name: hpc\n    weight: 1\n"
        "pools:\n  kubernetes: {idleSeconds: 60, graceCapSeconds: 30, to: any}\n");
  for (FrontDoor door : {FrontDoor::kKubernetes, FrontDoor::kSlurm}) {
    SyncBatch b;
    NodeInfo k0 = GpuNode("k0", "l1", "v-k0");
    k0.labels["tidal.dev/pool"] = "kubernetes";
    b.upsert_nodes = {k0};
    ASSERT_TRUE(Sync(b, door).ok());
  }
  auto lent = [&] { return engine_->TakeNodeLending().lent_to_slurm; };
  SyncBatch busy;  // Slurm's own nodes are full
  busy.upsert_pods = {SlurmMember("1", 0, 1, "hpc", 8, "s0"), SlurmMember("2", 0, 1, "hpc", 8, "s1")};
  ASSERT_TRUE(Sync(busy, FrontDoor::kSlurm).ok());
  SubmitSlurm("9", 1);
  engine_->Admit(FrontDoor::kSlurm, 0);  // tried: no room in Slurm's pool
  Poll();                                // (lending steps at the doors' disruption polls)
  EXPECT_TRUE(lent().empty()) << "idle for 0 s: not lent yet";
  now_ += 60;
  Poll();
  AdmitResult a = engine_->Admit(FrontDoor::kSlurm, 0);
  ASSERT_EQ(a.admitted.size(), 1u);
  EXPECT_EQ(a.admitted[0].nodes, std::vector<std::string>{"k0"});
  EXPECT_EQ(lent(), std::vector<std::string>{"k0"});
  EXPECT_EQ(lent(), std::vector<std::string>{"k0"}) << "the set, at every poll (not once like events)";
  // The job ends; with no Slurm work waiting the unused loan goes back after idleSeconds.
  SyncBatch done;
  done.delete_pods = {"slurm/9#0"};
  ASSERT_TRUE(Sync(done, FrontDoor::kSlurm).ok());
  Poll();
  EXPECT_EQ(lent(), std::vector<std::string>{"k0"}) << "unused for 0 s: still lent";
  now_ += 61;
  Poll();
  EXPECT_TRUE(lent().empty());
}

// A loan with a term (loanSeconds) is a window with a known end: a borrower that checkpoints on
// notice gets it as late as it allows, so the node is empty at the term's end; one that would
// overrun the term without checkpointing is not placed there; the loan is reclaimed at its end.
TEST_F(EngineLendingTest, ALoanWithATermIsAWindowItsBorrowersLeaveByItsEnd) {
  Start("queues:\n  - name: batch\n    weight: 1\n  - name: hpc\n    weight: 1\n"
        "pools:\n  slurm: {idleSeconds: 60, graceCapSeconds: 30, loanSeconds: 600}\n");
  const int64_t lent_at = now_ + 60;
  ASSERT_EQ(LendToABorrower("20s", 4), "s0");
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/borrower", &text).ok());
  EXPECT_NE(text.find("the loan ends at"), std::string::npos) << text;
  PodInfo overrun = KubePod("overrun", true, "", 4);
  EXPECT_EQ(Run(overrun), "") << "no checkpoint on notice, no runtime ending before the term";
  PodInfo fits = KubePod("fits", true, "", 4);
  fits.annotations[kLabelRuntimeLimit] = "300s";
  EXPECT_EQ(Run(fits), "s0") << "it ends before the term";
  SyncBatch done;
  done.delete_pods = {"uid-fits", "uid-overrun"};
  ASSERT_TRUE(Sync(done, FrontDoor::kKubernetes).ok());
  now_ = lent_at + 600 - 20 - kDrainSlackS - 1;
  EXPECT_TRUE(Poll().empty()) << "not yet: its 20 s notice still fits";
  now_ += 1;
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kNotice);
  EXPECT_EQ(a[0].cause, "reclaim");
  EXPECT_EQ(a[0].deadline_unix, lent_at + 600 - kDrainSlackS) << "gone before the term ends";
  SyncBatch gone;
  gone.delete_pods = {"uid-borrower"};
  ASSERT_TRUE(Sync(gone, FrontDoor::kKubernetes).ok());
  now_ = lent_at + 600;
  Poll();
  EXPECT_EQ(Lent(), 0) << "the term ended and its borrowers are gone: returned";
  bool returned = false;
  for (const auto& e : engine_->TakeNodeLending().events) {
    returned = returned || (e.reason == "TidalNodeReclaimed" && e.message.find("loan term of 600 s ended") != std::string::npos);
  }
  EXPECT_TRUE(returned);
}

}  // namespace
}  // namespace tidal
