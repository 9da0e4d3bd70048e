// tidal-slurm and pools lending (core/state/lending.h): a Slurm node the engine lends to Kubernetes is
// drained in Slurm ("tidal: lent to kubernetes") so no Slurm job lands there, stays in service for
// the engine while drained so, and is undrained before the Slurm job that reclaimed it is released
// onto it; an admin's drain is never lifted.
// Threading: single-threaded (the engine runs behind a real gRPC server on its own threads).
#include <gtest/gtest.h>

#include "shim/slurm/adapter_testing.h"
#include "shim/slurm/reconciler.h"

namespace tidal::slurm {
namespace {

class SlurmLendingTest : public ReconcileTest {
 protected:
  std::string EngineYaml() const override {
    return "queues:\n  - name: qa\n    weight: 1\npools:\n  slurm: {idleSeconds: 0, graceCapSeconds: 30}\n";
  }
  // Kubernetes reports gpu01..gpu04 too, labelled as Slurm's pool.
  void KubernetesReportsTheNodes() {
    SyncBatch b;
    b.door = FrontDoor::kKubernetes;
    b.resync = true;
    for (int i = 1; i <= 4; ++i) {
      NodeInfo n;
      n.name = "gpu0" + std::to_string(i);
      n.labels = {{"tidal.dev/pool", "slurm"}};
      n.capacity = Resources{8, 32000, int64_t{256} << 30};
      b.upsert_nodes.push_back(n);
    }
    uint64_t gen = 0;
    ASSERT_TRUE(engine_->Sync(b, &gen).ok());
  }
  static PodInfo Borrower() {
    PodInfo p;
    p.uid = "uid-b";
    p.ns = "team";
    p.name = "b";
    p.scheduler_name = "tidal-scheduler";
    p.request = Resources{8, 1000, 1 << 30};
    p.labels = {{kLabelQueue, "qa"}, {kLabelPreemptible, "true"}};
    return p;
  }
  Status KubeSync(SyncBatch b) {
    b.door = FrontDoor::kKubernetes;
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  // A first pass, Kubernetes' view of the nodes and its pending preemptible pod "b"; b's plan.
  PlanResult ABorrowerWaits(Reconciler& r) {
    EXPECT_TRUE(r.ReconcileOnce().admitted);
    KubernetesReportsTheNodes();
    SyncBatch add;
    add.upsert_pods = {Borrower()};
    EXPECT_TRUE(KubeSync(add).ok());
    return engine_->PlanPod("uid-b");
  }
  size_t Calls(const std::string& prefix) {
    size_t n = 0;
    for (const auto& c : slurm_.calls) n += c.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }
};

TEST_F(SlurmLendingTest, ALentNodeIsDrainedInSlurmAndUndrainedBeforeTheReclaimingJobIsReleasedOntoIt) {
  Reconciler r(acfg_, &slurm_, link_.get());
  ASSERT_FALSE(ABorrowerWaits(r).status.ok()) << "Slurm's nodes: not lent yet";
  ASSERT_TRUE(r.ReconcileOnce().admitted);  // the adapter's Disruptions poll: the engine lends gpu01
  ReconcileStats st = r.ReconcileOnce();    // Admit names it: drained
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(st.lent_drains, 1);
  ASSERT_NE(slurm_.FindNode("gpu01"), nullptr);
  EXPECT_TRUE(slurm_.FindNode("gpu01")->drain);
  EXPECT_EQ(slurm_.FindNode("gpu01")->reason, kLentReason);
  // Drained by Tidal, the node stays in service for the engine: still lent, drained once.
  st = r.ReconcileOnce();
  EXPECT_EQ(st.lent_drains + st.lent_undrains, 0);
  PlanResult plan = engine_->PlanPod("uid-b");
  ASSERT_TRUE(plan.status.ok()) << plan.status.ToString();
  EXPECT_EQ(plan.node, "gpu01");
  PodInfo bound = Borrower();
  bound.node_name = "gpu01";
  bound.phase = PodPhase::kRunning;
  SyncBatch run;
  run.upsert_pods = {bound};
  ASSERT_TRUE(KubeSync(run).ok());

  // A Slurm job for all four nodes reclaims gpu01; it waits until the borrower is gone.
  slurm_.state.jobs = {HeldJob(1, 4, 8)};
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  st = r.ReconcileOnce();
  EXPECT_EQ(st.released, 0);
  EXPECT_TRUE(slurm_.FindNode("gpu01")->drain) << "still the borrower's";
  bool noticed = false;
  for (const auto& d : engine_->Disruptions(FrontDoor::kKubernetes)) noticed = noticed || d.cause == "reclaim";
  EXPECT_TRUE(noticed);
  SyncBatch gone;
  gone.delete_pods = {"uid-b"};
  ASSERT_TRUE(KubeSync(gone).ok());
  ASSERT_TRUE(r.ReconcileOnce().admitted);  // returned at the Disruptions poll
  slurm_.calls.clear();
  st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(st.lent_undrains, 1);
  EXPECT_EQ(st.released, 1) << st.status.ToString();
  ASSERT_GE(slurm_.calls.size(), 2u);
  EXPECT_EQ(slurm_.calls[0], "undrain gpu01") << "undrained before the release";
  EXPECT_EQ(slurm_.calls[1].rfind("release 1 ", 0), 0u) << slurm_.calls[1];
  EXPECT_FALSE(slurm_.FindNode("gpu01")->drain);
  EXPECT_EQ(r.totals().lent_drains, 1);
  EXPECT_EQ(r.totals().lent_undrains, 1);
}

TEST_F(SlurmLendingTest, AnAdminsDrainIsNeverLifted) {
  Reconciler r(acfg_, &slurm_, link_.get());
  (void)ABorrowerWaits(r);
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  ASSERT_EQ(r.ReconcileOnce().lent_drains, 1);
  // The admin drains the lent node for repair: Slurm's reason is theirs now.
  slurm_.FindNode("gpu01")->reason = "bad DIMM";
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(r.ReconcileOnce().admitted);
  EXPECT_EQ(Calls("undrain"), 0u);
  EXPECT_TRUE(slurm_.FindNode("gpu01")->drain);
  EXPECT_EQ(slurm_.FindNode("gpu01")->reason, "bad DIMM");
}

}  // namespace
}  // namespace tidal::slurm
