// The queue ledger: admission rules, borrowing and lending limits, decay, fair-share order, and
// the config's error messages.
#include <random>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "core/state/queues.h"
#include "plugins/quota/quota.h"

namespace tidal {
namespace {

QueueSpec Q(std::string name, std::string parent, int64_t nominal_gpus, int64_t borrow = kUnlimited,
            int64_t lend = kUnlimited, double weight = 1) {
  QueueSpec q;
  q.name = std::move(name);
  q.parent = std::move(parent);
  q.weight = weight;
  q.nominal = {nominal_gpus, kUnlimited, kUnlimited};
  q.borrowing_limit = {borrow, kUnlimited, kUnlimited};
  q.lending_limit = {lend, kUnlimited, kUnlimited};
  return q;
}

QuotaLedger MakeLedger(std::vector<QueueSpec> qs, int64_t capacity_gpus) {
  QueueConfig cfg;
  cfg.queues = std::move(qs);
  cfg.default_half_life_s = 3600;
  QuotaLedger l(std::move(QueueTree::Build(cfg)).value());
  l.SetCapacity({capacity_gpus, 1000000, int64_t{1} << 50});
  return l;
}

ResVec G(int64_t gpus) { return {gpus, 0, 0}; }

struct AdmitCase {
  std::string name;
  int64_t a_used, b_used, request_into_a;
  bool admitted, borrowing;
  std::string reason;
};

class AdmissionTable : public ::testing::TestWithParam<AdmitCase> {};

TEST_P(AdmissionTable, Decides) {
  const AdmitCase& c = GetParam();
  // org (64) > a (32, borrow <= 16), b (32, lends at most 8)
  QuotaLedger l = MakeLedger({Q("org", "", 64), Q("a", "org", 32, 16), Q("b", "org", 32, kUnlimited, 8)}, 64);
  const int a = l.tree().Find("a"), b = l.tree().Find("b");
  if (c.a_used) {
    ASSERT_TRUE(l.Charge("a-run", a, G(c.a_used), c.a_used > 32).ok());
  }
  if (c.b_used) {
    ASSERT_TRUE(l.Charge("b-run", b, G(c.b_used), c.b_used > 32).ok());
  }
  AdmissionResult r = l.CheckAdmission(a, G(c.request_into_a));
  EXPECT_EQ(r.status.ok(), c.admitted) << r.status.ToString();
  if (c.admitted) {
    EXPECT_EQ(r.borrowing, c.borrowing);
  }
  if (!c.reason.empty()) {
    EXPECT_NE(r.status.Message().find(c.reason), std::string::npos) << r.status.Message();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Quota, AdmissionTable,
    ::testing::Values(
        AdmitCase{"WithinNominal", 0, 0, 32, true, false, ""},
        AdmitCase{"BorrowsFromIdleSibling", 0, 0, 40, true, true, ""},
        AdmitCase{"LendingLimitCapsBorrowing", 0, 0, 41, false, false, "can lend"},
        AdmitCase{"BorrowingLimitHolds", 0, 0, 49, false, false, "borrowing limit 16"},
        AdmitCase{"SiblingBackNoLendable", 0, 32, 33, false, false, "cohort org has 0 gpus lendable"},
        AdmitCase{"SiblingPartlyBackStillLends", 0, 26, 38, true, true, ""},
        AdmitCase{"FullOwnNominal", 32, 32, 1, false, false, "queue a uses 32/32 gpus"}),
    [](const ::testing::TestParamInfo<AdmitCase>& i) { return i.param.name; });

// Bug: a queue within its nominal quota was refused when its parent was over the parent's
// nominal because a sibling borrowed (org 48 > a 32, b 16; b runs 40, a 8; other 16 at the top):
// "queue org would borrow beyond what its cohort cluster can lend". A queue within its nominal is
// always admitted (children's nominals fit in the parent's): the borrowed work is reclaimed.
TEST(QuotaLedger, AQueueWithinItsNominalIsAdmittedWhileASiblingBorrowsItsParentOverNominal) {
  QuotaLedger l = MakeLedger({Q("org", "", 48), Q("a", "org", 32), Q("b", "org", 16), Q("other", "", 16)}, 64);
  const int a = l.tree().Find("a"), b = l.tree().Find("b"), other = l.tree().Find("other");
  ASSERT_TRUE(l.Charge("b-run", b, G(40), true).ok());
  ASSERT_TRUE(l.Charge("a-run", a, G(8), false).ok());
  ASSERT_TRUE(l.Charge("other-run", other, G(16), false).ok());
  AdmissionResult within = l.CheckAdmission(a, G(16));
  EXPECT_TRUE(within.status.ok()) << within.status.ToString();
  EXPECT_FALSE(within.borrowing);
  AdmissionResult past = l.CheckAdmission(a, G(32));
  EXPECT_FALSE(past.status.ok()) << "40 of a's 32 borrows, and nothing is lendable";
  AdmissionResult sibling = l.CheckAdmission(b, G(8));
  EXPECT_FALSE(sibling.status.ok()) << "b is over its nominal already";
}

// Regression: Describe said "uses 48/32 gpus (borrowing limit 16, borrowed 48)", as if the queue
// were over its limit: "borrowed" counted every GPU of work admitted while over nominal.
TEST(QuotaLedger, DescribeSaysHowFarOverNominalApartFromWorkOnBorrowedQuota) {
  QuotaLedger l = MakeLedger({Q("org", "", 64), Q("a", "org", 32, 16), Q("b", "org", 32)}, 64);
  const int a = l.tree().Find("a");
  ASSERT_TRUE(l.Charge("in", a, G(24), false).ok());
  EXPECT_EQ(l.Describe(a).substr(0, l.Describe(a).find(';')), "queue a uses 24/32 gpus (borrowing limit 16)");
  ASSERT_TRUE(l.Charge("over", a, G(24), true).ok());
  const std::string d = l.Describe(a);
  EXPECT_NE(d.find("queue a uses 48/32 gpus (16 over nominal, borrowing limit 16; 24 gpus in work admitted on borrowed "
                   "quota, which reclaim may take); cohort org"),
            std::string::npos)
      << d;
  EXPECT_EQ(d.find("borrowed 24"), std::string::npos) << d;
}

TEST(QuotaLedger, DecayHalvesUsageAfterOneHalfLife) {
  QuotaLedger l = MakeLedger({Q("a", "", 8)}, 8);
  const int a = l.tree().Find("a");
  l.Advance(0);
  ASSERT_TRUE(l.Charge("w", a, G(8), false).ok());
  l.Advance(7200);
  l.Uncharge("w");
  const double before = l.Usage(a)[0];
  EXPECT_GT(before, 0);
  l.Advance(7200 + 3600);
  EXPECT_NEAR(l.Usage(a)[0], before / 2, before * 1e-9);
  l.Advance(7200 + 3 * 3600);
  EXPECT_NEAR(l.Usage(a)[0], before / 8, before * 1e-9);
}

TEST(QuotaLedger, UsageApproachesAllocationTimesMeanLife) {
  // Constant allocation a: usage -> a / k, so k * usage -> a (the decayed average rate).
  QuotaLedger l = MakeLedger({Q("a", "", 8)}, 8);
  const int a = l.tree().Find("a");
  l.Advance(0);
  ASSERT_TRUE(l.Charge("w", a, G(4), false).ok());
  l.Advance(3600 * 40);
  EXPECT_NEAR(l.Usage(a)[0] * std::log(2.0) / 3600, 4.0, 1e-6);
}

// Property: whatever sequence of admitted charges and releases, no queue exceeds nominal +
// borrowing limit, and a queue below its protected share (nominal - lending limit) can get back up
// to it by admission whenever its cohort is not itself borrowing from outside (beyond that,
// reclaim is preemption's job).
TEST(QuotaLedger, PropertyLimitsHoldUnderRandomLoad) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    QuotaLedger l = MakeLedger({Q("org", "", 96), Q("a", "org", 32, 24, 16), Q("b", "org", 32, 8, 32),
                                Q("c", "org", 32, kUnlimited, 4), Q("solo", "", 32, 0)},
                               128);
    const std::vector<int> leaves = {l.tree().Find("a"), l.tree().Find("b"), l.tree().Find("c"), l.tree().Find("solo")};
    std::vector<std::string> live;
    for (int step = 0; step < 300; ++step) {
      if (!live.empty() && rng() % 3 == 0) {
        const size_t i = rng() % live.size();
        l.Uncharge(live[i]);
        live.erase(live.begin() + static_cast<long>(i));
        continue;
      }
      const int q = leaves[rng() % leaves.size()];
      const ResVec r = G(1 + rng() % 12);
      const AdmissionResult ar = l.CheckAdmission(q, r);
      if (!ar.status.ok()) continue;
      const std::string id = "w" + std::to_string(step);
      ASSERT_TRUE(l.Charge(id, q, r, ar.borrowing).ok());
      live.push_back(id);
      for (int x = 1; x < l.tree().size(); ++x) {
        const auto& s = l.tree().Spec(x);
        if (s.borrowing_limit[0] < kUnlimited) {
          ASSERT_LE(l.Allocated(x)[0], s.nominal[0] + s.borrowing_limit[0]) << l.tree().Name(x);
        }
      }
      for (int x : leaves) {
        const auto& s = l.tree().Spec(x);
        if (s.lending_limit[0] >= kUnlimited || s.parent.empty()) continue;
        const int64_t protected_gpus = s.nominal[0] - s.lending_limit[0];
        const int64_t used = l.Allocated(x)[0];
        const int org = l.tree().Parent(x);
        const auto& os = l.tree().Spec(org);
        if (used < protected_gpus && l.Allocated(org)[0] + (protected_gpus - used) <= os.nominal[0]) {
          EXPECT_TRUE(l.CheckAdmission(x, G(protected_gpus - used)).status.ok())
              << l.tree().Name(x) << " cannot get back its protected " << protected_gpus << ": " << l.Describe(x);
        }
      }
    }
  }
}

TEST(QuotaLedger, FairShareOrdersByWeightedDominantShareAtCommonAncestor) {
  QuotaLedger l = MakeLedger({Q("org", "", 64), Q("a", "org", 32, kUnlimited, kUnlimited, 1),
                              Q("b", "org", 32, kUnlimited, kUnlimited, 3), Q("other", "", 0)},
                             64);
  const int a = l.tree().Find("a"), b = l.tree().Find("b"), other = l.tree().Find("other");
  ASSERT_TRUE(l.Charge("x", a, G(8), false).ok());
  ASSERT_TRUE(l.Charge("y", b, G(12), false).ok());
  const std::vector<int32_t> rank = l.FairShareRanks();
  auto R = [&](int q) { return rank[static_cast<size_t>(q)]; };
  // a: 8/64/1 = 0.125 (x0.5) vs b: 12/64/3 = 0.0625 (x0.5): b first.
  EXPECT_LT(R(b), R(a));
  // other (nothing used) vs org subtree: other first.
  EXPECT_LT(R(other), R(b));
  // The inner queue and the root rank after every leaf.
  EXPECT_GT(R(l.tree().Find("org")), R(a));
  EXPECT_EQ(R(0), R(l.tree().Find("org")));
}

TEST(QuotaLedger, OverNominalIsWhatTheQueueUsesAboveItsNominal) {
  QuotaLedger l = MakeLedger({Q("a", "", 8), Q("b", "", 8)}, 32);
  const int a = l.tree().Find("a"), b = l.tree().Find("b");
  ASSERT_TRUE(l.Charge("x", a, G(12), true).ok());
  ASSERT_TRUE(l.Charge("y", b, G(8), false).ok());
  EXPECT_EQ(l.OverNominal(a), (ResVec{4, 0, 0})) << "cpu and memory have no nominal: never over";
  EXPECT_EQ(l.OverNominal(b), (ResVec{0, 0, 0})) << "exactly at nominal is not over";
  l.Uncharge("x");
  EXPECT_EQ(l.OverNominal(a), (ResVec{0, 0, 0}));
}

TEST(QuotaLedger, StateFileRoundTripsUsageByQueueName) {
  QuotaLedger l = MakeLedger({Q("a", "", 8), Q("b", "", 8)}, 16);
  l.Advance(100);
  ASSERT_TRUE(l.Charge("w", l.tree().Find("a"), G(8), false).ok());
  l.Advance(1100);
  const std::string saved = l.SaveState();
  QuotaLedger m = MakeLedger({Q("b", "", 8), Q("a", "", 8)}, 16);
  ASSERT_TRUE(m.LoadState(saved).ok());
  EXPECT_DOUBLE_EQ(m.Usage(m.tree().Find("a"))[0], l.Usage(l.tree().Find("a"))[0]);
  EXPECT_EQ(m.now(), 1100);
  EXPECT_FALSE(m.LoadState("{not json").ok());
  EXPECT_FALSE(m.LoadState("{\"usage\": {}}").ok());
}

TEST(QuotaLedger, ReconfigureKeepsChargesAndUsageByName) {
  QuotaLedger l = MakeLedger({Q("a", "", 8), Q("b", "", 8)}, 16);
  l.Advance(0);
  ASSERT_TRUE(l.Charge("w", l.tree().Find("a"), G(6), false).ok());
  l.Advance(500);
  const double usage = l.Usage(l.tree().Find("a"))[0];
  QueueConfig cfg;
  cfg.default_half_life_s = 3600;
  cfg.queues = {Q("z", "", 4), Q("a", "", 10)};
  l.Reconfigure(std::move(QueueTree::Build(cfg)).value());
  EXPECT_EQ(l.Allocated(l.tree().Find("a"))[0], 6);
  EXPECT_DOUBLE_EQ(l.Usage(l.tree().Find("a"))[0], usage);
  EXPECT_EQ(l.tree().Find("b"), -1);
  l.Uncharge("w");
  EXPECT_EQ(l.Allocated(l.tree().Find("a"))[0], 0);
}

// A rename with formerNames keeps what a plain rename drops: the old name's usage history and the
// charges of its running work move to the new name, and work that still names the old queue is the
// new one's. Without it (the last lines) the charge and history are gone: running work uncharged.
TEST(QuotaLedger, ARenameWithFormerNamesCarriesChargesAndUsageOver) {
  auto renamed = [](QuotaLedger& l, std::vector<std::string> former) {
    QueueConfig cfg;
    cfg.default_half_life_s = 3600;
    QueueSpec q = Q("team-llm", "", 10);
    q.former_names = std::move(former);
    cfg.queues = {Q("b", "", 8), q};
    l.Reconfigure(std::move(QueueTree::Build(cfg)).value());
  };
  auto running = [] {
    QuotaLedger l = MakeLedger({Q("llm", "", 8), Q("b", "", 8)}, 16);
    l.Advance(0);
    EXPECT_TRUE(l.Charge("w", l.tree().Find("llm"), G(6), false).ok());
    l.Advance(500);
    return l;
  };
  QuotaLedger l = running();
  const double usage = l.Usage(l.tree().Find("llm"))[0];
  ASSERT_GT(usage, 0);
  renamed(l, {"llm"});
  const int q = l.tree().Find("team-llm");
  EXPECT_EQ(l.tree().Find("llm"), q) << "the former name finds the renamed queue";
  EXPECT_EQ(l.tree().Name(l.tree().Find("llm")), "team-llm");
  EXPECT_EQ(l.Allocated(q)[0], 6);
  EXPECT_DOUBLE_EQ(l.Usage(q)[0], usage);
  l.Uncharge("w");
  EXPECT_EQ(l.Allocated(q)[0], 0);

  QuotaLedger plain = running();
  renamed(plain, {});
  EXPECT_EQ(plain.tree().Find("llm"), -1);
  EXPECT_EQ(plain.Allocated(plain.tree().Find("team-llm"))[0], 0) << "a plain rename drops the charge";
  EXPECT_DOUBLE_EQ(plain.Usage(plain.tree().Find("team-llm"))[0], 0);
}

TEST(QuotaLedger, AFormerNameIsReadFromConfigAndFromTheStateFile) {
  auto cfg = ParseEngineConfig("queues:\n  - name: team-llm\n    formerNames: [llm, llm-old]\n  - name: b\n", "t.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  QuotaLedger old = MakeLedger({Q("llm", "", 8)}, 16);
  old.Advance(0);
  ASSERT_TRUE(old.Charge("w", old.tree().Find("llm"), G(8), false).ok());
  old.Advance(1000);
  auto tree = QueueTree::Build(cfg->queues);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  QuotaLedger next(*tree);
  ASSERT_TRUE(next.LoadState(old.SaveState()).ok());
  EXPECT_DOUBLE_EQ(next.Usage(next.tree().Find("team-llm"))[0], old.Usage(old.tree().Find("llm"))[0])
      << "history saved under the old name belongs to the renamed queue after a restart";
  EXPECT_EQ(next.tree().Find("llm-old"), next.tree().Find("team-llm"));
}

struct BadConfigCase {
  std::string name, yaml, message;
};

class BadConfigTable : public ::testing::TestWithParam<BadConfigCase> {};

TEST_P(BadConfigTable, ReportsFileLineFieldReason) {
  auto cfg = ParseEngineConfig(GetParam().yaml, "tidal.yaml");
  ASSERT_FALSE(cfg.ok());
  bool found = false;
  std::string all;
  for (const auto& r : cfg.status().reasons()) {
    found = found || r == GetParam().message;
    all += r + "\n";
  }
  EXPECT_TRUE(found) << "want: " << GetParam().message << "\ngot:\n" << all;
}

INSTANTIATE_TEST_SUITE_P(
    Config, BadConfigTable,
    ::testing::Values(
        BadConfigCase{"UnknownParent", "queues:\n  - name: a\n    parent: ghost\n",
                      "tidal.yaml:3: queues[0].parent: unknown parent \"ghost\""},
        BadConfigCase{"Cycle", "queues:\n  - name: x\n    parent: y\n  - name: y\n    parent: x\n",
                      "tidal.yaml:3: queues[0].parent: cycle: x -> y -> x"},
        BadConfigCase{"ChildrenAboveParent",
                      "queues:\n  - name: org\n    nominal: {gpus: 10}\n  - name: a\n    parent: org\n    nominal: {gpus: 8}\n"
                      "  - name: b\n    parent: org\n    nominal: {gpus: 4}\n",
                      "tidal.yaml:3: queues[0].nominal.gpus: children (a, b) have 12 in total, above this queue's 10"},
        BadConfigCase{"Negative", "queues:\n  - name: a\n    nominal: {gpus: -1}\n",
                      "tidal.yaml:3: queues[0].nominal.gpus: must not be negative, got -1"},
        BadConfigCase{"UnknownResource", "queues:\n  - name: a\n    nominal: {tpus: 4}\n",
                      "tidal.yaml:3: queues[0].nominal.tpus: unknown resource (accepted: gpus, cpu, memory)"},
        BadConfigCase{"UnknownModel", "resources: {gpuModels: [h100]}\nqueues:\n  - name: a\n    nominal: {gpus.a100: 4}\n",
                      "tidal.yaml:4: queues[0].nominal.gpus.a100: unknown resource (accepted: gpus, cpu, memory, gpus.h100)"},
        BadConfigCase{"ModelTwice", "resources: {gpuModels: [h100, a100, h100]}\n",
                      "tidal.yaml:1: resources.gpuModels[2]: \"h100\" is listed already (resources.gpuModels[0])"},
        BadConfigCase{"ModelNoLabelCarries", "resources: {gpuModels: [\"A100 80GB\"]}\n",
                      "tidal.yaml:1: resources.gpuModels[0]: \"A100 80GB\" is no GPU model a node label could carry "
                      "(nvidia.com/gpu.product: at most 63 characters, letters, digits, '-', '_' and '.', beginning and "
                      "ending with a letter or digit)"},
        BadConfigCase{"Weight", "queues:\n  - name: a\n    weight: 0\n", "tidal.yaml:3: queues[0].weight: must be a finite number > 0"},
        BadConfigCase{"WeightInfinite", "queues:\n  - name: a\n    weight: 1e400\n", "tidal.yaml:3: queues[0].weight: must be a finite number > 0"},
        BadConfigCase{"UnknownTopField", "queus: []\n", "tidal.yaml:1: queus: unknown field"},
        BadConfigCase{"NegativeGrace", "runtimeLimit: {graceSeconds: -5}\n", "tidal.yaml:1: runtimeLimit.graceSeconds: must be 0..604800, got -5"},
        BadConfigCase{"FormerNameIsAQueue", "queues:\n  - name: a\n    formerNames: [b]\n  - name: b\n",
                      "tidal.yaml:3: queues[0].formerNames[0]: \"b\" is the name of queues[1]"},
        BadConfigCase{"FormerNameTwice", "queues:\n  - name: a\n    formerNames: [old]\n  - name: b\n    formerNames: [old]\n",
                      "tidal.yaml:5: queues[1].formerNames[0]: \"old\" is listed already (queues[0].formerNames[0])"},
        BadConfigCase{"FormerNameInvalid", "queues:\n  - name: a\n    formerNames: [Old_Team]\n",
                      "tidal.yaml:3: queues[0].formerNames[0]: must be 1-63 characters of [a-z0-9-], starting and ending alphanumeric"},
        BadConfigCase{"FormerNamesNotAList", "queues:\n  - name: a\n    formerNames: old\n",
                      "tidal.yaml:3: queues[0].formerNames: must be a list of queue names"},
        BadConfigCase{"EnforceNotBool", "runtimeLimit:\n  enforce: sometimes\n", "tidal.yaml:2: runtimeLimit.enforce: must be true or false"}),
    [](const ::testing::TestParamInfo<BadConfigCase>& i) { return i.param.name; });

TEST(Config, ReportsEveryProblemNotJustTheFirst) {
  auto cfg = ParseEngineConfig("queues:\n  - name: a\n    parent: ghost\n  - name: b\n    nominal: {gpus: -3}\n", "t.yaml");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().reasons().size(), 2u);
}

}  // namespace
}  // namespace tidal

namespace tidal {
namespace {

TEST(QuotaPlugin, RefusalsAreMemoizedOnlyWhileTheLedgerIsUnchanged) {
  QuotaLedger l = MakeLedger({Q("a", "", 8, 0)}, 64);  // nominal 8 GPUs, no borrowing
  plugins::Quota quota(&l);
  Workload w;
  w.id = "w";
  w.queue = "a";
  w.per_member.gpus = 8;
  ASSERT_TRUE(l.Charge("x", l.tree().Find("a"), G(8), false).ok());
  CycleState c1, c2, c3;
  const Status first = quota.Admit(c1, w);
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.Message().find("queue a"), std::string::npos) << first.ToString();
  EXPECT_EQ(quota.Admit(c2, w).ToString(), first.ToString());
  const uint64_t v = l.version();
  l.Uncharge("x");
  EXPECT_NE(l.version(), v);
  EXPECT_TRUE(quota.Admit(c3, w).ok()) << "the refusal must not outlive the charge that caused it";
}

TEST(QuotaPlugin, AdmissionsAndMemberCapsAreMemoizedOnlyWhileTheLedgerIsUnchanged) {
  QuotaLedger l = MakeLedger({Q("a", "", 16, 0)}, 64);  // nominal 16 GPUs, no borrowing
  plugins::Quota quota(&l);
  Workload w;
  w.id = "w";
  w.queue = "a";
  w.per_member.gpus = 4;
  w.members = 4;
  w.min_members = 1;
  const TopologyLevels levels = TopologyLevels::Default();
  auto admit_and_cap = [&]() -> std::pair<bool, int32_t> {
    CycleState cs;
    if (!quota.Admit(cs, w).ok()) return {false, 0};
    PlacementConstraints c;
    c.members = w.members;
    EXPECT_TRUE(quota.PreFilter(cs, w, levels, c).ok());
    return {true, c.members};
  };
  EXPECT_EQ(admit_and_cap(), std::make_pair(true, 4));
  EXPECT_EQ(admit_and_cap(), std::make_pair(true, 4));  // answered from the memo
  ASSERT_TRUE(l.Charge("x", l.tree().Find("a"), G(8), false).ok());
  EXPECT_EQ(admit_and_cap(), std::make_pair(true, 2)) << "the cap must follow the charge";
  ASSERT_TRUE(l.Charge("y", l.tree().Find("a"), G(8), false).ok());
  EXPECT_FALSE(admit_and_cap().first) << "an admission must not outlive the room it found";
  l.Uncharge("y");
  EXPECT_EQ(admit_and_cap(), std::make_pair(true, 2));
}

TEST(QueueTree, RequestChargesTheGpuModelResourceByExactName) {
  QueueConfig cfg;
  cfg.resources = {"gpus", "cpu", "memory", "gpus.A100", "gpus.H100"};
  QueueSpec q;
  q.name = "a";
  q.nominal = {8, kUnlimited, kUnlimited, 8, 8};
  q.borrowing_limit = {0, kUnlimited, kUnlimited, 0, 0};
  q.lending_limit = {kUnlimited, kUnlimited, kUnlimited, kUnlimited, kUnlimited};
  cfg.queues = {q};
  auto tree = QueueTree::Build(cfg);
  ASSERT_TRUE(tree.ok()) << tree.status().Message();
  const Resources total{4, 1000, 1 << 20};
  EXPECT_EQ((*tree)->Request(total, "H100"), (ResVec{4, 1000, 1 << 20, 0, 4}));
  EXPECT_EQ((*tree)->Request(total, "A100"), (ResVec{4, 1000, 1 << 20, 4, 0}));
  EXPECT_EQ((*tree)->Request(total, "A10"), (ResVec{4, 1000, 1 << 20, 0, 0})) << "a prefix of a model is another model";
  EXPECT_EQ((*tree)->Request(total, "A1000"), (ResVec{4, 1000, 1 << 20, 0, 0}));
  EXPECT_EQ((*tree)->Request(total, ""), (ResVec{4, 1000, 1 << 20, 0, 0}));
}

}  // namespace
}  // namespace tidal
