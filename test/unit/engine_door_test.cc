// Two front doors on one engine: a door's resync replaces only its own objects, a node both doors
// report is one shared node (usable by a door only while that door reports it schedulable), Slurm
// gangs are admitted in the engine's order with their nodes, fair share holds across doors (a
// Kubernetes queue below its share goes first and its pods are handed over for activation), and
// the door lease refuses a second holder.
#include <gtest/gtest.h>

#include <map>

#include "engine/door_lease.h"
#include "engine/engine.h"
#include "test/support/engine_objects.h"

namespace tidal {
namespace {

using testing::GangPod;
using testing::GpuNode;
using testing::SlurmMember;

class DoorTest : public ::testing::Test {
 protected:
  void SetUp() override { Start("queues:\n  - name: qa\n    weight: 1\n  - name: qb\n    weight: 1\n"); }
  void Start(const std::string& yaml) {
    auto cfg = ParseEngineConfig(yaml, "t.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto e = Engine::Create(*cfg, [this] { return now_; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
  }
  Status Sync(SyncBatch b, FrontDoor door) {
    b.door = door;
    for (auto& p : b.upsert_pods) p.door = door;
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  static PodInfo KubePod(const std::string& name, const std::string& queue, int64_t gpus = 8) {
    PodInfo p = GangPod(name, "", 1, gpus);
    p.labels[kLabelQueue] = queue;
    return p;
  }
  int Pods() { return engine_->Stats().pods; }
  int Nodes() { return engine_->Stats().nodes; }
  double Usage(const std::string& queue) {
    for (const auto& row : engine_->Gauges().queue_usage) {
      if (row.labels == std::vector<std::string>{queue, "gpus"}) return row.value;
    }
    return -1;
  }
  int64_t now_ = 1000;
  std::unique_ptr<Engine> engine_;
};

TEST_F(DoorTest, AResyncOfOneDoorKeepsTheOtherDoorsObjectsAndCharges) {
  SyncBatch k;
  k.resync = true;
  k.upsert_nodes = {GpuNode("n1", "l0", "v0"), GpuNode("n2", "l0", "v1")};
  PodInfo bound = KubePod("web", "qb");
  bound.node_name = "n1";
  bound.phase = PodPhase::kRunning;
  k.upsert_pods = {bound};
  ASSERT_TRUE(Sync(k, FrontDoor::kKubernetes).ok());
  SyncBatch s;
  s.resync = true;
  s.upsert_nodes = {GpuNode("n2", "l0", "v1"), GpuNode("n3", "l0", "v1")};
  PodInfo running = SlurmMember("7", 0, 1, "qa");
  running.node_name = "n2";
  running.phase = PodPhase::kRunning;
  s.upsert_pods = {running};
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  EXPECT_EQ(Nodes(), 3);
  EXPECT_EQ(Pods(), 2);
  EXPECT_EQ(Usage("qa"), 8);
  EXPECT_EQ(Usage("qb"), 8);
  // Kubernetes resyncs again (a shim restart): the Slurm job and Slurm's node n3 stay.
  ASSERT_TRUE(Sync(k, FrontDoor::kKubernetes).ok());
  EXPECT_EQ(Nodes(), 3);
  EXPECT_EQ(Pods(), 2);
  EXPECT_EQ(Usage("qa"), 8);
  // Slurm resyncs without the job (it finished) and without n2: n2 is still Kubernetes' node.
  SyncBatch s2;
  s2.resync = true;
  s2.upsert_nodes = {GpuNode("n3", "l0", "v1")};
  ASSERT_TRUE(Sync(s2, FrontDoor::kSlurm).ok());
  EXPECT_EQ(Nodes(), 3);
  EXPECT_EQ(Pods(), 1);
  EXPECT_EQ(Usage("qa"), 0);
  EXPECT_EQ(Usage("qb"), 8);
}

TEST_F(DoorTest, ADoorCannotTouchTheOtherDoorsPodsOrGangs) {
  SyncBatch k;
  k.resync = true;
  k.upsert_nodes = {GpuNode("n1", "l0", "v0")};
  ASSERT_TRUE(Sync(k, FrontDoor::kKubernetes).ok());
  SyncBatch s;
  s.resync = true;
  s.upsert_pods = {SlurmMember("9", 0, 1, "qa")};
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  // A Kubernetes pod in namespace "slurm" naming gang "9" would join Slurm job 9's gang: refused.
  SyncBatch k2;
  PodInfo p = KubePod("x", "qa");
  p.ns = "slurm";
  p.labels[kLabelGang] = "9";
  p.labels[kLabelGangSize] = "1";
  k2.upsert_pods = {p};
  ASSERT_TRUE(Sync(k2, FrontDoor::kKubernetes).ok());
  std::string gang;
  EXPECT_FALSE(engine_->CheckPod(p.uid, &gang).ok());
  // Kubernetes deleting a Slurm uid does nothing.
  SyncBatch k3;
  k3.delete_pods = {"slurm/9#0"};
  ASSERT_TRUE(Sync(k3, FrontDoor::kKubernetes).ok());
  EXPECT_EQ(Pods(), 2);
}

TEST_F(DoorTest, ASharedNodeIsUsableOnlyByTheDoorsThatReportItSchedulable) {
  SyncBatch k;
  k.resync = true;
  k.upsert_nodes = {GpuNode("n1", "l0", "v0")};
  ASSERT_TRUE(Sync(k, FrontDoor::kKubernetes).ok());
  SyncBatch s;
  s.resync = true;
  NodeInfo drained = GpuNode("n1", "l0", "v0");
  drained.unschedulable = true;  // an admin's Slurm drain
  s.upsert_nodes = {drained};
  s.upsert_pods = {SlurmMember("1", 0, 1, "qa")};
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  AdmitResult r = engine_->Admit(FrontDoor::kSlurm, 0);
  EXPECT_TRUE(r.admitted.empty());
  ASSERT_EQ(r.waiting.size(), 1u);
  // A pod may still use it.
  SyncBatch k2;
  k2.upsert_pods = {KubePod("p", "qb")};
  ASSERT_TRUE(Sync(k2, FrontDoor::kKubernetes).ok());
  EXPECT_EQ(engine_->PlanPod("uid-p").node, "n1");
  // Undrained: Slurm may use the node, but the pod's plan holds its 8 GPUs: nothing double-booked.
  SyncBatch s2;
  s2.upsert_nodes = {GpuNode("n1", "l0", "v0")};
  ASSERT_TRUE(Sync(s2, FrontDoor::kSlurm).ok());
  EXPECT_TRUE(engine_->Admit(FrontDoor::kSlurm, 0).admitted.empty());
}

// A node only Slurm reports, drained there, is usable by no door, but it is still Slurm's: its GPUs
// count in pool slurm (tidal_gpus{state="unhealthy",pool="slurm"}). Before, a node no door could
// use fell to pool kubernetes, and a Slurm drain moved its GPUs into the Kubernetes pool's series.
TEST_F(DoorTest, ADrainedSlurmOnlyNodeStaysInPoolSlurm) {
  SyncBatch s;
  s.resync = true;
  NodeInfo drained = GpuNode("s1", "l0", "v0");
  drained.unschedulable = true;
  s.upsert_nodes = {drained, GpuNode("s2", "l0", "v0")};
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  std::map<std::string, double> gpus;  // "state/pool"
  for (const auto& row : engine_->Gauges().gpus) gpus[row.labels[0] + "/" + row.labels[1]] = row.value;
  EXPECT_EQ(gpus["unhealthy/slurm"], 8) << "the drained node's GPUs";
  EXPECT_EQ(gpus["idle/slurm"], 8);
  EXPECT_EQ(gpus["unhealthy/kubernetes"], 0);
  EXPECT_EQ(gpus["idle/kubernetes"], 0);
}

TEST_F(DoorTest, AdmitReturnsSlurmGangsWithTheirNodesAndTheBindingConvertsThePlan) {
  SyncBatch s;
  s.resync = true;
  s.upsert_nodes = {GpuNode("n1", "l0", "v0"), GpuNode("n2", "l0", "v0"), GpuNode("n3", "l1", "v1")};
  for (int i = 0; i < 2; ++i) s.upsert_pods.push_back(SlurmMember("5", i, 2, "qa"));
  s.upsert_pods.push_back(SlurmMember("6", 0, 1, "qa"));
  s.upsert_pods.push_back(SlurmMember("8", 0, 1, "qa"));  // no room left for it
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  AdmitResult r = engine_->Admit(FrontDoor::kSlurm, 0);
  ASSERT_EQ(r.admitted.size(), 2u);
  std::set<std::string> used;
  for (const auto& a : r.admitted) {
    for (const auto& n : a.nodes) EXPECT_TRUE(used.insert(n).second) << "node " << n << " handed out twice";
  }
  ASSERT_EQ(r.waiting.size(), 1u);
  EXPECT_EQ(r.waiting[0].gang, "slurm/8");
  EXPECT_FALSE(r.waiting[0].reason.empty());
  // Asking again returns the same plans (the adapter applies each once).
  AdmitResult again = engine_->Admit(FrontDoor::kSlurm, 0);
  ASSERT_EQ(again.admitted.size(), 2u);
  // The adapter released job 5 pinned to its nodes: its members are reported bound there.
  const AdmissionInfo& five = r.admitted[0].gang == "slurm/5" ? r.admitted[0] : r.admitted[1];
  ASSERT_EQ(five.nodes.size(), 2u);
  SyncBatch bound;
  for (int i = 0; i < 2; ++i) {
    PodInfo m = SlurmMember("5", i, 2, "qa");
    m.node_name = five.nodes[static_cast<size_t>(i)];
    bound.upsert_pods.push_back(m);
  }
  ASSERT_TRUE(Sync(bound, FrontDoor::kSlurm).ok());
  EXPECT_EQ(Usage("qa"), 24);  // job 5 bound (16) + job 6's plan (8), charged once each
  AdmitResult after = engine_->Admit(FrontDoor::kSlurm, 0);
  ASSERT_EQ(after.admitted.size(), 1u);
  EXPECT_EQ(after.admitted[0].gang, "slurm/6");
}

// A Slurm job's plan holds GPUs on the nodes the Slurm door reports: tidal_gpus shows them reserved
// in that pool, not taken out of the Kubernetes pool's allocated GPUs (which went negative).
TEST_F(DoorTest, APlanOnSlurmNodesIsReservedInTheSlurmPool) {
  SyncBatch s;
  s.resync = true;
  s.upsert_nodes = {GpuNode("n1", "l0", "v0"), GpuNode("n2", "l0", "v0")};
  for (int i = 0; i < 2; ++i) s.upsert_pods.push_back(SlurmMember("5", i, 2, "qa"));
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  ASSERT_EQ(engine_->Admit(FrontDoor::kSlurm, 0).admitted.size(), 1u);
  std::map<std::pair<std::string, std::string>, double> gpus;
  for (const auto& row : engine_->Gauges().gpus) gpus[{row.labels[0], row.labels[1]}] = row.value;
  EXPECT_EQ(gpus[std::make_pair(std::string("reserved"), std::string("slurm"))], 16);
  EXPECT_EQ(gpus[std::make_pair(std::string("allocated"), std::string("slurm"))], 0);
  EXPECT_EQ(gpus[std::make_pair(std::string("allocated"), std::string("kubernetes"))], 0);
  EXPECT_EQ(gpus[std::make_pair(std::string("reserved"), std::string("kubernetes"))], 0);
}

// /queues' text is the same whether or not another view rebuilt the cluster state first: it read
// every share against no capacity (share 0) until a scrape or a cycle happened to rebuild it.
TEST_F(DoorTest, DescribeQueuesReadsSharesAgainstTheCurrentCapacity) {
  SyncBatch s;
  s.resync = true;
  s.upsert_nodes = {GpuNode("n1", "l0", "v0"), GpuNode("n2", "l0", "v0")};
  PodInfo p = KubePod("a0", "qa");
  p.node_name = "n1";
  s.upsert_pods.push_back(p);
  ASSERT_TRUE(Sync(s, FrontDoor::kKubernetes).ok());
  now_ += 60;
  const std::string first = engine_->DescribeQueues();
  engine_->Gauges();  // rebuilds the state
  EXPECT_EQ(first, engine_->DescribeQueues());
}

TEST_F(DoorTest, FairShareAcrossDoorsPlansTheKubernetesQueueBelowItsShareFirst) {
  SyncBatch k;
  k.resync = true;
  for (int i = 0; i < 4; ++i) k.upsert_nodes.push_back(GpuNode("n" + std::to_string(i), "l0", "v" + std::to_string(i)));
  // qa (Slurm) already runs 3 nodes' worth; qb (Kubernetes) runs nothing.
  ASSERT_TRUE(Sync(k, FrontDoor::kKubernetes).ok());
  SyncBatch s;
  s.resync = true;
  s.upsert_nodes = k.upsert_nodes;
  for (int i = 0; i < 3; ++i) {
    PodInfo m = SlurmMember("r" + std::to_string(i), 0, 1, "qa");
    m.node_name = "n" + std::to_string(i);
    m.phase = PodPhase::kRunning;
    s.upsert_pods.push_back(m);
  }
  s.upsert_pods.push_back(SlurmMember("w", 0, 1, "qa"));
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  SyncBatch k2;
  k2.upsert_pods = {KubePod("kp", "qb")};
  ASSERT_TRUE(Sync(k2, FrontDoor::kKubernetes).ok());
  // One node is free: the Kubernetes queue qb is further below its share than qa.
  AdmitResult r = engine_->Admit(FrontDoor::kSlurm, 0);
  EXPECT_TRUE(r.admitted.empty());
  ASSERT_EQ(r.waiting.size(), 1u);
  std::vector<PodRefInfo> act = engine_->TakeActivations(FrontDoor::kKubernetes);
  ASSERT_EQ(act.size(), 1u);
  EXPECT_EQ(act[0].uid, "uid-kp");
  EXPECT_TRUE(engine_->TakeActivations(FrontDoor::kKubernetes).empty());  // once
  EXPECT_EQ(engine_->PlanPod("uid-kp").node, "n3");
}

TEST(DoorLeaseTest, ASecondHolderIsRefusedWhileTheLeaseIsHeld) {
  DoorLeases l;
  auto a = l.Acquire(FrontDoor::kSlurm, "adapter-a", 10000, 0);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(l.Holds(FrontDoor::kSlurm, "adapter-a", 5));
  auto b = l.Acquire(FrontDoor::kSlurm, "adapter-b", 10000, 5);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().ToString().find("adapter-a"), std::string::npos) << b.status().ToString();
  // The other door is independent.
  EXPECT_TRUE(l.Acquire(FrontDoor::kKubernetes, "", 0, 5).ok());
  // a's stream closes: a may come back at once, b only after the ttl.
  l.Release(FrontDoor::kSlurm, *a, 100);
  EXPECT_FALSE(l.Acquire(FrontDoor::kSlurm, "adapter-b", 10000, 5000).ok());
  EXPECT_FALSE(l.Holds(FrontDoor::kSlurm, "adapter-b", 5000));
  EXPECT_TRUE(l.Holds(FrontDoor::kSlurm, "adapter-a", 5000));
  auto b2 = l.Acquire(FrontDoor::kSlurm, "adapter-b", 10000, 10101);
  ASSERT_TRUE(b2.ok());
  EXPECT_FALSE(l.Holds(FrontDoor::kSlurm, "adapter-a", 10101));
  // A stale token's release does not free the new holder's lease.
  l.Release(FrontDoor::kSlurm, *a, 10200);
  EXPECT_TRUE(l.Holds(FrontDoor::kSlurm, "adapter-b", 10300));
  EXPECT_FALSE(l.Acquire(FrontDoor::kSlurm, "adapter-a", 10000, 10300).ok());
}

TEST(DoorLeaseTest, AnAnonymousHolderIsRefusedOnlyWhileItsStreamIsOpen) {
  DoorLeases l;
  auto a = l.Acquire(FrontDoor::kKubernetes, "", 0, 0);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(l.Acquire(FrontDoor::kKubernetes, "", 0, 1).ok());
  l.Release(FrontDoor::kKubernetes, *a, 2);
  EXPECT_TRUE(l.Acquire(FrontDoor::kKubernetes, "", 0, 2).ok());
}

// Replicas (door_lease.h): the Slurm door is served only while this replica's scheduler leads; a
// lease taken in one leading spell ends with it, even if nobody looked while it was standing by.
TEST(DoorLeaseTest, TheSlurmDoorIsServedOnlyWhileThisReplicasSchedulerLeads) {
  DoorLeases l;
  l.SetLeadership(/*election=*/true, /*until=*/0, 0);  // standing by
  auto refused = l.Acquire(FrontDoor::kSlurm, "adapter", 0, 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().Message().find("stands by"), std::string::npos) << refused.status().Message();
  EXPECT_TRUE(l.Acquire(FrontDoor::kKubernetes, "sched", 0, 1).ok());  // Kubernetes is always served

  l.SetLeadership(true, 1000, 10);  // leads until t=1000
  auto a = l.Acquire(FrontDoor::kSlurm, "adapter", 0, 20);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(l.Holds(FrontDoor::kSlurm, "adapter", 500));
  EXPECT_TRUE(l.StreamServed(FrontDoor::kSlurm, *a, 500));
  // The term lapsed unseen (no call between 1000 and the renewal at 1500): still a break.
  l.SetLeadership(true, 3000, 1500);
  EXPECT_FALSE(l.Holds(FrontDoor::kSlurm, "adapter", 1600));
  EXPECT_FALSE(l.StreamServed(FrontDoor::kSlurm, *a, 1600));
  l.Release(FrontDoor::kSlurm, *a, 1600);
  auto a2 = l.Acquire(FrontDoor::kSlurm, "adapter", 0, 1700);  // the same holder, a new spell
  ASSERT_TRUE(a2.ok()) << a2.status().ToString();
  EXPECT_TRUE(l.Holds(FrontDoor::kSlurm, "adapter", 1800));
  // Standing by for a moment ends the spell, even if the next renewal comes before anyone asks.
  l.SetLeadership(true, 0, 1900);
  l.SetLeadership(true, 5000, 1950);
  EXPECT_FALSE(l.StreamServed(FrontDoor::kSlurm, *a2, 2000));
  // The scheduler's stream closed: unknown is never leading.
  l.Release(FrontDoor::kSlurm, *a2, 2000);
  l.ForgetLeadership();
  EXPECT_NE(l.NotServed(FrontDoor::kSlurm, 2100).find("has not said"), std::string::npos);
  // Leader election off: this replica always serves.
  l.SetLeadership(false, 0, 2200);
  EXPECT_EQ(l.NotServed(FrontDoor::kSlurm, 999999), "");
}

TEST(DoorLeaseTest, WithoutSchedulerNewsTheSlurmDoorWaitsOnlyWhenFrontDoorsExpectsKubernetes) {
  DoorLeases alone;  // a Slurm-only engine: no scheduler will ever say
  EXPECT_TRUE(alone.Leading(0));
  EXPECT_TRUE(alone.Acquire(FrontDoor::kSlurm, "adapter", 0, 0).ok());
  DoorLeases both;
  both.ExpectKubernetes(true);
  auto r = both.Acquire(FrontDoor::kSlurm, "adapter", 0, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().Message().find("frontDoors expects the kubernetes door"), std::string::npos) << r.status().Message();
  EXPECT_FALSE(both.Leading(0));
  both.SetLeadership(false, 0, 1);
  EXPECT_TRUE(both.Leading(1));
  EXPECT_TRUE(both.Acquire(FrontDoor::kSlurm, "adapter", 0, 2).ok());
}

}  // namespace
}  // namespace tidal

namespace tidal {
namespace {

// The gap ledger: a Slurm job that ran while the adapter was away is charged its past usage once;
// one the engine kept charging after it ended is credited back; unknown jobs change nothing.
class GapTest : public DoorTest {
 protected:
  double FairShare(const std::string& q) {
    for (const auto& row : engine_->Gauges().fair_share) {
      if (row.labels == std::vector<std::string>{q}) return row.value;
    }
    return -1;
  }
};

TEST_F(GapTest, AFinishedRecordChargesAJobTheEngineNeverSawRunningOnce) {
  SyncBatch s;
  s.resync = true;
  s.upsert_nodes = {GpuNode("n1", "l0", "v0")};
  s.upsert_pods = {SlurmMember("40", 0, 1, "qa")};  // pending: released, then the adapter died
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  now_ += 3600;
  SyncBatch back;  // the adapter is back: the job is gone from slurmctld, jobcomp says it ran 1h
  back.resync = true;
  back.upsert_nodes = s.upsert_nodes;
  back.finished = {{"slurm/40", now_ - 3600, now_, 1, 8}, {"slurm/999", now_ - 100, now_, 1, 8}};
  const double before = FairShare("qa");
  ASSERT_TRUE(Sync(back, FrontDoor::kSlurm).ok());
  const double after = FairShare("qa");
  EXPECT_GT(after, before);
  ASSERT_TRUE(Sync(back, FrontDoor::kSlurm).ok());  // the same record again: no second charge
  EXPECT_DOUBLE_EQ(FairShare("qa"), after);
  EXPECT_DOUBLE_EQ(FairShare("qb"), 0);
}

TEST_F(GapTest, AJobChargedPastItsEndIsCreditedBack) {
  SyncBatch s;
  s.resync = true;
  s.upsert_nodes = {GpuNode("n1", "l0", "v0")};
  PodInfo m = SlurmMember("41", 0, 1, "qa");
  m.node_name = "n1";
  m.phase = PodPhase::kRunning;
  s.upsert_pods = {m};
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  now_ += 600;  // ran 10 minutes, ended; the adapter was down for 50 more
  const int64_t end = now_;
  now_ += 3000;
  SyncBatch back;
  back.resync = true;
  back.upsert_nodes = s.upsert_nodes;
  ASSERT_TRUE(Sync(back, FrontDoor::kSlurm).ok());
  const double overcharged = FairShare("qa");
  SyncBatch rec;
  rec.finished = {{"slurm/41", end - 600, end, 1, 8}};
  ASSERT_TRUE(Sync(rec, FrontDoor::kSlurm).ok());
  EXPECT_LT(FairShare("qa"), overcharged);
  EXPECT_GT(FairShare("qa"), 0);
}

}  // namespace
}  // namespace tidal

namespace tidal {
namespace {

class CrossDoorQuotaTest : public DoorTest {
 protected:
  void SetUp() override { Start("queues:\n  - name: qa\n    nominal: {gpus: 16}\n    borrowingLimit: {gpus: 0}\n"); }
};

TEST_F(CrossDoorQuotaTest, AQueueAtQuotaThroughBothDoorsIsRefusedNamingBoth) {
  SyncBatch k;
  k.resync = true;
  k.upsert_nodes = {GpuNode("n1", "l0", "v0"), GpuNode("n2", "l0", "v1"), GpuNode("n3", "l0", "v1")};
  PodInfo pod = KubePod("web", "qa");
  pod.node_name = "n1";
  pod.phase = PodPhase::kRunning;
  k.upsert_pods = {pod, KubePod("more", "qa")};
  ASSERT_TRUE(Sync(k, FrontDoor::kKubernetes).ok());
  SyncBatch s;
  s.resync = true;
  s.upsert_nodes = k.upsert_nodes;
  PodInfo job = SlurmMember("3", 0, 1, "qa");
  job.node_name = "n2";
  job.phase = PodPhase::kRunning;
  s.upsert_pods = {job, SlurmMember("4", 0, 1, "qa")};
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  PlanResult r = engine_->PlanPod("uid-more");
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.ToString().find("kubernetes 8, slurm 8"), std::string::npos) << r.status.ToString();
  AdmitResult a = engine_->Admit(FrontDoor::kSlurm, 0);
  EXPECT_TRUE(a.admitted.empty());
  ASSERT_EQ(a.waiting.size(), 1u);
  EXPECT_NE(a.waiting[0].reason.find("kubernetes 8, slurm 8"), std::string::npos) << a.waiting[0].reason;
}

TEST_F(CrossDoorQuotaTest, SlurmJobsAreNeverVictimsOfAKubernetesPreemption) {
  Start("queues:\n  - name: qa\n");
  SyncBatch s;
  s.resync = true;
  s.upsert_nodes = {GpuNode("n1", "l0", "v0")};
  PodInfo job = SlurmMember("5", 0, 1, "qa");
  job.node_name = "n1";
  job.phase = PodPhase::kRunning;
  job.annotations[kLabelPreemptible] = "true";
  s.upsert_pods = {job};
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  SyncBatch k;
  k.resync = true;
  k.upsert_nodes = s.upsert_nodes;
  PodInfo urgent = KubePod("urgent", "qa");
  urgent.priority = 1000;
  k.upsert_pods = {urgent};
  ASSERT_TRUE(Sync(k, FrontDoor::kKubernetes).ok());
  EXPECT_FALSE(engine_->PlanPod("uid-urgent").status.ok());
  PreemptResult p = engine_->Preempt("uid-urgent");
  for (const auto& v : p.victims) EXPECT_NE(v.uid.rfind("slurm/", 0), 0u) << v.uid;
}

}  // namespace
}  // namespace tidal

namespace tidal {
namespace {

TEST_F(DoorTest, APlanMadeAheadIsDroppedWithItsPodsGang) {
  SyncBatch k;
  k.resync = true;
  k.upsert_nodes = {GpuNode("n1", "l0", "v0")};
  k.upsert_pods = {KubePod("kp", "qb")};
  ASSERT_TRUE(Sync(k, FrontDoor::kKubernetes).ok());
  SyncBatch s;
  s.resync = true;
  s.upsert_nodes = k.upsert_nodes;
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  (void)engine_->Admit(FrontDoor::kSlurm, 0);  // plans the Kubernetes head ahead: no slot claimed
  ASSERT_EQ(engine_->TakeActivations(FrontDoor::kKubernetes).size(), 1u);
  EXPECT_EQ(Usage("qb"), 8);
  SyncBatch del;
  del.delete_pods = {"uid-kp"};
  ASSERT_TRUE(Sync(del, FrontDoor::kKubernetes).ok());
  EXPECT_EQ(Usage("qb"), 0);  // was 8 forever: the plan leaked with its erased gang
  EXPECT_EQ(engine_->Stats().plans, 0);
}

TEST_F(DoorTest, AReloadKeepsAPlanWhoseMembersAreReservedSoNoOtherDoorGetsItsGpus) {
  SyncBatch k;
  k.resync = true;
  k.upsert_nodes = {GpuNode("n1", "l0", "v0")};
  k.upsert_pods = {KubePod("kp", "qb")};
  ASSERT_TRUE(Sync(k, FrontDoor::kKubernetes).ok());
  ASSERT_EQ(engine_->PlanPod("uid-kp").node, "n1");
  ASSERT_TRUE(engine_->Reserve("uid-kp", "n1").ok());  // kube-scheduler holds it assumed on n1, in Permit
  SyncBatch s;
  s.resync = true;
  s.upsert_nodes = k.upsert_nodes;
  s.upsert_pods = {SlurmMember("7", 0, 1, "qa")};
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  auto cfg = ParseEngineConfig("queues:\n  - name: qa\n    weight: 2\n  - name: qb\n    weight: 1\n", "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_TRUE(engine_->Reconfigure(*cfg).ok());
  now_ += 10;
  // Old code: the reload dropped the reserved plan and n1's 8 GPUs went to Slurm job 7 as well.
  EXPECT_TRUE(engine_->Admit(FrontDoor::kSlurm, 0).admitted.empty());
  EXPECT_EQ(engine_->Stats().plans, 1);
  EXPECT_EQ(Usage("qb"), 8);  // the plan's charge moved to the new ledger
  EXPECT_TRUE(engine_->Reserve("uid-kp", "n1").ok()) << "the member still holds its slot";
}

}  // namespace
}  // namespace tidal
