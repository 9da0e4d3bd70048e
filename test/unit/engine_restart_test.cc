// An engine restart with two front doors (engine/engine_doors.cc): the state file remembers the
// nodes each door reported, and after a start every node a door reported takes no new work until
// that door has resynced, so one door's snapshot alone never makes the other door's work look
// free (the e2e case slurm-chaos bound pods onto GPUs running Slurm jobs held). Nodes only one door
// reported are not gated; frontDoors gates every node for an expected door nothing is known of;
// an older state file (no doorNodes) still loads, and a malformed part is skipped, never fatal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "test/support/engine_objects.h"

namespace tidal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::GangPod;
using testing::GpuNode;
using testing::SlurmMember;

constexpr const char* kQueues = "queues:\n  - name: qa\n    weight: 1\n  - name: qb\n    weight: 1\n";

class RestartTest : public ::testing::Test {
 protected:
  std::unique_ptr<Engine> NewEngine(const std::string& extra = "") {
    auto cfg = ParseEngineConfig(std::string(kQueues) + extra, "t.yaml");
    EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
    if (!cfg.ok()) return nullptr;
    auto e = Engine::Create(*cfg, [this] { return now_; });
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(e).value() : nullptr;
  }
  // A full snapshot of `door` (one batch): its nodes and pods.
  static Status Resync(Engine& e, FrontDoor door, std::vector<NodeInfo> nodes, std::vector<PodInfo> pods = {}) {
    SyncBatch b;
    b.door = door;
    b.resync = true;
    b.upsert_nodes = std::move(nodes);
    b.upsert_pods = std::move(pods);
    for (auto& p : b.upsert_pods) p.door = door;
    uint64_t gen = 0;
    return e.Sync(b, &gen);
  }
  static PodInfo KubePod(const std::string& name, const std::string& queue, const std::string& node = "") {
    PodInfo p = GangPod(name, "", 1, 8);
    p.labels[kLabelQueue] = queue;
    if (!node.empty()) {
      p.node_name = node;
      p.phase = PodPhase::kRunning;
    }
    return p;
  }
  static double Awaiting(Engine& e, const std::string& door) {
    for (const auto& r : e.Gauges().door_awaiting) {
      if (r.labels == std::vector<std::string>{door}) return r.value;
    }
    return -1;
  }
  static std::string ExplainText(Engine& e, const std::string& name) {
    std::string text;
    EXPECT_TRUE(e.Explain(name, &text).ok());
    return text;
  }
  std::vector<NodeInfo> Nodes(std::initializer_list<const char*> names) {
    std::vector<NodeInfo> out;
    int i = 0;
    for (const char* n : names) out.push_back(GpuNode(n, "l0", "v" + std::to_string(i++)));
    return out;
  }
  int64_t now_ = 1000;
};

// (1) Kubernetes resyncs first: the nodes Slurm reported before the restart wait for Slurm's
// snapshot; then the pod plans beside the running Slurm job, never onto its GPUs.
TEST_F(RestartTest, PodsWaitForTheSlurmDoorOnNodesItReportedBeforeTheRestart) {
  auto a = NewEngine();
  ASSERT_TRUE(a);
  ASSERT_TRUE(Resync(*a, FrontDoor::kKubernetes, Nodes({"n1", "n2"})).ok());
  ASSERT_TRUE(Resync(*a, FrontDoor::kSlurm, Nodes({"n1", "n2"}), {SlurmMember("7", 0, 1, "qa", 8, "n1")}).ok());
  const std::string saved = a->SaveLedger();
  const auto j = nlohmann::json::parse(saved);
  EXPECT_EQ(j["doorNodes"]["slurm"], nlohmann::json({"n1", "n2"})) << saved;
  EXPECT_EQ(j["doorNodes"]["kubernetes"], nlohmann::json({"n1", "n2"})) << saved;
  a.reset();  // kill -9

  auto b = NewEngine();
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->LoadLedger(saved).ok());
  EXPECT_THAT(b->Stats().awaiting_doors, ElementsAre("kubernetes", "slurm"));
  ASSERT_TRUE(Resync(*b, FrontDoor::kKubernetes, Nodes({"n1", "n2"}), {KubePod("p", "qb"), KubePod("q", "qb")}).ok());
  EXPECT_THAT(b->Stats().awaiting_doors, ElementsAre("slurm"));
  EXPECT_EQ(Awaiting(*b, "slurm"), 1);
  EXPECT_EQ(Awaiting(*b, "kubernetes"), 0);
  PlanResult early = b->PlanPod("uid-p");
  EXPECT_FALSE(early.status.ok()) << "planned onto " << early.node << " before the Slurm door's snapshot";
  EXPECT_EQ(early.node, "");
  EXPECT_THAT(early.status.Message(), HasSubstr("n1, n2: waiting for the slurm door's first sync since the engine started"));
  EXPECT_THAT(ExplainText(*b, "team/p"), HasSubstr("waiting for the slurm door's first sync"));

  ASSERT_TRUE(Resync(*b, FrontDoor::kSlurm, Nodes({"n1", "n2"}), {SlurmMember("7", 0, 1, "qa", 8, "n1")}).ok());
  EXPECT_TRUE(b->Stats().awaiting_doors.empty());
  EXPECT_EQ(Awaiting(*b, "slurm"), 0);
  PlanResult p = b->PlanPod("uid-p");
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(p.node, "n2");
  PlanResult q = b->PlanPod("uid-q");
  EXPECT_FALSE(q.status.ok()) << "q planned onto " << q.node << ": n1's 8 GPUs run Slurm job 7";
  EXPECT_THAT(q.status.Message(), Not(HasSubstr("waiting for the")));
  // The Kubernetes pods refused meanwhile are handed back for another try.
  std::vector<std::string> again;
  for (const auto& r : b->TakeActivations(FrontDoor::kKubernetes)) again.push_back(r.uid);
  EXPECT_THAT(again, ::testing::UnorderedElementsAre("uid-p", "uid-q"));
}

// (2) The reverse: Slurm resyncs first; its jobs wait for the Kubernetes door's snapshot on the
// nodes Kubernetes reported, and then start beside the running pod, never on its GPUs.
TEST_F(RestartTest, SlurmJobsWaitForTheKubernetesDoorOnNodesItReportedBeforeTheRestart) {
  auto a = NewEngine();
  ASSERT_TRUE(a);
  ASSERT_TRUE(Resync(*a, FrontDoor::kKubernetes, Nodes({"n1", "n2"}), {KubePod("web", "qb", "n1")}).ok());
  ASSERT_TRUE(Resync(*a, FrontDoor::kSlurm, Nodes({"n1", "n2"})).ok());
  const std::string saved = a->SaveLedger();
  a.reset();

  auto b = NewEngine();
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->LoadLedger(saved).ok());
  ASSERT_TRUE(Resync(*b, FrontDoor::kSlurm, Nodes({"n1", "n2"}), {SlurmMember("9", 0, 1, "qa"), SlurmMember("10", 0, 1, "qa")}).ok());
  EXPECT_THAT(b->Stats().awaiting_doors, ElementsAre("kubernetes"));
  AdmitResult early = b->Admit(FrontDoor::kSlurm, 10);
  EXPECT_TRUE(early.admitted.empty()) << "admitted " << early.admitted.front().gang << " onto " << early.admitted.front().nodes.front();
  ASSERT_EQ(early.waiting.size(), 2u);
  EXPECT_THAT(early.waiting[0].reason, HasSubstr("n1, n2: waiting for the kubernetes door's first sync since the engine started"));

  ASSERT_TRUE(Resync(*b, FrontDoor::kKubernetes, Nodes({"n1", "n2"}), {KubePod("web", "qb", "n1")}).ok());
  AdmitResult r = b->Admit(FrontDoor::kSlurm, 10);
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_THAT(r.admitted[0].nodes, ElementsAre("n2"));
  ASSERT_EQ(r.waiting.size(), 1u);
  EXPECT_THAT(r.waiting[0].reason, Not(HasSubstr("waiting for the")));
}

// (3) A node only one door ever reported is that door's alone: not gated for anyone.
TEST_F(RestartTest, NodesOnlyOneDoorReportedAreNotGated) {
  auto a = NewEngine();
  ASSERT_TRUE(a);
  ASSERT_TRUE(Resync(*a, FrontDoor::kKubernetes, Nodes({"n1", "k3"})).ok());
  ASSERT_TRUE(Resync(*a, FrontDoor::kSlurm, {GpuNode("n1", "l0", "v0"), GpuNode("s4", "l0", "v9")}).ok());
  const std::string saved = a->SaveLedger();
  a.reset();

  // Kubernetes first: its own node k3 takes a pod at once, the shared n1 does not.
  auto b = NewEngine();
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->LoadLedger(saved).ok());
  ASSERT_TRUE(Resync(*b, FrontDoor::kKubernetes, Nodes({"n1", "k3"}), {KubePod("a", "qb"), KubePod("b", "qb")}).ok());
  PlanResult pa = b->PlanPod("uid-a");
  ASSERT_TRUE(pa.status.ok()) << pa.status.ToString();
  EXPECT_EQ(pa.node, "k3");
  PlanResult pb = b->PlanPod("uid-b");
  EXPECT_FALSE(pb.status.ok()) << "planned onto " << pb.node;
  EXPECT_THAT(pb.status.Message(), HasSubstr("n1: waiting for the slurm door's first sync"));

  // Slurm first: its own node s4 takes a job at once, the shared n1 does not.
  auto c = NewEngine();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->LoadLedger(saved).ok());
  ASSERT_TRUE(Resync(*c, FrontDoor::kSlurm, {GpuNode("n1", "l0", "v0"), GpuNode("s4", "l0", "v9")},
                     {SlurmMember("8", 0, 1, "qa"), SlurmMember("9", 0, 1, "qa")})
                  .ok());
  AdmitResult r = c->Admit(FrontDoor::kSlurm, 10);
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_THAT(r.admitted[0].nodes, ElementsAre("s4"));
  ASSERT_EQ(r.waiting.size(), 1u);
  EXPECT_THAT(r.waiting[0].reason, HasSubstr("n1: waiting for the kubernetes door's first sync"));
}

// The memory survives a second restart before the door came back, and only a change to a door's
// node set asks for a save (DoorMemoryVersion), not a resync that reports the same nodes.
TEST_F(RestartTest, TheMemoryOutlivesASecondRestartAndChangesOnlyWithTheNodeSets) {
  auto a = NewEngine();
  ASSERT_TRUE(a);
  const uint64_t v0 = a->DoorMemoryVersion();
  ASSERT_TRUE(Resync(*a, FrontDoor::kKubernetes, Nodes({"n1"})).ok());
  ASSERT_TRUE(Resync(*a, FrontDoor::kSlurm, Nodes({"n1"})).ok());
  const uint64_t v1 = a->DoorMemoryVersion();
  EXPECT_NE(v1, v0);
  std::vector<NodeInfo> drained = Nodes({"n1"});
  drained[0].unschedulable = true;
  ASSERT_TRUE(Resync(*a, FrontDoor::kSlurm, drained).ok());
  EXPECT_EQ(a->DoorMemoryVersion(), v1) << "the same nodes again: nothing new to save";
  ASSERT_TRUE(Resync(*a, FrontDoor::kSlurm, Nodes({"n1", "n2"})).ok());
  EXPECT_NE(a->DoorMemoryVersion(), v1);
  const std::string first = a->SaveLedger();
  a.reset();

  auto b = NewEngine();
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->LoadLedger(first).ok());
  ASSERT_TRUE(Resync(*b, FrontDoor::kKubernetes, Nodes({"n1"})).ok());
  const std::string second = b->SaveLedger();  // Slurm never came back to b
  b.reset();

  auto c = NewEngine();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->LoadLedger(second).ok());
  ASSERT_TRUE(Resync(*c, FrontDoor::kKubernetes, Nodes({"n1"}), {KubePod("p", "qb")}).ok());
  EXPECT_FALSE(c->PlanPod("uid-p").status.ok());
  ASSERT_TRUE(Resync(*c, FrontDoor::kSlurm, Nodes({"n1", "n2"})).ok());
  EXPECT_EQ(c->PlanPod("uid-p").node, "n1");
}

// (4) frontDoors: the doors expected; unknown names are refused naming the field. Without a state
// file, an expected door that has not resynced since the start gates every node.
TEST_F(RestartTest, FrontDoorsNamesTheExpectedDoorsAndGatesEveryNodeUntilTheyResync) {
  auto cfg = ParseEngineConfig("frontDoors: [kubernetes, slurm]\n", "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_THAT(cfg->front_doors, ElementsAre(FrontDoor::kKubernetes, FrontDoor::kSlurm));
  EXPECT_TRUE(ParseEngineConfig("frontDoors: []\n", "t.yaml").ok());
  auto bad = ParseEngineConfig("schedulerName: x\nfrontDoors: [kubernetes, lsf]\n", "t.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().Message(), HasSubstr("t.yaml:2: frontDoors[1]: unknown front door \"lsf\" (accepted: kubernetes, slurm)"));
  auto twice = ParseEngineConfig("frontDoors: [slurm, slurm]\n", "t.yaml");
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().Message(), HasSubstr("frontDoors[1]: slurm is listed twice"));
  auto scalar = ParseEngineConfig("frontDoors: slurm\n", "t.yaml");
  ASSERT_FALSE(scalar.ok());
  EXPECT_THAT(scalar.status().Message(), HasSubstr("frontDoors: expected a list"));

  auto e = NewEngine("frontDoors: [kubernetes, slurm]\n");
  ASSERT_TRUE(e);
  EXPECT_THAT(e->Stats().awaiting_doors, ElementsAre("kubernetes", "slurm"));
  ASSERT_TRUE(Resync(*e, FrontDoor::kKubernetes, Nodes({"k1"}), {KubePod("p", "qb")}).ok());
  PlanResult early = e->PlanPod("uid-p");
  EXPECT_FALSE(early.status.ok()) << "planned onto " << early.node;
  EXPECT_THAT(early.status.Message(), HasSubstr("every node: waiting for the slurm door's first sync since the engine started"));
  ASSERT_TRUE(Resync(*e, FrontDoor::kSlurm, {}).ok());  // a Slurm cluster sharing nothing
  EXPECT_TRUE(e->Stats().awaiting_doors.empty());
  EXPECT_EQ(e->PlanPod("uid-p").node, "k1");

  // Only Kubernetes expected: it plans as soon as its own snapshot is in.
  auto k = NewEngine("frontDoors: [kubernetes]\n");
  ASSERT_TRUE(k);
  ASSERT_TRUE(Resync(*k, FrontDoor::kKubernetes, Nodes({"k1"}), {KubePod("p", "qb")}).ok());
  EXPECT_EQ(k->PlanPod("uid-p").node, "k1");
}

// (5) An older engine's state file (no doorNodes) loads as before; the new file keeps the ledger's
// own keys, so an older engine reads it too. A malformed part is skipped and named, never fatal.
TEST_F(RestartTest, AnOlderStateFileLoadsAndAMalformedPartIsSkipped) {
  auto e = NewEngine();
  ASSERT_TRUE(e);
  Status old = e->LoadLedger(R"({"time": 900, "usage": {"qa": {"gpus": 3600}}})");
  ASSERT_TRUE(old.ok()) << old.ToString();
  EXPECT_TRUE(e->Stats().awaiting_doors.empty());
  ASSERT_TRUE(Resync(*e, FrontDoor::kKubernetes, Nodes({"n1"}), {KubePod("p", "qb")}).ok());
  EXPECT_EQ(e->PlanPod("uid-p").node, "n1");
  const auto saved = nlohmann::json::parse(e->SaveLedger());
  EXPECT_GT(saved["usage"]["qa"]["gpus"].get<double>(), 0);
  EXPECT_TRUE(saved["time"].is_number_integer());
  EXPECT_EQ(saved["doorNodes"], nlohmann::json::parse(R"({"kubernetes": ["n1"]})")) << "slurm never reported: left out";

  auto bad = NewEngine();
  ASSERT_TRUE(bad);
  Status s = bad->LoadLedger(R"({"time": 900, "usage": {}, "doorNodes": {"slurm": "n1", "lsf": ["x"], "kubernetes": ["k1", 7]}})");
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.Message(), HasSubstr("doorNodes.slurm: expected a list of node names; ignored"));
  EXPECT_THAT(s.Message(), HasSubstr("doorNodes.lsf: unknown front door"));
  EXPECT_THAT(s.Message(), HasSubstr("doorNodes.kubernetes: 1 entries that are not node names skipped"));
  EXPECT_THAT(bad->Stats().awaiting_doors, ElementsAre("kubernetes"));  // k1 is still remembered
  EXPECT_FALSE(bad->LoadLedger("{not json").ok());
  EXPECT_FALSE(bad->LoadLedger(R"({"doorNodes": []})").ok());

  // The usage part broken, the doors' part fine: the gate still holds.
  auto half = NewEngine();
  ASSERT_TRUE(half);
  Status h = half->LoadLedger(R"({"doorNodes": {"slurm": ["n1"]}})");
  EXPECT_THAT(h.Message(), HasSubstr("usage history not restored"));
  ASSERT_TRUE(Resync(*half, FrontDoor::kKubernetes, Nodes({"n1"}), {KubePod("p", "qb")}).ok());
  EXPECT_FALSE(half->PlanPod("uid-p").status.ok());
}

// (6) A state file whose time is ahead of this machine's clock (the clock stepped back since it
// was written, or the file came from a host whose clock ran ahead): the ledger starts from now.
// Before, its time stayed in the future and usage neither decayed nor grew until the clock caught
// up, so a running queue's fair share was frozen at the file's values for that long.
TEST_F(RestartTest, AStateFileFromTheFutureDoesNotFreezeUsage) {
  auto e = NewEngine();
  ASSERT_TRUE(e);
  now_ = 1000;
  Status s = e->LoadLedger(R"({"time": 1000000, "usage": {"qa": {"gpus": 0}, "qb": {"gpus": 3600}}})");
  EXPECT_THAT(s.Message(), HasSubstr("time: 1000000 is 999000 s ahead of this machine's clock"));
  ASSERT_TRUE(Resync(*e, FrontDoor::kKubernetes, Nodes({"n1"}), {KubePod("p", "qa", "n1")}).ok());
  now_ = 1600;  // 10 minutes of 8 GPUs in qa
  const auto j = nlohmann::json::parse(e->SaveLedger());
  EXPECT_EQ(j["time"].get<int64_t>(), 1600);
  EXPECT_GT(j["usage"]["qa"]["gpus"].get<double>(), 8 * 500.0) << j.dump();
  EXPECT_LT(j["usage"]["qb"]["gpus"].get<double>(), 3600.0) << "decays from now on: " << j.dump();
}

// (7) Values a ledger cannot hold are skipped and named, field by field; the rest of the usage is
// restored. Usage of a queue no longer configured is dropped and said so. Before, a negative
// usage loaded as is (the queue's fair share went below zero and it jumped every queue), a huge
// one made shares infinite, and a removed queue's history vanished without a word.
TEST_F(RestartTest, UsageValuesALedgerCannotHoldAreSkippedAndNamed) {
  auto e = NewEngine("  - name: qc\n    weight: 1\n");
  ASSERT_TRUE(e);
  Status s = e->LoadLedger(
      R"({"time": 1000, "usage": {"qa": {"gpus": -5000, "cpu": 1e300, "memory": 7, "disks": 3}, "qb": {"gpus": 1800},)"
      R"( "gone": {"gpus": 99}, "qc": [1]}})");
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.Message(), HasSubstr("usage.qa.gpus: -5000 is not a usage (>= 0 and finite, at most 1e18); skipped"));
  EXPECT_THAT(s.Message(), HasSubstr("usage.qa.cpu: 1e+300 is not a usage"));
  EXPECT_THAT(s.Message(), HasSubstr("usage.gone: queue not configured; its usage history dropped"));
  EXPECT_THAT(s.Message(), HasSubstr("usage.qc: expected {resource: number}; skipped"));
  EXPECT_THAT(s.Message(), Not(HasSubstr("usage history not restored")));
  const auto j = nlohmann::json::parse(e->SaveLedger());
  EXPECT_EQ(j["usage"]["qa"]["gpus"].get<double>(), 0);
  EXPECT_EQ(j["usage"]["qa"]["memory"].get<double>(), 7);
  EXPECT_EQ(j["usage"]["qb"]["gpus"].get<double>(), 1800) << "the good values are restored";
}

// (9) Replicas (engine/door_lease.h): a replica that stood by no longer knows what the Slurm
// door's work is (the leading replica admits its jobs meanwhile). Its Slurm nodes are gated until
// the door resyncs here again, so when it leads again its pods never go onto GPUs of a Slurm job
// it has not heard of; while it stands by, the door is not reported as awaited (nothing is wrong).
TEST_F(RestartTest, AReplicaThatStoodByGatesTheSlurmDoorsNodesUntilItResyncsThere) {
  auto e = NewEngine();
  ASSERT_TRUE(e);
  ASSERT_TRUE(Resync(*e, FrontDoor::kKubernetes, Nodes({"n1", "n2"}), {KubePod("p", "qb")}).ok());
  ASSERT_TRUE(Resync(*e, FrontDoor::kSlurm, Nodes({"n1", "n2"})).ok());
  e->SetDoorServed(FrontDoor::kSlurm, false);
  EXPECT_TRUE(e->Stats().awaiting_doors.empty());
  EXPECT_EQ(Awaiting(*e, "slurm"), 0);
  // Leading again; meanwhile the other replica admitted Slurm job 7 onto n1.
  e->SetDoorServed(FrontDoor::kSlurm, true);
  EXPECT_THAT(e->Stats().awaiting_doors, ElementsAre("slurm"));
  EXPECT_EQ(Awaiting(*e, "slurm"), 1);
  PlanResult early = e->PlanPod("uid-p");
  EXPECT_FALSE(early.status.ok()) << "planned onto " << early.node << " before the Slurm door resynced here";
  EXPECT_THAT(early.status.Message(), HasSubstr("waiting for the slurm door's first sync since this replica stood by"));
  ASSERT_TRUE(Resync(*e, FrontDoor::kSlurm, Nodes({"n1", "n2"}), {SlurmMember("7", 0, 1, "qa", 8, "n1")}).ok());
  EXPECT_TRUE(e->Stats().awaiting_doors.empty());
  PlanResult p = e->PlanPod("uid-p");
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(p.node, "n2");
}

}  // namespace
}  // namespace tidal
