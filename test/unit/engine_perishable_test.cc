// Perishable windows (engine/engine_perishable.cc): before a node closes (here by its
// tidal.dev/available-until annotation, or a drain) it takes work that ends in time and, by
// perishable.fill, preemptible work that checkpoints on notice while its notice and
// perishable.minSeconds still fit; that work gets its notice before the window ends (cause
// window-end) so the node is empty at the end; the windows are measured (tidal_gpus{state=
// "perishable"}, tidal_perishable_gpu_seconds_total) and explain says when a job runs on borrowed
// time.
// Threading: single-threaded; the engine's clock is the fixture's now_.
#include <algorithm>

#include <gtest/gtest.h>

#include "core/api/duration.h"
#include "engine/engine.h"
#include "engine/maintenance.h"
#include "test/support/engine_fixture.h"

namespace tidal {
namespace {

using testing::GangPod;

class PerishableTest : public testing::EngineFixture {
 protected:
  // A pending pod of `gpus` (testing::FillerPod).
  static PodInfo Pod(const std::string& name, bool preemptible, const std::string& notice, const std::string& limit = "",
                     int64_t gpus = 8) {
    return testing::FillerPod(name, preemptible, notice, limit, gpus);
  }
  static PodInfo Running(PodInfo p, const std::string& node, int64_t start) { return testing::RunningOn(std::move(p), node, start); }
  void OnlyNodes(const std::vector<int>& keep) {
    SyncBatch b;
    for (int i = 0; i < 8; ++i) {
      if (std::find(keep.begin(), keep.end(), i) == keep.end()) b.delete_nodes.push_back("n" + std::to_string(i));
    }
    ASSERT_TRUE(Sync(b).ok());
  }
  // n0 as its shim reports it, with these annotations; the node warnings of that Sync.
  std::vector<NodeWarningInfo> Annotate(std::map<std::string, std::string> annotations) {
    SyncBatch b;
    NodeInfo n = Node(0);
    n.annotations = std::move(annotations);
    b.upsert_nodes = {n};
    uint64_t gen = 0;
    std::vector<NodeWarningInfo> warnings;
    EXPECT_TRUE(engine_->Sync(b, &gen, &warnings).ok());
    return warnings;
  }
  void AvailableUntil(int64_t t) { EXPECT_TRUE(Annotate({{kAnnotationAvailableUntil, FormatUnixTime(t)}}).empty()); }
  void MakeWith(const std::string& yaml) {
    auto cfg = ParseEngineConfig(yaml, "engine.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    Make(*cfg);
  }
};

TEST_F(PerishableTest, AWindowTakesWorkThatEndsInTimeOrCheckpointsOnNoticeAndNothingElse) {
  OnlyNodes({0});
  AvailableUntil(now_ + 1800);  // shorter than a batch job's default runtime (1 h)
  std::string node;
  Status st = Plan(Pod("rigid", false, ""), &node);
  EXPECT_FALSE(st.ok()) << "no runtime limit and not preemptible: it would run past the window";
  EXPECT_NE(st.ToString().find("close"), std::string::npos) << st.ToString();
  EXPECT_FALSE(Plan(Pod("plain", true, "")).ok()) << "preemptible, but it would lose its work at the end (fill: checkpointing)";
  ASSERT_TRUE(Plan(Pod("short", false, "", "20m"), &node).ok()) << "it ends in time";
  EXPECT_EQ(node, "n0");
  ASSERT_TRUE(Plan(Pod("filler", true, "60s"), &node).ok()) << "preemptible and checkpoints on 60 s notice";
  EXPECT_EQ(node, "n0");
}

TEST_F(PerishableTest, AFillerGetsItsNoticeAsLateAsItAllowsAndTheNodeIsEmptyAtTheEnd) {
  OnlyNodes({0});
  const int64_t end = now_ + 3600;
  AvailableUntil(end);
  ASSERT_TRUE(Add({Running(Pod("filler", true, "60s"), "n0", now_)}).ok());
  ASSERT_TRUE(Poll().empty());
  now_ = end - 60 - kDrainSlackS - 1;
  EXPECT_TRUE(Poll().empty()) << "still 91 s before the end: it keeps running";
  now_ += 1;
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kNotice);
  EXPECT_EQ(a[0].cause, "window-end");
  EXPECT_NE(a[0].reason.find("available until"), std::string::npos) << a[0].reason;
  now_ += 60;  // the notice ran out (no checkpoint reported): evicted, kDrainSlackS before the end
  a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, DisruptionAction::Kind::kEvict);
  EXPECT_LT(now_, end);
  ASSERT_TRUE(Delete({"uid-filler"}).ok());
  EXPECT_EQ(metrics_.disruptions.With({"window-end"}).Value(), 1);
  now_ = end;
  EXPECT_FALSE(Plan(Pod("after", true, "60s", "1m")).ok()) << "from the end the node takes no work";
}

TEST_F(PerishableTest, NoFillerOnceTooLittleOfTheWindowIsLeft) {
  OnlyNodes({0});
  // The filler's 60 s notice, kDrainSlackS and perishable.minSeconds (300 s) must fit.
  AvailableUntil(now_ + 60 + kDrainSlackS + 300 - 1);
  EXPECT_FALSE(Plan(Pod("late", true, "60s")).ok());
  AvailableUntil(now_ + 60 + kDrainSlackS + 300);
  EXPECT_TRUE(Plan(Pod("in-time", true, "60s")).ok());
}

TEST_F(PerishableTest, FillPreemptibleTakesAnyPreemptibleWorkAndNoneOnlyWhatEndsInTime) {
  MakeWith("perishable: {fill: preemptible, minSeconds: 60}\n");
  OnlyNodes({0});
  AvailableUntil(now_ + 600);
  EXPECT_TRUE(Plan(Pod("plain", true, "")).ok()) << "fill: preemptible";
  std::string node;
  Status st = Plan(Pod("rigid", false, ""), &node);
  EXPECT_FALSE(st.ok()) << node;

  MakeWith("perishable: {fill: none}\n");
  OnlyNodes({0});
  AvailableUntil(now_ + 1800);
  EXPECT_FALSE(Plan(Pod("filler", true, "60s")).ok()) << "fill: none";
  EXPECT_TRUE(Plan(Pod("short", false, "", "10m")).ok());
}

TEST_F(PerishableTest, ConfigErrorsNameTheField) {
  for (const auto& [yaml, field] : std::vector<std::pair<std::string, std::string>>{
           {"perishable: {fill: sometimes}", "perishable.fill: unknown value \"sometimes\""},
           {"perishable: {minSeconds: -1}", "perishable.minSeconds"},
           {"perishable: {fil: none}", "perishable.fil: unknown field"},
       }) {
    auto bad = ParseEngineConfig(yaml, "engine.yaml");
    ASSERT_FALSE(bad.ok()) << yaml;
    EXPECT_NE(bad.status().ToString().find(field), std::string::npos) << bad.status().ToString();
  }
}

TEST_F(PerishableTest, TheEarlierOfADrainAndTheWindowsEndClosesTheNodeAndABadValueIsAWarning) {
  OnlyNodes({0});
  ASSERT_TRUE(Add({Running(Pod("job", false, "60s"), "n0", now_)}).ok());
  EXPECT_TRUE(Annotate({{kAnnotationAvailableUntil, FormatUnixTime(now_ + 600)},
                        {kAnnotationDrainBy, FormatUnixTime(now_ + 60)}})
                  .empty());
  auto a = Poll();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].cause, "drain") << "the drain comes first";

  auto w = Annotate({{kAnnotationAvailableUntil, "friday"}});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].reason, "TidalAvailableUntilAnnotationInvalid");
  EXPECT_NE(w[0].message.find("tidal.dev/available-until"), std::string::npos) << w[0].message;
  EXPECT_NE(w[0].message.find("friday"), std::string::npos) << w[0].message;
  auto r = engine_->Drain({}, 0, false);
  ASSERT_EQ(r.size(), 1u) << "the close it had stays";
  EXPECT_EQ(r[0].by_unix, now_ + 60);
  // The Drain RPC cannot change an annotated close; it names the annotation to change instead.
  Annotate({{kAnnotationAvailableUntil, FormatUnixTime(now_ + 600)}});
  r = engine_->Drain({"n0"}, 0, true);
  bool named = false;
  for (const auto& d : r) named = named || (d.state == "annotated" && d.note.find(kAnnotationAvailableUntil) != std::string::npos);
  EXPECT_TRUE(named);
}

TEST_F(PerishableTest, WindowsAreMeasuredAndExplainSaysWhenAJobRunsOnBorrowedTime) {
  OnlyNodes({0, 1});
  AvailableUntil(now_ + 3600);
  ASSERT_TRUE(Add({Running(Pod("filler", true, "60s", "", 4), "n0", now_)}).ok());
  EXPECT_EQ(Gpus("perishable"), 4) << "n0's idle GPUs are perishable";
  EXPECT_EQ(Gpus("idle"), 8) << "n1's are not";
  Poll();
  now_ += 10;
  Poll();
  EXPECT_DOUBLE_EQ(metrics_.perishable_gpu_seconds.With({"offered"}).Value(), 80);
  EXPECT_DOUBLE_EQ(metrics_.perishable_gpu_seconds.With({"filled"}).Value(), 40);
  now_ += 3600;  // a gap no poll covered is not counted
  Poll();
  EXPECT_DOUBLE_EQ(metrics_.perishable_gpu_seconds.With({"offered"}).Value(), 80);

  now_ -= 3600;
  std::string text;
  ASSERT_TRUE(engine_->Explain("team/filler", &text).ok());
  EXPECT_NE(text.find("runs on borrowed time: its owner takes node n0 back at " + FormatUnixTime(now_ + 3590)), std::string::npos)
      << text;
  auto j = engine_->ExplainJson("team/filler");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  ASSERT_TRUE(j->contains("borrowed")) << j->dump();
  EXPECT_EQ((*j)["borrowed"]["until_unix"], now_ + 3590);
}

}  // namespace
}  // namespace tidal
