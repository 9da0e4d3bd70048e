// Engine: what the Kubernetes path must obey before it plans - node selectors, node affinity,
// taints and tolerations, self anti-affinity, nodes refused by kube-scheduler's own filters, nodes
// without topology labels - and fair-share order between queues.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "test/support/engine_objects.h"

namespace tidal {
namespace {

NodeInfo Node8(const std::string& name, const std::string& leaf, const std::string& nvl) {
  return testing::GpuNode(name, leaf, nvl);
}

PodInfo Pod(const std::string& name, int64_t gpus, const std::string& gang = "", int size = 1) {
  PodInfo p = testing::GangPod(name, gang, size, gpus);
  p.creation_unix = 500;
  return p;
}

std::shared_ptr<const NodeConstraints> Constraints(NodeConstraints c) {
  return std::make_shared<const NodeConstraints>(std::move(c));
}

// 2 leaves x 2 NVLink domains x 2 nodes of 8 GPUs: n0..n3 in leaf l0, n4..n7 in l1.
class FeasibilityTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(EngineConfig{}); }
  void Start(EngineConfig cfg) {
    auto e = Engine::Create(std::move(cfg), [this] { return now_; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    SyncBatch b;
    b.resync = true;
    for (int i = 0; i < 8; ++i) {
      b.upsert_nodes.push_back(Node8("n" + std::to_string(i), "l" + std::to_string(i / 4), "v" + std::to_string(i / 2)));
    }
    for (auto& n : b.upsert_nodes) Adjust(n);
    ASSERT_TRUE(Sync(b).ok());
  }
  virtual void Adjust(NodeInfo&) {}
  Status Sync(const SyncBatch& b) {
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  Status Add(std::vector<PodInfo> pods) {
    SyncBatch b;
    b.upsert_pods = std::move(pods);
    return Sync(b);
  }
  // Plans every member of a gang and returns the set of nodes.
  std::set<std::string> PlanAll(const std::vector<std::string>& uids) {
    std::set<std::string> nodes;
    for (const auto& u : uids) {
      PlanResult r = engine_->PlanPod(u);
      EXPECT_TRUE(r.status.ok()) << u << ": " << r.status.ToString();
      nodes.insert(r.node);
    }
    return nodes;
  }
  int64_t now_ = 1000;
  std::unique_ptr<Engine> engine_;
};

// Tainted leaf l1 (n4..n7: dedicated=infer:NoSchedule); n3 carries a label gpu=a100.
class TaintedLeafTest : public FeasibilityTest {
 protected:
  void Adjust(NodeInfo& n) override {
    const int i = std::stoi(n.name.substr(1));
    if (i >= 4) n.taints.push_back(Taint{"dedicated", "infer", TaintEffect::kNoSchedule});
    if (i == 3) n.labels["gpu"] = "a100";
  }
};

TEST_F(TaintedLeafTest, NodeSelectorToOneNodeIsPlannedThere) {
  PodInfo p = Pod("sel", 1);
  NodeConstraints c;
  c.node_selector = {{"gpu", "a100"}};
  p.constraints = Constraints(c);
  ASSERT_TRUE(Add({p}).ok());
  PlanResult r = engine_->PlanPod("uid-sel");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.node, "n3");
}

TEST_F(TaintedLeafTest, NodeSelectorMatchingNoNodeSaysWhy) {
  PodInfo p = Pod("none", 1);
  NodeConstraints c;
  c.node_selector = {{"gpu", "h200"}};
  p.constraints = Constraints(c);
  ASSERT_TRUE(Add({p}).ok());
  PlanResult r = engine_->PlanPod("uid-none");
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.ToString().find("node selector gpu=h200 does not match"), std::string::npos) << r.status.ToString();
}

TEST_F(TaintedLeafTest, LeafGangAvoidsTheTaintedLeafAndATolerantPodMayUseIt) {
  std::vector<PodInfo> gang;
  std::vector<std::string> uids;
  for (int i = 0; i < 4; ++i) {
    gang.push_back(Pod("g" + std::to_string(i), 8, "leafgang", 4));
    gang.back().labels[kLabelTopologyRequired] = "leaf";
    uids.push_back(gang.back().uid);
  }
  ASSERT_TRUE(Add(gang).ok());
  EXPECT_EQ(PlanAll(uids), (std::set<std::string>{"n0", "n1", "n2", "n3"}));
  // l0 is full now: an intolerant pod has nowhere to go, a tolerant one lands in l1.
  PodInfo intolerant = Pod("intolerant", 1), tolerant = Pod("tolerant", 1);
  NodeConstraints tol;
  tol.tolerations.push_back(Toleration{"dedicated", "infer", false, TaintEffect::kNoSchedule});
  tolerant.constraints = Constraints(tol);
  ASSERT_TRUE(Add({intolerant, tolerant}).ok());
  PlanResult bad = engine_->PlanPod("uid-intolerant");
  EXPECT_FALSE(bad.status.ok()) << bad.node << " / " << bad.explanation << " / " << bad.domain;
  EXPECT_NE(bad.status.ToString().find("untolerated taint dedicated=infer:NoSchedule"), std::string::npos)
      << bad.status.ToString();
  PlanResult good = engine_->PlanPod("uid-tolerant");
  ASSERT_TRUE(good.status.ok()) << good.status.ToString();
  EXPECT_GE(std::stoi(good.node.substr(1)), 4);
}

TEST(NodeConstraintsTest, OperatorsAndTolerationsFollowKubeScheduler) {
  Node n;
  n.name = "gpu-7";
  n.labels = {{"zone", "a"}, {"gen", "9"}};
  n.taints = {Taint{"t", "v", TaintEffect::kNoExecute}, Taint{"soft", "", TaintEffect::kPreferNoSchedule}};
  struct Case {
    const char* name;
    SelectorRequirement req;
    bool matches;
  };
  const Case cases[] = {
      {"In", {"zone", SelectorOp::kIn, {"a", "b"}}, true},
      {"InMissing", {"zone", SelectorOp::kIn, {"b"}}, false},
      {"NotInAbsentKey", {"rack", SelectorOp::kNotIn, {"x"}}, true},
      {"Exists", {"gen", SelectorOp::kExists, {}}, true},
      {"DoesNotExist", {"gen", SelectorOp::kDoesNotExist, {}}, false},
      {"Gt", {"gen", SelectorOp::kGt, {"8"}}, true},
      {"LtNotInteger", {"zone", SelectorOp::kLt, {"8"}}, false},
  };
  for (const auto& c : cases) EXPECT_EQ(c.req.Matches(n.labels), c.matches) << c.name;
  SelectorTerm by_name{{}, {{"metadata.name", SelectorOp::kIn, {"gpu-7"}}}};
  EXPECT_TRUE(by_name.Matches(n));
  EXPECT_FALSE(SelectorTerm{}.Matches(n)) << "an empty term matches nothing";

  NodeConstraints none;
  EXPECT_EQ(none.Refusal(n), "untolerated taint t=v:NoExecute");
  NodeConstraints all;
  all.tolerations.push_back(Toleration{"", "", true, std::nullopt});
  EXPECT_EQ(all.Refusal(n), "");
  EXPECT_EQ(all.Preference(n), 0) << "the soft taint is tolerated too";
  EXPECT_EQ(none.Preference(n), -1) << "an untolerated PreferNoSchedule taint only lowers the preference";
  NodeConstraints wrong_effect;
  wrong_effect.tolerations.push_back(Toleration{"t", "v", false, TaintEffect::kNoSchedule});
  EXPECT_NE(wrong_effect.Refusal(n), "");
  EXPECT_EQ(ParseTaintEffect("Bogus"), TaintEffect::kNoSchedule) << "unknown effects are strict";
  EXPECT_FALSE(ParseSelectorOp("Near", "spec.affinity[0].operator").ok());
}

TEST_F(FeasibilityTest, RequiredAffinityAndPreferredAffinityPickTheNode) {
  PodInfo p = Pod("aff", 1);
  NodeConstraints c;
  c.required.push_back(SelectorTerm{{{"topology.tidal.dev/leaf", SelectorOp::kIn, {"l1"}}}, {}});
  c.preferred.push_back(PreferredTerm{50, SelectorTerm{{}, {{"metadata.name", SelectorOp::kIn, {"n6"}}}}});
  p.constraints = Constraints(c);
  ASSERT_TRUE(Add({p}).ok());
  PlanResult r = engine_->PlanPod("uid-aff");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.node, "n6");
}

TEST_F(FeasibilityTest, SelfAntiAffinityPutsOneMemberPerNode) {
  std::vector<PodInfo> gang;
  std::vector<std::string> uids;
  NodeConstraints c;
  c.max_members_per_node = 1;
  for (int i = 0; i < 2; ++i) {
    gang.push_back(Pod("a" + std::to_string(i), 4, "apart", 2));
    gang.back().constraints = Constraints(c);
    uids.push_back(gang.back().uid);
  }
  ASSERT_TRUE(Add(gang).ok());
  EXPECT_EQ(PlanAll(uids).size(), 2u) << "two 4-GPU members would share one node without the cap";
}

TEST_F(FeasibilityTest, ANodeRefusedByKubeSchedulerIsNeverPlannedAgainWhileExcluded) {
  ASSERT_TRUE(Add({Pod("solo", 8)}).ok());
  std::set<std::string> seen;
  for (int i = 0; i < 8; ++i) {
    PlanResult r = engine_->PlanPod("uid-solo");
    ASSERT_TRUE(r.status.ok()) << "attempt " << i << ": " << r.status.ToString();
    EXPECT_TRUE(seen.insert(r.node).second) << r.node << " planned twice";
    ASSERT_TRUE(engine_->NodeRefused("uid-solo", r.node, "NodePorts: node(s) didn't have free ports").ok());
  }
  PlanResult last = engine_->PlanPod("uid-solo");
  EXPECT_FALSE(last.status.ok()) << "every node was refused";
  now_ += EngineConfig{}.exclusion_ttl_s + 1;
  EXPECT_TRUE(engine_->PlanPod("uid-solo").status.ok()) << "exclusions expire";
}

TEST_F(FeasibilityTest, NodesWithoutTopologyLabelsNeverShareARequiredDomain) {
  SyncBatch b;
  for (const char* name : {"bare-a", "bare-b"}) {
    NodeInfo n;
    n.name = name;
    n.capacity = Resources{8, 64000, int64_t{512} << 30};
    n.labels["tidal.dev/pool"] = "kubernetes";
    b.upsert_nodes.push_back(n);
  }
  // Fill every labelled node so only the two bare nodes are free.
  for (int i = 0; i < 8; ++i) {
    PodInfo f = Pod("fill" + std::to_string(i), 8);
    f.scheduler_name = "default-scheduler";
    f.node_name = "n" + std::to_string(i);
    f.phase = PodPhase::kRunning;
    b.upsert_pods.push_back(f);
  }
  std::vector<std::string> uids;
  for (int i = 0; i < 2; ++i) {
    b.upsert_pods.push_back(Pod("nv" + std::to_string(i), 8, "nvpair", 2));
    b.upsert_pods.back().labels[kLabelTopologyRequired] = "nvlink";
    uids.push_back(b.upsert_pods.back().uid);
  }
  uint64_t gen = 0;
  std::vector<NodeWarningInfo> warnings;
  ASSERT_TRUE(engine_->Sync(b, &gen, &warnings).ok());
  ASSERT_EQ(warnings.size(), 2u) << "one warning per unlabeled node";
  EXPECT_EQ(warnings[0].reason, "TidalTopologyLabelMissing");
  EXPECT_NE(warnings[0].message.find("topology level(s) block, leaf, nvlink"), std::string::npos) << warnings[0].message;
  warnings.clear();
  SyncBatch again;
  again.upsert_nodes = b.upsert_nodes;
  ASSERT_TRUE(engine_->Sync(again, &gen, &warnings).ok());
  EXPECT_TRUE(warnings.empty()) << "an unchanged node is not warned about again";
  bool counted = false;
  for (const auto& row : engine_->Gauges().missing_topology) {
    if (row.labels == std::vector<std::string>{"nvlink"}) counted = row.value == 2;
  }
  EXPECT_TRUE(counted) << "tidal_nodes_missing_topology_label{level=nvlink} counts both nodes";
  PlanResult r = engine_->PlanPod(uids[0]);
  EXPECT_FALSE(r.status.ok()) << "placed across two unlabelled nodes in " << r.domain;
  // Without a required level the two bare nodes are fine.
  PodInfo loose0 = Pod("loose0", 8, "loose", 2), loose1 = Pod("loose1", 8, "loose", 2);
  ASSERT_TRUE(Add({loose0, loose1}).ok());
  EXPECT_EQ(PlanAll({"uid-loose0", "uid-loose1"}), (std::set<std::string>{"bare-a", "bare-b"}));
}

// Fair share on the Kubernetes path: queues qa (weight 1) and qb (weight 3).
class FairShareOrderTest : public FeasibilityTest {
 protected:
  void SetUp() override {
    EngineConfig cfg;
    for (auto [name, weight] : {std::pair{"qa", 1.0}, std::pair{"qb", 3.0}}) {
      QueueSpec q;
      q.name = name;
      q.weight = weight;
      q.nominal.assign(cfg.queues.resources.size(), kUnlimited);  // quota never refuses here: only order
      q.borrowing_limit.assign(cfg.queues.resources.size(), kUnlimited);
      q.lending_limit.assign(cfg.queues.resources.size(), kUnlimited);
      cfg.queues.queues.push_back(q);
    }
    Start(cfg);
  }
  PodInfo QueuePod(const std::string& name, const std::string& queue, int64_t created) {
    PodInfo p = Pod(name, 8);
    p.labels[kLabelQueue] = queue;
    p.creation_unix = created;
    return p;
  }
};

TEST_F(FairShareOrderTest, FreedCapacityGoesToTheQueueBelowItsShareWhateverKubeSchedulerTriesFirst) {
  // qa runs on every node; then qa and qb each have a pending 8-GPU pod (qa's is older, so
  // kube-scheduler's PrioritySort tries it first).
  std::vector<PodInfo> run;
  for (int i = 0; i < 8; ++i) {
    PodInfo p = QueuePod("run" + std::to_string(i), "qa", 100);
    p.node_name = "n" + std::to_string(i);
    p.phase = PodPhase::kRunning;
    run.push_back(p);
  }
  ASSERT_TRUE(Add(run).ok());
  ASSERT_TRUE(Add({QueuePod("a-next", "qa", 200), QueuePod("b-next", "qb", 300)}).ok());
  SyncBatch done;
  done.delete_pods = {"uid-run0"};
  ASSERT_TRUE(Sync(done).ok());
  PlanResult a = engine_->PlanPod("uid-a-next");
  EXPECT_FALSE(a.status.ok()) << "qa (8 nodes, weight 1) must not take the freed node from qb (none, weight 3)";
  EXPECT_NE(a.status.ToString().find("fair share: queue qb"), std::string::npos) << a.status.ToString();
  ASSERT_EQ(a.activate.size(), 1u);
  EXPECT_EQ(a.activate[0].name, "b-next");
  PlanResult b = engine_->PlanPod("uid-b-next");
  ASSERT_TRUE(b.status.ok()) << b.status.ToString();
  EXPECT_EQ(b.node, "n0");
}

TEST_F(FairShareOrderTest, AWaveOfFreedNodesSplitsByWeightWhileHeadsAreStillOnTheirWayToBind) {
  // qa runs on all 8 nodes and has 8 more queued (older); qb has 8 queued. All 8 nodes free at
  // once, and kube-scheduler tries only qa's pods: qb's planned pods have not come to claim their
  // plans yet. Weighted fair share (1:3) gives qb 6 of the 8 nodes, qa 2.
  std::vector<PodInfo> pods;
  for (int i = 0; i < 8; ++i) {
    PodInfo p = QueuePod("run" + std::to_string(i), "qa", 100);
    p.node_name = "n" + std::to_string(i);
    p.phase = PodPhase::kRunning;
    pods.push_back(p);
    pods.push_back(QueuePod("a" + std::to_string(i), "qa", 200 + i));
    pods.push_back(QueuePod("b" + std::to_string(i), "qb", 300 + i));
  }
  ASSERT_TRUE(Add(pods).ok());
  SyncBatch done;
  for (int i = 0; i < 8; ++i) done.delete_pods.push_back("uid-run" + std::to_string(i));
  ASSERT_TRUE(Sync(done).ok());
  int qa = 0;
  std::set<std::string> activated;
  for (int i = 0; i < 8; ++i) {
    PlanResult r = engine_->PlanPod("uid-a" + std::to_string(i));
    qa += r.status.ok() ? 1 : 0;
    for (const auto& a : r.activate) activated.insert(a.name);
  }
  EXPECT_EQ(qa, 2) << "qa's pods took the nodes fair share gives qb";
  EXPECT_EQ(activated.size(), 6u);
}

TEST_F(FairShareOrderTest, AReservationOfAQueueOverItsShareYieldsToAQueueBelowIt) {
  // qa runs everywhere (n0, n1 for 10 more minutes, the rest for 10 h) and its 2-node gang waits
  // with a reservation on n0+n1. When n0 frees, a 1 h pod of qb (below its share) may use it; a
  // 1 h pod of qa itself may not (it would delay qa's own reservation).
  std::vector<PodInfo> run;
  for (int i = 0; i < 8; ++i) {
    PodInfo p = QueuePod("run" + std::to_string(i), "qa", 100);
    p.node_name = "n" + std::to_string(i);
    p.phase = PodPhase::kRunning;
    p.annotations[kLabelRuntimeLimit] = i < 2 ? "10m" : "10h";
    run.push_back(p);
  }
  ASSERT_TRUE(Add(run).ok());
  PodInfo g0 = QueuePod("big0", "qa", 150), g1 = QueuePod("big1", "qa", 150);
  for (PodInfo* g : {&g0, &g1}) {
    g->labels[kLabelGang] = "big";
    g->labels[kLabelGangSize] = "2";
  }
  ASSERT_TRUE(Add({g0, g1}).ok());
  PlanResult big = engine_->PlanPod("uid-big0");
  ASSERT_FALSE(big.status.ok());
  const auto rows = engine_->Gauges().reservations;  // every configured queue has a row, at 0 if none
  ASSERT_EQ(std::count_if(rows.begin(), rows.end(), [](const auto& r) { return r.value > 0; }), 1)
      << big.status.ToString();
  SyncBatch done;
  done.delete_pods = {"uid-run0"};
  ASSERT_TRUE(Sync(done).ok());
  PodInfo a = QueuePod("a-1h", "qa", 400), b = QueuePod("b-1h", "qb", 400);
  a.annotations[kLabelRuntimeLimit] = b.annotations[kLabelRuntimeLimit] = "1h";
  ASSERT_TRUE(Add({a}).ok());
  PlanResult ra = engine_->PlanPod("uid-a-1h");
  EXPECT_FALSE(ra.status.ok()) << "qa's own reservation holds n0 against qa: " << ra.node;
  ASSERT_TRUE(Add({b}).ok());
  PlanResult rb = engine_->PlanPod("uid-b-1h");
  ASSERT_TRUE(rb.status.ok()) << rb.status.ToString();
  EXPECT_EQ(rb.node, "n0");
}

TEST_F(FairShareOrderTest, AQueueAheadDoesNotBlockWhenThereIsRoomForBoth) {
  PodInfo running = QueuePod("run", "qa", 100);
  running.node_name = "n7";
  running.phase = PodPhase::kRunning;
  ASSERT_TRUE(Add({running, QueuePod("a-1", "qa", 200), QueuePod("b-1", "qb", 300)}).ok());
  PlanResult a = engine_->PlanPod("uid-a-1");
  EXPECT_TRUE(a.status.ok()) << "work conserving: " << a.status.ToString();
  EXPECT_EQ(a.activate.size(), 1u) << "qb's head was planned first";
}

}  // namespace
}  // namespace tidal

namespace tidal {
namespace {

// A gang of a GPU model no node has (or too few of its nodes) is refused naming
// tidal.dev/gpu-model, in the plan and in explain, and holds no reservation; it was pending with a
// capacity reason, counted against nodes of every model. It starts once Sync brings such nodes.
TEST_F(FeasibilityTest, AGangOfAGpuModelNoNodeHasIsRefusedUntilSuchNodesJoin) {
  std::vector<PodInfo> pods = {Pod("h-a", 8, "h100-pair", 2), Pod("h-b", 8, "h100-pair", 2)};
  for (auto& p : pods) p.labels[kLabelGpuModel] = "h100";
  ASSERT_TRUE(Add(pods).ok());
  const PlanResult r = engine_->PlanPod("uid-h-a");
  EXPECT_EQ(r.status.code(), StatusCode::kUnschedulableAndUnresolvable) << r.status.ToString();
  EXPECT_NE(r.status.Message().find("tidal.dev/gpu-model h100: no node has GPU model h100"), std::string::npos)
      << r.status.ToString();
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/h100-pair", &text).ok());
  EXPECT_NE(text.find("tidal.dev/gpu-model h100: no node has GPU model h100"), std::string::npos) << text;
  auto j = engine_->ExplainJson("team/h100-pair");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_FALSE(j->contains("reservation") && !(*j)["reservation"].is_null()) << j->dump();

  // One h100 node is not enough for two members: still refused, now saying how many it holds.
  SyncBatch one;
  one.upsert_nodes.push_back(Node8("h0", "l2", "v4"));
  one.upsert_nodes.back().gpu_model = "h100";
  ASSERT_TRUE(Sync(one).ok());
  const PlanResult again = engine_->PlanPod("uid-h-a");
  EXPECT_NE(again.status.Message().find("the nodes of GPU model h100 can ever hold at most 1 of 2 members"), std::string::npos)
      << again.status.ToString();

  SyncBatch two;
  two.upsert_nodes.push_back(Node8("h1", "l2", "v4"));
  two.upsert_nodes.back().gpu_model = "h100";
  ASSERT_TRUE(Sync(two).ok());
  EXPECT_EQ(PlanAll({"uid-h-a", "uid-h-b"}), (std::set<std::string>{"h0", "h1"}));
}

}  // namespace
}  // namespace tidal
