// The one disruption path (engine/engine_disruptions.cc, engine/disruption_book.h): preemption
// victims that checkpoint on notice are told first and evicted after they report a checkpoint or
// at the deadline; plain victims go at once; runtime limits take the whole gang; a dropped hold
// cancels its notice; the metrics count evictions done, by cause.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include "core/api/duration.h"
#include "engine/engine.h"
#include "engine/observability.h"

#include <set>

#include <gtest/gtest.h>

#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;

class DisruptionTest : public testing::EngineFixture {
 protected:
  // A running preemptible 4-pod gang on nodes first..first+3, started at `start`; `notice`
  // ("" = none) is its tidal.dev/checkpoint-on-notice.
  std::vector<PodInfo> RunningGang(const std::string& gang, int first, int64_t start, const std::string& notice = "") {
    std::vector<PodInfo> pods;
    for (int i = 0; i < 4; ++i) {
      PodInfo p = GangPod(gang + std::to_string(i), gang, 4);
      p.labels[kLabelPreemptible] = "true";
      if (!notice.empty()) p.annotations[kLabelCheckpointOnNotice] = notice;
      p.priority = 1;
      p.node_name = "n" + std::to_string(first + i);
      p.phase = PodPhase::kRunning;
      p.start_unix = start;
      pods.push_back(p);
    }
    return pods;
  }
  // Leaf l1 (n4-n7) runs a gang no one may preempt: a preemptor of a leaf must take leaf l0's.
  void FillSecondLeaf() {
    std::vector<PodInfo> keep = RunningGang("keep", 4, 1000);
    for (auto& p : keep) p.labels.erase(kLabelPreemptible);
    ASSERT_TRUE(Add(keep).ok());
  }
  void AddPending(const std::string& gang, int size, int32_t priority) {
    std::vector<PodInfo> pods;
    for (int i = 0; i < size; ++i) {
      PodInfo p = GangPod(gang + std::to_string(i), gang, size);
      p.priority = priority;
      p.labels[kLabelTopologyRequired] = "leaf";
      p.creation_unix = now_ - 10;
      pods.push_back(p);
    }
    ASSERT_TRUE(Add(pods).ok());
  }
  double Disrupted(const std::string& cause) { return metrics_.disruptions.With({cause}).Value(); }
  uint64_t NoticeCount(const std::string& cause) {
    return metrics_.disruption_notice.With({cause}).Collect().histogram.sample_count;
  }
  size_t CensusOf(const std::string& what) {
    for (const auto& [k, v] : engine_->Census()) {
      if (k == what) return v;
    }
    return SIZE_MAX;
  }
};

TEST(CheckpointTime, ReadsRfc3339AndUnixSecondsAndNamesTheKeyOtherwise) {
  EXPECT_EQ(*ParseCheckpointTime("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*ParseCheckpointTime("2026-12-02T10:00:00Z"), 1796205600);
  EXPECT_EQ(*ParseCheckpointTime("2026-12-02T12:00:00+02:00"), 1796205600);
  EXPECT_EQ(*ParseCheckpointTime("2026-12-02T10:00:00.123456Z"), 1796205600);
  EXPECT_EQ(*ParseCheckpointTime("2000-02-29T00:00:00Z"), 951782400);
  EXPECT_EQ(*ParseCheckpointTime("1796205600"), 1796205600);
  for (const char* bad : {"", "yesterday", "2026-12-02", "2026-12-02T10:00:00", "2026-13-02T10:00:00Z",
                          "2026-12-02T10:00:00Zjunk", "-5", "99999999999999999999", "2026-12-02T10:00:00+2:00"}) {
    auto t = ParseCheckpointTime(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().ToString().find(kLabelLastCheckpoint), std::string::npos) << t.status().ToString();
  }
}

// Impossible dates and a sign or a space inside a field are refused (were read: Feb 31 as Mar 3,
// "+1" and " 2" by sscanf's %2d).
TEST(CheckpointTime, RefusesImpossibleDatesAndSignsInsideFields) {
  EXPECT_EQ(*ParseCheckpointTime("2024-02-29T00:00:00Z"), 1709164800) << "a leap day";
  EXPECT_EQ(*ParseCheckpointTime("2026-01-31T23:59:59Z"), 1769903999);
  for (const char* bad : {"2026-02-31T00:00:00Z", "2026-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
                          "2026-+1-05T00:00:00Z", "2026-12- 2T10:00:00Z", "2026-12-02T+1:00:00Z",
                          "2026-12-02T10:00:00+-1:00", "+026-12-02T10:00:00Z"}) {
    auto t = ParseCheckpointTime(bad);
    EXPECT_FALSE(t.ok()) << bad << " read as " << (t.ok() ? FormatUnixTime(*t) : "");
  }
}

// A last-checkpoint stamp from the future (local time written with a Z, a wrong clock) never ends
// a notice: before, any stamp at or after the opening acknowledged it, so a job re-sent (a resync,
// a restart) with such a stamp was evicted at once before it saved anything. Within the clock-skew
// allowance (kCheckpointSkewS) a stamp still counts.
TEST_F(DisruptionTest, AStampFromTheFutureDoesNotEndTheNotice) {
  std::vector<PodInfo> low = RunningGang("ckpt", 0, 1000, "60s");
  ASSERT_TRUE(Add(low).ok());
  FillSecondLeaf();
  AddPending("high", 4, 100);
  ASSERT_TRUE(engine_->Preempt("uid-high0").status.ok());
  now_ += 5;
  low[1].annotations[kLabelLastCheckpoint] = FormatUnixTime(now_ + 2 * 3600);  // local time UTC+2 as Z
  ASSERT_TRUE(Add({low[1]}).ok());
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kNotice) << "a stamp two hours ahead is ignored";
  low[1].annotations[kLabelLastCheckpoint] = std::to_string(now_ + kCheckpointSkewS);  // a host clock 5 min fast
  ASSERT_TRUE(Add({low[1]}).ok());
  a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kEvict) << "within the skew allowance it acknowledges";
}

TEST(DisruptionBookTest, AStampBeyondTheSkewIsIgnored) {
  DisruptionBook book;
  DisruptionRecord r;
  r.id = "team/g";
  r.pods = {{"u1", "team", "g-0"}};
  r.opened_s = 1000;
  r.notice_s = 60;
  r.at_risk_since_s = 500;
  ASSERT_TRUE(book.Open(r));
  EXPECT_FALSE(book.Checkpointed("u1", 1010 + kCheckpointSkewS + 1, 1010));
  EXPECT_FALSE(book.Find("team/g")->acknowledged);
  EXPECT_EQ(book.Find("team/g")->at_risk_since_s, 500) << "the work at risk does not move either";
  EXPECT_TRUE(book.Checkpointed("u1", 1005, 1010));
  EXPECT_TRUE(book.Find("team/g")->acknowledged);
}

TEST_F(DisruptionTest, AVictimThatCheckpointsOnNoticeIsToldFirstAndEvictedAfterItsCheckpoint) {
  std::vector<PodInfo> low = RunningGang("ckpt", 0, 1000, "60s");
  ASSERT_TRUE(Add(low).ok());
  FillSecondLeaf();
  AddPending("high", 4, 100);
  PreemptResult r = engine_->Preempt("uid-high0");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.victim_gangs.size(), 1u);
  ASSERT_EQ(r.victim_notice.size(), 1u);
  EXPECT_EQ(r.victim_notice[0].first, 60) << "notice instead of an eviction now";
  EXPECT_EQ(r.victim_notice[0].second, now_ + 60);

  now_ += 5;
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].id, "team/ckpt");
  EXPECT_EQ(a[0].cause, "preemption");
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kNotice) << "not evicted before it checkpoints";
  EXPECT_EQ(a[0].deadline_unix, 10060);
  EXPECT_EQ(a[0].pods.size(), 4u);
  // The preemptor waits for it instead of choosing other victims.
  PreemptResult again = engine_->Preempt("uid-high0");
  EXPECT_FALSE(again.status.ok());
  EXPECT_NE(again.status.ToString().find("notice"), std::string::npos) << again.status.ToString();

  // One member reports a checkpoint taken after the notice: the gang goes now.
  now_ += 10;
  low[2].annotations[kLabelLastCheckpoint] = std::to_string(now_ - 1);
  ASSERT_TRUE(Add({low[2]}).ok());
  a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kEvict);
  EXPECT_EQ(Disrupted("preemption"), 0) << "counted when its pods are gone, not when asked";
  ASSERT_TRUE(Delete({"uid-ckpt0", "uid-ckpt1", "uid-ckpt2", "uid-ckpt3"}).ok());
  EXPECT_EQ(Disrupted("preemption"), 1);
  EXPECT_EQ(NoticeCount("preemption"), 1u);
  EXPECT_DOUBLE_EQ(metrics_.disruption_lost_gpu_seconds.With({"preemption"}).Value(), 32.0)
      << "32 GPUs x the 1 s since its checkpoint, not the 9015 s since its start";
  EXPECT_EQ(metrics_.gangs_requeued_whole.With({"preemption"}).Value(), 1);
  EXPECT_TRUE(Poll().empty());
  EXPECT_EQ(CensusOf("disruptions"), 0u);
  EXPECT_EQ(CensusOf("disruption_pods"), 0u);
}

TEST_F(DisruptionTest, WithoutACheckpointTheNoticeEndsAtItsDeadline) {
  ASSERT_TRUE(Add(RunningGang("ckpt", 0, 1000, "30s")).ok());
  FillSecondLeaf();
  AddPending("high", 4, 100);
  ASSERT_TRUE(engine_->Preempt("uid-high0").status.ok());
  now_ += 29;
  ASSERT_EQ(Poll().at(0).kind, DisruptionAction::Kind::kNotice);
  now_ += 1;
  ASSERT_EQ(Poll().at(0).kind, DisruptionAction::Kind::kEvict);
}

TEST_F(DisruptionTest, ANoticeIsCappedByMaxNoticeSeconds) {
  EngineConfig cfg;
  cfg.max_notice_s = 20;
  Make(cfg);
  ASSERT_TRUE(Add(RunningGang("ckpt", 0, 1000, "1h")).ok());
  FillSecondLeaf();
  AddPending("high", 4, 100);
  PreemptResult r = engine_->Preempt("uid-high0");
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.victim_notice.at(0).first, 20);
}

TEST_F(DisruptionTest, APlainVictimIsEvictedAtOnceAndCountedOnce) {
  ASSERT_TRUE(Add(RunningGang("plain", 0, 1000)).ok());
  FillSecondLeaf();
  AddPending("high", 4, 100);
  PreemptResult r = engine_->Preempt("uid-high0");
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.victim_notice.at(0).first, 0) << "PostFilter evicts it now";
  // Bug: the preemption view counted one member more than a gang's pods (Workload's default of 1
  // plus one per pod), so work lost (and reclaim budgets) were a member too high.
  EXPECT_DOUBLE_EQ(r.lost_gpu_seconds, 32.0 * 9000);
  EvictionReport rep;
  rep.preemptor_uid = "uid-high0";
  rep.evicted = r.victims;
  rep.reason = r.reason;
  ASSERT_TRUE(engine_->Evicted(rep).ok());
  ASSERT_EQ(Poll().at(0).kind, DisruptionAction::Kind::kEvict) << "repeated until its pods are gone";
  ASSERT_TRUE(Delete({"uid-plain0", "uid-plain1", "uid-plain2", "uid-plain3"}).ok());
  EXPECT_EQ(Disrupted("preemption"), 1);
  EXPECT_EQ(metrics_.preemptions.With({"priority"}).Value(), 1) << "the preemption counter still counts it too";
  EXPECT_EQ(NoticeCount("preemption"), 1u);
  EXPECT_DOUBLE_EQ(metrics_.disruption_lost_gpu_seconds.With({"preemption"}).Value(), 32.0 * 9000)
      << "everything since its start: it never checkpointed";
}

TEST_F(DisruptionTest, AnElasticGangGivesBackItsNewestSurplusMembersInsteadOfDyingWhole) {
  std::vector<PodInfo> el = RunningGang("el", 0, 1000);
  for (size_t i = 0; i < el.size(); ++i) {
    el[i].labels[kLabelGangMin] = "2";
    el[i].start_unix = 1000 + static_cast<int64_t>(i) * 100;  // el3 started last
  }
  ASSERT_TRUE(Add(el).ok());
  FillSecondLeaf();
  AddPending("high", 2, 100);
  PreemptResult r = engine_->Preempt("uid-high0");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.victim_gangs.size(), 1u);
  EXPECT_EQ(r.victim_gangs[0].first, "team/el");
  std::set<std::string> names;
  for (const auto& p : r.victim_gangs[0].second) names.insert(p.name);
  EXPECT_EQ(names, (std::set<std::string>{"el2", "el3"})) << "two surplus members, the newest, not the whole gang";
  EXPECT_GT(r.lost_gpu_seconds, 0) << "the members given back lose their share of the work at risk";
  ASSERT_TRUE(Delete({"uid-el2", "uid-el3"}).ok());
  EXPECT_EQ(Disrupted("preemption"), 0) << "never evicted: the pods went by themselves";
  // The shim evicts them (the poll asks) and they go: one disruption, no gang requeued whole.
}

TEST_F(DisruptionTest, AShrinkIsCountedAsADisruptionButNotAWholeGang) {
  std::vector<PodInfo> el = RunningGang("el", 0, 1000);
  for (auto& p : el) p.labels[kLabelGangMin] = "2";
  ASSERT_TRUE(Add(el).ok());
  FillSecondLeaf();
  AddPending("high", 2, 100);
  PreemptResult r = engine_->Preempt("uid-high0");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.victims.size(), 2u);
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].pods.size(), 2u);
  std::vector<std::string> uids;
  for (const auto& p : r.victims) uids.push_back(p.uid);
  ASSERT_TRUE(Delete(uids).ok());
  EXPECT_EQ(Disrupted("preemption"), 1);
  EXPECT_EQ(metrics_.gangs_requeued_whole.With({"preemption"}).Value(), 0) << "two of four members stay running";
  // The preemptor now fits where the surplus was.
  EXPECT_TRUE(engine_->PlanPod("uid-high0").status.ok());
}

TEST_F(DisruptionTest, VictimChoicePrefersTheGangThatCheckpointsOnNotice) {
  // ckpt has run longest (the most work at risk without notice), plain least: notice wins.
  std::vector<PodInfo> pods = RunningGang("ckpt", 0, 1000, "60s");
  for (auto& p : RunningGang("plain", 4, 9000)) pods.push_back(p);
  ASSERT_TRUE(Add(pods).ok());
  AddPending("high", 4, 100);
  PreemptResult r = engine_->Preempt("uid-high0");
  ASSERT_TRUE(r.status.ok());
  ASSERT_EQ(r.victim_gangs.size(), 1u);
  EXPECT_EQ(r.victim_gangs[0].first, "team/ckpt");
}

TEST_F(DisruptionTest, ADroppedHoldCancelsItsNoticeAndTheVictimKeepsRunning) {
  ASSERT_TRUE(Add(RunningGang("ckpt", 0, 1000, "60s")).ok());
  FillSecondLeaf();
  AddPending("high", 4, 100);
  ASSERT_TRUE(engine_->Preempt("uid-high0").status.ok());
  ASSERT_EQ(Poll().size(), 1u);
  ASSERT_TRUE(Delete({"uid-high0", "uid-high1", "uid-high2", "uid-high3"}).ok());  // the preemptor went away
  EXPECT_TRUE(Poll().empty()) << "nothing left to make room for";
  EXPECT_EQ(CensusOf("disruptions"), 0u);
  EXPECT_EQ(Disrupted("preemption"), 0);
}

// Bug: once the poll had answered EVICT, a PDB refusal could not call the preemption off (the
// record counted as evicted), so the shim retried the eviction every poll after its hold was gone.
TEST_F(DisruptionTest, APdbRefusalAfterTheNoticeCallsThePreemptionOff) {
  ASSERT_TRUE(Add(RunningGang("ckpt", 0, 1000, "30s")).ok());
  FillSecondLeaf();
  AddPending("high", 4, 100);
  ASSERT_TRUE(engine_->Preempt("uid-high0").status.ok());
  now_ += 30;
  ASSERT_EQ(Poll().at(0).kind, DisruptionAction::Kind::kEvict);
  EvictionReport rep;
  rep.protected_gangs = {"team/ckpt"};
  rep.disruption = "team/ckpt";
  ASSERT_TRUE(engine_->Evicted(rep).ok());
  EXPECT_TRUE(Poll().empty()) << "the victim keeps running; the preemptor chooses again";
  EXPECT_EQ(CensusOf("disruptions"), 0u);
  EXPECT_EQ(CensusOf("preempt_holds"), 0u);
}

TEST_F(DisruptionTest, ARuntimeLimitTakesTheWholeGang) {
  EngineConfig cfg;
  cfg.runtime_limit_grace_s = 10;
  Make(cfg);
  std::vector<PodInfo> pods = RunningGang("job", 0, 1000);
  for (auto& p : pods) p.annotations[kLabelRuntimeLimit] = "1h";
  pods[3].start_unix = 2000;  // a member started later: not over its limit yet
  ASSERT_TRUE(Add(pods).ok());
  now_ = 1000 + 3600 + 11;
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].cause, "runtime-limit");
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kEvict);
  EXPECT_EQ(a[0].pods.size(), 4u) << "one overdue member takes the gang whole";
  ASSERT_TRUE(Delete({"uid-job0", "uid-job1", "uid-job2", "uid-job3"}).ok());
  EXPECT_EQ(Disrupted("runtime-limit"), 1);
  EXPECT_EQ(metrics_.gangs_requeued_whole.With({"runtime-limit"}).Value(), 1);
}

TEST_F(DisruptionTest, AnUnreadableLastCheckpointIsIgnoredNotAnError) {
  std::vector<PodInfo> low = RunningGang("ckpt", 0, 1000, "60s");
  ASSERT_TRUE(Add(low).ok());
  FillSecondLeaf();
  low[0].annotations[kLabelLastCheckpoint] = "soon";
  ASSERT_TRUE(Add({low[0]}).ok());
  std::string gang;
  EXPECT_TRUE(engine_->CheckPod("uid-ckpt0", &gang).ok()) << "the pod's spec is still valid";
  AddPending("high", 4, 100);
  ASSERT_TRUE(engine_->Preempt("uid-high0").status.ok());
  EXPECT_EQ(Poll().at(0).kind, DisruptionAction::Kind::kNotice) << "no acknowledgement read from it";
}

}  // namespace
}  // namespace tidal
