// Slurm jobs as preemption victims of Kubernetes gangs (engine/engine_preempt.cc,
// engine/engine_victims.cc): a preemptible Slurm job on shared nodes is chosen like any gang, but
// handed to tidal-slurm (Disruptions on the Slurm door) instead of the shim's evictions; the hold
// waits for the requeue instead of choosing again; the adapter's report counts it once; the
// preemptor's pods are activated once the job is gone. A job Slurm would not requeue
// (slurm.tidal.dev/requeue "false") and every Slurm job under disruption.preemptSlurmJobs: false
// are never victims.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include <gtest/gtest.h>

#include <set>

#include "engine/engine.h"
#include "engine/observability.h"
#include "test/support/engine_objects.h"

namespace tidal {
namespace {

using testing::GangPod;
using testing::GpuNode;
using testing::RunningOn;
using testing::SlurmMember;

class SlurmVictimsTest : public ::testing::Test {
 protected:
  // Two nodes (n1, n2: one leaf) both doors report: a shared pool. Slurm job 7 (two 8-GPU members,
  // preemptible unless told otherwise) runs on both since start_s.
  void Start(const std::string& extra_yaml, bool preemptible = true, bool requeueable = true) {
    auto cfg = ParseEngineConfig("queues:\n  - name: qa\n    weight: 1\n" + extra_yaml, "t.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto e = Engine::Create(*cfg, [this] { return now_; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    engine_->SetObservability(&metrics_, nullptr);
    SyncBatch k;
    k.resync = true;
    k.upsert_nodes = {GpuNode("n1", "l0", "v0"), GpuNode("n2", "l0", "v0")};
    ASSERT_TRUE(Sync(k, FrontDoor::kKubernetes).ok());
    SyncBatch s;
    s.resync = true;
    s.upsert_nodes = k.upsert_nodes;
    for (int i = 0; i < 2; ++i) {
      PodInfo m = SlurmMember("7", i, 2, "qa", 8, "n" + std::to_string(i + 1));
      m.start_unix = start_s;
      if (preemptible) m.annotations[kLabelPreemptible] = "true";
      if (!requeueable) m.annotations["slurm.tidal.dev/requeue"] = "false";
      s.upsert_pods.push_back(m);
    }
    ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
    SyncBatch p;  // the preemptor: a 2-pod gang of priority 100
    for (int i = 0; i < 2; ++i) {
      PodInfo pod = GangPod("hi" + std::to_string(i), "hi", 2);
      pod.priority = 100;
      pod.labels[kLabelQueue] = "qa";
      p.upsert_pods.push_back(pod);
    }
    ASSERT_TRUE(Sync(p, FrontDoor::kKubernetes).ok());
  }
  Status Sync(SyncBatch b, FrontDoor door) {
    b.door = door;
    for (auto& p : b.upsert_pods) p.door = door;
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  // Slurm requeued job 7: it is pending again (held, no nodes).
  void Requeued() {
    SyncBatch s;
    s.resync = true;
    s.upsert_nodes = {GpuNode("n1", "l0", "v0"), GpuNode("n2", "l0", "v0")};
    for (int i = 0; i < 2; ++i) s.upsert_pods.push_back(SlurmMember("7", i, 2, "qa"));
    ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  }
  std::vector<DisruptionAction> Poll(FrontDoor door) { return engine_->Disruptions(door); }

  int64_t now_ = 10000;
  int64_t start_s = 9000;
  metrics::Registry registry_;
  EngineMetrics metrics_{registry_};
  std::unique_ptr<Engine> engine_;
};

TEST_F(SlurmVictimsTest, APreemptibleSlurmJobIsAVictimTidalSlurmRequeuesAndTheGangStartsOnceItIsGone) {
  Start("");
  ASSERT_EQ(engine_->PlanPod("uid-hi0").status.code(), StatusCode::kUnschedulable);
  PreemptResult r = engine_->Preempt("uid-hi0");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.victims.empty()) << "the shim evicts no Slurm pod";
  ASSERT_EQ(r.victim_gangs.size(), 1u);
  EXPECT_EQ(r.victim_gangs[0].first, "slurm/7");
  EXPECT_EQ(r.victim_gangs[0].second.size(), 2u);
  ASSERT_EQ(r.victim_doors.size(), 1u);
  EXPECT_EQ(r.victim_doors[0], FrontDoor::kSlurm);

  // tidal-slurm's poll has the eviction; the Kubernetes shim's has nothing.
  EXPECT_TRUE(Poll(FrontDoor::kKubernetes).empty());
  auto due = Poll(FrontDoor::kSlurm);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].id, "slurm/7");
  EXPECT_EQ(due[0].kind, DisruptionAction::Kind::kEvict);
  EXPECT_EQ(due[0].cause, "preemption");

  // While the job still runs, PostFilter waits for it instead of choosing again.
  now_ += 5;
  PreemptResult again = engine_->Preempt("uid-hi0");
  EXPECT_EQ(again.status.code(), StatusCode::kUnschedulable);
  EXPECT_NE(again.status.ToString().find("requeued by tidal-slurm"), std::string::npos) << again.status.ToString();
  EXPECT_EQ(Poll(FrontDoor::kSlurm).size(), 1u) << "the disruption is not cancelled";
  EXPECT_TRUE(engine_->TakeActivations(FrontDoor::kKubernetes).empty()) << "nothing to retry yet";

  // tidal-slurm requeued it and reports so: one preemption counted, its work lost with it.
  EvictionReport rep;
  rep.disruption = "slurm/7";
  rep.reason = "preemption";
  rep.evicted = {{"slurm/7#0", "slurm", "7#0"}, {"slurm/7#1", "slurm", "7#1"}};
  ASSERT_TRUE(engine_->Evicted(rep).ok());
  EXPECT_EQ(metrics_.preemptions.With({"priority"}).Value(), 1);
  EXPECT_GT(metrics_.preempted_gpu_seconds.With({"priority"}).Value(), 0);
  ASSERT_TRUE(engine_->Evicted(rep).ok());  // reported twice (a retry): counted once
  EXPECT_EQ(metrics_.preemptions.With({"priority"}).Value(), 1);

  // Its members are gone from the nodes: the gang's pods are handed back to kube-scheduler (no
  // Kubernetes event would retry them) and placed on the freed nodes.
  Requeued();
  EXPECT_TRUE(engine_->Admit(FrontDoor::kSlurm, 0).admitted.empty()) << "the freed nodes are held for the gang";
  auto act = engine_->TakeActivations(FrontDoor::kKubernetes);
  std::set<std::string> names;
  for (const auto& p : act) names.insert(p.name);
  EXPECT_EQ(names, (std::set<std::string>{"hi0", "hi1"}));
  EXPECT_TRUE(engine_->TakeActivations(FrontDoor::kKubernetes).empty()) << "once";
  PlanResult plan = engine_->PlanPod("uid-hi0");
  ASSERT_TRUE(plan.status.ok()) << plan.status.ToString();
  EXPECT_TRUE(plan.node == "n1" || plan.node == "n2") << plan.node;
  // The requeued job waits behind the gang's plan: Slurm gets no node it holds.
  EXPECT_TRUE(engine_->Admit(FrontDoor::kSlurm, 0).admitted.empty());
}

TEST_F(SlurmVictimsTest, ASlurmJobThatCheckpointsOnNoticeIsSignalledFirst) {
  Start("");
  SyncBatch s;
  for (int i = 0; i < 2; ++i) {
    PodInfo m = SlurmMember("7", i, 2, "qa", 8, "n" + std::to_string(i + 1));
    m.start_unix = start_s;
    m.annotations[kLabelPreemptible] = "true";
    m.annotations["tidal.dev/checkpoint-on-notice"] = "60s";  // from --signal=USR1@60
    s.upsert_pods.push_back(m);
  }
  ASSERT_TRUE(Sync(s, FrontDoor::kSlurm).ok());
  PreemptResult r = engine_->Preempt("uid-hi0");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.victim_notice.size(), 1u);
  EXPECT_EQ(r.victim_notice[0].first, 60);
  auto due = Poll(FrontDoor::kSlurm);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].kind, DisruptionAction::Kind::kNotice);
  now_ += 61;
  due = Poll(FrontDoor::kSlurm);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].kind, DisruptionAction::Kind::kEvict) << "the notice ran out";
}

TEST_F(SlurmVictimsTest, AJobSlurmWouldNotRequeueIsNeverAVictim) {
  Start("", /*preemptible=*/true, /*requeueable=*/false);
  PreemptResult r = engine_->Preempt("uid-hi0");
  EXPECT_EQ(r.status.code(), StatusCode::kUnschedulable);
  EXPECT_NE(r.status.ToString().find("no victims"), std::string::npos) << r.status.ToString();
  EXPECT_TRUE(Poll(FrontDoor::kSlurm).empty());
}

TEST_F(SlurmVictimsTest, PreemptSlurmJobsOffKeepsEverySlurmJob) {
  Start("disruption:\n  preemptSlurmJobs: false\n");
  PreemptResult r = engine_->Preempt("uid-hi0");
  EXPECT_EQ(r.status.code(), StatusCode::kUnschedulable) << r.status.ToString();
  EXPECT_TRUE(r.victim_gangs.empty());
  EXPECT_TRUE(Poll(FrontDoor::kSlurm).empty());
}

TEST_F(SlurmVictimsTest, ANonPreemptibleSlurmJobIsNoPriorityVictim) {
  Start("", /*preemptible=*/false);
  EXPECT_EQ(engine_->Preempt("uid-hi0").status.code(), StatusCode::kUnschedulable);
}

TEST(SlurmVictimsConfig, PreemptSlurmJobsMustBeABoolean) {
  auto cfg = ParseEngineConfig("disruption:\n  preemptSlurmJobs: sometimes\n", "t.yaml");
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().ToString().find("disruption.preemptSlurmJobs"), std::string::npos) << cfg.status().ToString();
}

// An elastic Slurm job (--nodes=1-3 running on 3) gives back what the preemptor needs (one member,
// not its whole surplus) and never its batch host's (tidal.dev/gang-leader) while another member
// can go: Slurm cannot take that node from a running job. Regressions: the first member in uid
// order went first, and the whole surplus (two members) went for a preemptor of one.
TEST(SlurmElasticVictims, AShrinkGivesBackTheBatchHostLast) {
  int64_t now = 10000;
  auto cfg = ParseEngineConfig("queues:\n  - name: qa\n    weight: 1\n", "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto e = Engine::Create(*cfg, [&now] { return now; });
  ASSERT_TRUE(e.ok());
  std::unique_ptr<Engine> engine = std::move(e).value();
  uint64_t gen = 0;
  SyncBatch k;
  k.door = FrontDoor::kKubernetes;
  k.resync = true;
  k.upsert_nodes = {GpuNode("n1", "l0", "v0"), GpuNode("n2", "l0", "v0"), GpuNode("n3", "l0", "v0")};
  ASSERT_TRUE(engine->Sync(k, &gen).ok());
  SyncBatch s = k;
  s.door = FrontDoor::kSlurm;
  for (int i = 0; i < 3; ++i) {
    PodInfo m = SlurmMember("7", i, 3, "qa", 8, "n" + std::to_string(i + 1));
    m.start_unix = 9000;
    m.annotations[kLabelPreemptible] = "true";
    m.annotations["tidal.dev/gang-min"] = "1";
    if (i == 0) m.annotations["tidal.dev/gang-leader"] = "true";  // the batch host, n1
    s.upsert_pods.push_back(m);
  }
  ASSERT_TRUE(engine->Sync(s, &gen).ok());
  SyncBatch p;
  p.door = FrontDoor::kKubernetes;
  PodInfo hi = GangPod("hi0", "hi", 1);
  hi.priority = 100;
  hi.labels[kLabelQueue] = "qa";
  hi.door = FrontDoor::kKubernetes;
  p.upsert_pods = {hi};
  ASSERT_TRUE(engine->Sync(p, &gen).ok());
  PreemptResult r = engine->Preempt("uid-hi0");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.victim_gangs.size(), 1u);
  std::string taken;
  for (const auto& x : r.victim_gangs[0].second) taken += x.uid + " ";
  ASSERT_EQ(r.victim_gangs[0].second.size(), 1u) << "one member given back, the job goes on: " << taken;
  EXPECT_NE(r.victim_gangs[0].second[0].uid, "slurm/7#0") << "not the batch host's";
  auto due = engine->Disruptions(FrontDoor::kSlurm);
  ASSERT_EQ(due.size(), 1u);
  ASSERT_EQ(due[0].pods.size(), 1u);
  EXPECT_EQ(due[0].pods[0].uid, r.victim_gangs[0].second[0].uid);
}

// A Kubernetes user marks an elastic gang's rendezvous host with tidal.dev/gang-leader as a label
// or an annotation (the annotation wins, as for every key): a shrink gives it back last. Before,
// the engine read only the annotation (and the shim forwarded neither), so the leader, here the
// newest member, went first.
TEST(KubernetesElasticVictims, AGangLeaderLabelIsGivenBackLastAndAnAnnotationWins) {
  for (const std::string annotation : {"", "false"}) {
    SCOPED_TRACE("annotation \"" + annotation + "\"");
    auto cfg = ParseEngineConfig("queues:\n  - name: qa\n    weight: 1\n", "t.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto e = Engine::Create(*cfg, [] { return int64_t{10000}; });
    ASSERT_TRUE(e.ok());
    std::unique_ptr<Engine> engine = std::move(e).value();
    uint64_t gen = 0;
    SyncBatch b;
    b.door = FrontDoor::kKubernetes;
    b.resync = true;
    b.upsert_nodes = {GpuNode("n1", "l0", "v0"), GpuNode("n2", "l0", "v0"), GpuNode("n3", "l0", "v0")};
    for (int i = 0; i < 3; ++i) {  // m2 is the newest: the first to go but for its mark
      PodInfo m = RunningOn(GangPod("m" + std::to_string(i), "el", 3), "n" + std::to_string(i + 1), 9000 + 10 * i);
      m.labels[kLabelPreemptible] = "true";
      m.labels[kLabelGangMin] = "1";
      m.labels[kLabelQueue] = "qa";
      if (i == 2) m.labels[kLabelGangLeader] = "true";
      if (i == 2 && !annotation.empty()) m.annotations[kLabelGangLeader] = annotation;
      b.upsert_pods.push_back(m);
    }
    PodInfo hi = GangPod("hi0", "hi", 1);
    hi.priority = 100;
    hi.labels[kLabelQueue] = "qa";
    b.upsert_pods.push_back(hi);
    ASSERT_TRUE(engine->Sync(b, &gen).ok());
    PreemptResult r = engine->Preempt("uid-hi0");
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_EQ(r.victim_gangs.size(), 1u);
    ASSERT_EQ(r.victim_gangs[0].second.size(), 1u) << "one member given back";
    if (annotation.empty()) {
      EXPECT_EQ(r.victim_gangs[0].second[0].uid, "uid-m1") << "the leader m2 is kept; the newest of the others goes";
    } else {
      EXPECT_EQ(r.victim_gangs[0].second[0].uid, "uid-m2") << "the annotation \"false\" wins over the label";
    }
  }
}

}  // namespace
}  // namespace tidal
