// The policy dry-run (sim/dryrun.h) and the snapshot reader (sim/snapshot.h): a good snapshot, a
// truncated one, a future version, missing and bad fields named; the zero-horizon replay keeping the
// snapshot's placements; crafted snapshots (test/sim/dryrun/) where a weight change moves a known
// amount of capacity and a quota cut preempts non-preemptible work; the --fail-on grammar.
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "core/io/document.h"
#include "sim/dryrun.h"

namespace tidal::sim {
namespace {

std::string Src(const std::string& rel) { return std::string(TIDAL_SOURCE_DIR) + "/" + rel; }

std::string Read(const std::string& rel) {
  std::ifstream in(Src(rel));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json Doc(const std::string& rel) { return nlohmann::json::parse(Read(rel)); }

QueueSpec Q(const std::string& name, double weight, int64_t nominal_gpus = kUnlimited) {
  QueueSpec q;
  q.name = name;
  q.weight = weight;
  q.nominal = {nominal_gpus, kUnlimited, kUnlimited};
  q.borrowing_limit = {nominal_gpus == kUnlimited ? kUnlimited : 0, kUnlimited, kUnlimited};
  q.lending_limit = {kUnlimited, kUnlimited, kUnlimited};
  return q;
}

DryRunConfig Config(const std::string& name, std::vector<QueueSpec> qs) {
  DryRunConfig c;
  c.name = name;
  c.source = name;
  c.queues.queues = std::move(qs);
  return c;
}

TEST(SnapshotReader, ReadsTheCraftedSnapshot) {
  auto s = ParseSnapshot(Read("test/sim/dryrun/quota.json"), "quota.json");
  ASSERT_TRUE(s.ok()) << s.status().Message();
  EXPECT_EQ(s->version, 1);
  EXPECT_EQ(s->nodes.size(), 4u);
  ASSERT_EQ(s->running.size(), 4u);
  EXPECT_EQ(s->running[0].w.id, "a/train-0");
  EXPECT_EQ(s->running[0].placement, (std::vector<std::pair<std::string, int32_t>>{{"node-0", 1}}));
  EXPECT_EQ(s->running[0].start_s, 1'800'000'000 - 3600);
  EXPECT_FALSE(s->running[0].w.preemptible);
  ASSERT_EQ(s->pending.size(), 2u);
  EXPECT_EQ(s->pending[1].w.submit_time_s, 1'800'000'000 - 299);
  EXPECT_EQ(s->config_version, "quota-24-8");
  EXPECT_EQ(s->levels.levels.size(), 1u);
  // The same from a parsed document.
  auto d = ReadSnapshot(Doc("test/sim/dryrun/quota.json"), "doc");
  ASSERT_TRUE(d.ok()) << d.status().Message();
  EXPECT_EQ(d->running.size(), 4u);
  EXPECT_EQ(d->pending[1].w.submit_time_s, s->pending[1].w.submit_time_s);
}

TEST(SnapshotReader, TruncatedFileIsAParseErrorWithItsPosition) {
  const std::string text = Read("test/sim/dryrun/quota.json");
  auto s = ParseSnapshot(text.substr(0, text.size() / 2), "cut.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("cut.json: not a complete JSON document"), std::string::npos) << s.status().Message();
  EXPECT_NE(s.status().Message().find("truncated?"), std::string::npos);
  EXPECT_NE(s.status().Message().find("column"), std::string::npos) << s.status().Message();
}

TEST(SnapshotReader, FutureVersionIsRefusedByName) {
  nlohmann::json d = Doc("test/sim/dryrun/quota.json");
  d["version"] = 2;
  auto s = ParseSnapshot(d.dump(), "v2.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message(), "snapshot: version 2 is newer than this tidalctl reads (1); use a newer tidalctl");
  d["version"] = 1;
  d["format"] = "tidal.dev/other";
  s = ParseSnapshot(d.dump(), "f.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("snapshot.format: expected \"tidal.dev/snapshot\""), std::string::npos);
}

TEST(SnapshotReader, BadAndMissingFieldsAreNamed) {
  struct Case {
    std::string name;
    std::function<void(nlohmann::json&)> edit;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"members below one", [](nlohmann::json& d) { d["running"][3]["members"] = 0; }, "snapshot.running[3].members: must be >= 1"},
      {"missing start", [](nlohmann::json& d) { d["running"][1].erase("start"); }, "snapshot.running[1].start: missing"},
      {"unknown node", [](nlohmann::json& d) { d["running"][0]["placement"][0]["node"] = "node-9"; },
       "snapshot.running[0].placement[0].node: \"node-9\" is not among snapshot.nodes"},
      {"placement and members disagree", [](nlohmann::json& d) { d["running"][2]["members"] = 2; },
       "snapshot.running[2].placement: holds 1 member(s), members says 2"},
      {"missing nodes", [](nlohmann::json& d) { d.erase("nodes"); }, "snapshot.nodes: missing"},
      {"bad health", [](nlohmann::json& d) { d["nodes"][1]["health"] = "fine"; }, "snapshot.nodes[1].health"},
      {"pending submit not a number", [](nlohmann::json& d) { d["pending"][0]["submit"] = "soon"; },
       "snapshot.pending[0].submit: must be a whole number"},
      {"unknown level", [](nlohmann::json& d) { d["pending"][0]["required_level"] = "pod"; },
       "snapshot.pending[0].required_level: \"pod\" is not a level of snapshot.topology"},
      {"duplicate id", [](nlohmann::json& d) { d["pending"][1]["id"] = "b/job-0"; }, "snapshot.pending[1].id: \"b/job-0\" appears twice"},
      {"usage missing", [](nlohmann::json& d) { d.erase("usage"); }, "snapshot.usage: missing"},
      {"config missing", [](nlohmann::json& d) { d.erase("config"); }, "snapshot.config: missing"},
  };
  for (const auto& c : cases) {
    nlohmann::json d = Doc("test/sim/dryrun/quota.json");
    c.edit(d);
    auto s = ParseSnapshot(d.dump(), "x.json");
    ASSERT_FALSE(s.ok()) << c.name;
    EXPECT_NE(s.status().Message().find("x.json: " + c.want), std::string::npos) << c.name << ": " << s.status().Message();
  }
}

TEST(SnapshotReader, AnonymisedSnapshotStillReadsWithConsistentNames) {
  nlohmann::json d = Doc("test/sim/dryrun/quota.json");
  ASSERT_TRUE(AnonymiseSnapshot(d, true).ok());
  const std::string text = d.dump();
  for (const char* name : {"node-0", "a/train-0", "b/job-1", "rack-0", "\"a\"", "quota-24-8"}) {
    EXPECT_EQ(text.find(name), std::string::npos) << name;
  }
  auto s = ParseSnapshot(text, "anon.json");
  ASSERT_TRUE(s.ok()) << s.status().Message();
  EXPECT_EQ(s->running[0].placement[0].first, s->nodes[0].name);
  EXPECT_EQ(s->running[0].w.queue, AnonymousName("q-", "a"));
  EXPECT_EQ(s->config["queues"][0]["name"], AnonymousName("q-", "a"));
  // Queues kept unless asked.
  nlohmann::json k = Doc("test/sim/dryrun/quota.json");
  ASSERT_TRUE(AnonymiseSnapshot(k, false).ok());
  EXPECT_EQ(k["running"][0]["queue"], "a");
  EXPECT_NE(k["running"][0]["id"], "a/train-0");
}

TEST(DryRun, ZeroHorizonKeepsTheSnapshotsPlacements) {
  auto s = LoadSnapshot(Src("test/sim/dryrun/quota.json"));
  ASSERT_TRUE(s.ok());
  DryRunOptions o;
  o.horizon_s = 0;
  auto r = RunDryRun(*s, Config("current", {Q("a", 1, 24), Q("b", 1, 8)}), o);
  ASSERT_TRUE(r.ok()) << r.status().Message();
  EXPECT_TRUE((*r)["placements"]["match"].get<bool>()) << (*r)["placements"].dump();
  EXPECT_EQ((*r)["placements"]["running"], 4);
  // Nothing was scheduled: the pending gangs did not start.
  EXPECT_EQ((*r)["total"]["started"], 0);
  EXPECT_EQ((*r)["total"]["preemptions"], 0);
}

// weights.json: 32 GPUs, two saturating queues of 4-GPU jobs. Weights 1:1 split them 16/16; 3:1
// moves 8 GPUs to a once the first jobs have ended (steady state 24/8 from ~36 min on).
TEST(DryRun, WeightChangeMovesEightGpusToTheHeavierQueue) {
  auto s = LoadSnapshot(Src("test/sim/dryrun/weights.json"));
  ASSERT_TRUE(s.ok());
  DryRunOptions o;
  o.horizon_s = 4 * 3600;
  auto cur = RunDryRun(*s, Config("current", {Q("a", 1), Q("b", 1)}), o);
  auto nxt = RunDryRun(*s, Config("new", {Q("a", 3), Q("b", 1)}), o);
  ASSERT_TRUE(cur.ok() && nxt.ok());
  EXPECT_EQ((*cur)["queues"]["a"]["avg_gpus"], 16.0);
  EXPECT_EQ((*cur)["queues"]["b"]["avg_gpus"], 16.0);
  // In steady state (the second hour on) exactly 24/8.
  const auto& series = (*nxt)["series"];
  ASSERT_EQ(series["queues"], nlohmann::json({"a", "b"}));
  for (size_t i = 0; i < series["t"].size(); ++i) {
    if (series["t"][i].get<int64_t>() < 3600) continue;
    ASSERT_EQ(series["per_queue"][0][i], 24) << "t=" << series["t"][i];
    ASSERT_EQ(series["per_queue"][1][i], 8) << "t=" << series["t"][i];
  }
  // Over the horizon: a gains what b loses, 8 GPUs less the first half hour's transient.
  const auto rep = CompareDryRuns(*s, *cur, *nxt, o);
  const double moved = rep["queues"]["a"]["change"]["avg_gpus"].get<double>();
  EXPECT_GT(moved, 7.0);
  EXPECT_LE(moved, 8.0);
  EXPECT_DOUBLE_EQ(rep["queues"]["b"]["change"]["avg_gpus"].get<double>(), -moved);
  EXPECT_EQ(rep["queues"]["a"]["change"]["preemptions"], 0);
  EXPECT_TRUE(rep["flags"].empty()) << rep["flags"].dump();
  // b's jobs wait longer, a's less.
  EXPECT_GT(rep["queues"]["b"]["change"]["ttst_avg_s"].get<double>(), 0);
  EXPECT_LT(rep["queues"]["a"]["change"]["ttst_avg_s"].get<double>(), 0);
}

// quota.json: a runs 24 GPUs of non-preemptible work; cutting its quota to 8 (b's raised to 24)
// lets b's two waiting jobs reclaim 16 GPUs at once: two preemptions, 16 GPU-hours lost, flagged.
TEST(DryRun, QuotaCutPreemptsNonPreemptibleWorkAndIsFlagged) {
  auto s = LoadSnapshot(Src("test/sim/dryrun/quota.json"));
  ASSERT_TRUE(s.ok());
  DryRunOptions o;
  o.horizon_s = 4 * 3600;
  auto cur = RunDryRun(*s, Config("current", {Q("a", 1, 24), Q("b", 1, 8)}), o);
  auto nxt = RunDryRun(*s, Config("new", {Q("a", 1, 8), Q("b", 1, 24)}), o);
  ASSERT_TRUE(cur.ok() && nxt.ok());
  EXPECT_EQ((*cur)["total"]["preemptions"], 0);
  EXPECT_EQ((*cur)["total"]["started"], 0);  // b waits for a's day-long jobs
  EXPECT_EQ((*nxt)["queues"]["a"]["preemptions"], 2);
  EXPECT_EQ((*nxt)["queues"]["a"]["preempted_nonpreemptible"], 2);
  EXPECT_EQ((*nxt)["queues"]["a"]["lost_gpu_s"], 2 * 8 * 3600.0);  // each ran an hour, no checkpoints
  EXPECT_EQ((*nxt)["queues"]["b"]["started"], 2);
  EXPECT_EQ((*nxt)["queues"]["b"]["ttst"]["p99_s"], 300.0);  // submitted 5 min before the snapshot
  const auto rep = CompareDryRuns(*s, *cur, *nxt, o);
  ASSERT_EQ(rep["flags"].size(), 1u) << rep["flags"].dump();
  EXPECT_EQ(rep["flags"][0]["kind"], "preempts-nonpreemptible");
  EXPECT_EQ(rep["flags"][0]["workloads"].size(), 2u);
  EXPECT_EQ(rep["reservations"]["earlier"], 2);
  const std::string text = DryRunText(rep);
  EXPECT_NE(text.find("! preempts non-preemptible work: 2 preemption(s)"), std::string::npos) << text;
  // The gate.
  auto checks = ParseFailOn("preempt-nonpreemptible,lost-gpu-hours=10,ttst-p99-increase=20%");
  ASSERT_TRUE(checks.ok());
  const auto breaches = FailOnBreaches(*checks, rep);
  ASSERT_EQ(breaches.size(), 2u);
  EXPECT_EQ(breaches[0].rfind("preempt-nonpreemptible: ", 0), 0u);
  EXPECT_EQ(breaches[1], "lost-gpu-hours=10: 16.0 GPU-hours lost, 0.0 under the current config");
  EXPECT_TRUE(FailOnBreaches(*ParseFailOn("lost-gpu-hours=16,preemptions=2"), rep).empty());
  // The same config on both sides: nothing moves, nothing breaches.
  const auto same = CompareDryRuns(*s, *cur, *cur, o);
  EXPECT_TRUE(same["flags"].empty());
  EXPECT_TRUE(FailOnBreaches(*ParseFailOn("preempt-nonpreemptible,reserved-later,ttst-avg-increase=0%"), same).empty());
}

// A candidate config that renames a queue (queues[].formerNames): the report compares the queue
// with its former self, one row under the new name, instead of one queue gone and another new. A
// merge of two queues into one keeps their rows apart (their figures cannot be added up).
TEST(DryRun, ARenamedQueueIsOneRowUnderItsNewName) {
  auto s = LoadSnapshot(Src("test/sim/dryrun/quota.json"));
  ASSERT_TRUE(s.ok());
  DryRunOptions o;
  o.horizon_s = 4 * 3600;
  QueueSpec renamed = Q("team-a", 1);
  renamed.former_names = {"a"};
  auto cur = RunDryRun(*s, Config("current", {Q("a", 1), Q("b", 1)}), o);
  auto nxt = RunDryRun(*s, Config("new", {renamed, Q("b", 1)}), o);
  ASSERT_TRUE(cur.ok() && nxt.ok());
  const auto rep = CompareDryRuns(*s, *cur, *nxt, o);
  std::vector<std::string> rows;
  for (const auto& [q, _] : rep["queues"].items()) rows.push_back(q);
  EXPECT_EQ(rows, (std::vector<std::string>{"b", "team-a"})) << rep["queues"].dump();
  const auto& row = rep["queues"]["team-a"];
  EXPECT_EQ(row["current_name"], "a");
  EXPECT_EQ(row["current"]["avg_gpus"], 24.0);  // a's day-long jobs
  EXPECT_EQ(row["new"]["avg_gpus"], 24.0);
  EXPECT_EQ(row["change"]["avg_gpus"], 0.0);
  EXPECT_TRUE(rep["flags"].empty()) << rep["flags"].dump();
  const std::string text = DryRunText(rep);
  EXPECT_NE(text.find("| team-a (was a) | 24.0 |"), std::string::npos) << text;
  // A check reads the renamed queue's row by its new name.
  EXPECT_TRUE(FailOnBreaches(*ParseFailOn("fairshare-gap-increase=1,ttst-avg-increase=0%"), rep).empty());

  QueueSpec merged = Q("ab", 1);
  merged.former_names = {"a", "b"};
  auto both = RunDryRun(*s, Config("new", {merged}), o);
  ASSERT_TRUE(both.ok());
  const auto rep2 = CompareDryRuns(*s, *cur, *both, o);
  rows.clear();
  for (const auto& [q, v] : rep2["queues"].items()) {
    rows.push_back(q);
    EXPECT_FALSE(v.contains("current_name")) << q;
  }
  EXPECT_EQ(rows, (std::vector<std::string>{"a", "ab", "b"})) << rep2["queues"].dump();
}

// A gang holding a reservation in the snapshot (4 x 8 GPUs, reserved when the last running job ends
// at +40 min): under weights that put queue b first, b's 1 h jobs take the nodes as they free and
// the gang starts later: flagged "pushes reserved gang a/big later by ...".
TEST(DryRun, WeightChangePushingAReservedGangLaterIsFlagged) {
  nlohmann::json d = Doc("test/sim/dryrun/quota.json");
  const int64_t t = d["taken_at"];
  for (int i = 0; i < 4; ++i) {
    d["running"][i]["runtime_s"] = 3600 + 600 * (i + 1);
    d["running"][i]["queue"] = i < 2 ? "a" : "b";
  }
  nlohmann::json big = d["pending"][0];
  big["id"] = "a/big";
  big["queue"] = "a";
  big["members"] = 4;
  big["min_members"] = 4;
  big["runtime_s"] = 7200;
  big["submit"] = t - 1000;
  d["pending"] = nlohmann::json::array({big});
  for (int i = 0; i < 6; ++i) {
    nlohmann::json j = d["pending"][0];
    j["id"] = "b/job-" + std::to_string(i);
    j["queue"] = "b";
    j["members"] = j["min_members"] = 1;
    j["runtime_s"] = 3600;
    j["submit"] = t - 900 + i;
    d["pending"].push_back(j);
  }
  d["reservations"] = nlohmann::json::array({{{"id", "a/big"}, {"start", t + 2400}, {"placement", nlohmann::json::array()}}});
  for (int i = 0; i < 4; ++i) d["reservations"][0]["placement"].push_back({{"node", "node-" + std::to_string(i)}, {"members", 1}});
  auto s = ParseSnapshot(d.dump(), "reserved.json");
  ASSERT_TRUE(s.ok()) << s.status().Message();
  DryRunOptions o;
  o.horizon_s = 6 * 3600;
  auto cur = RunDryRun(*s, Config("current", {Q("a", 3), Q("b", 1)}), o);
  auto nxt = RunDryRun(*s, Config("new", {Q("a", 1), Q("b", 3)}), o);
  ASSERT_TRUE(cur.ok() && nxt.ok());
  EXPECT_EQ((*cur)["gangs"]["a/big"]["start_s"], 2400) << (*cur)["gangs"].dump();
  const int64_t later = (*nxt)["gangs"]["a/big"]["start_s"].get<int64_t>() - 2400;
  EXPECT_GT(later, 0) << (*nxt)["gangs"].dump();
  const auto rep = CompareDryRuns(*s, *cur, *nxt, o);
  bool flagged = false;
  for (const auto& f : rep["flags"]) {
    if (f["kind"] == "reserved-later" && f["id"] == "a/big") {
      flagged = true;
      EXPECT_EQ(f["delta_s"], later);
      EXPECT_EQ(f["message"].get<std::string>().rfind("pushes reserved gang a/big later by ", 0), 0u) << f["message"];
    }
  }
  EXPECT_TRUE(flagged) << rep["flags"].dump();
  EXPECT_EQ(FailOnBreaches(*ParseFailOn("reserved-later"), rep).size(), 1u);
  EXPECT_TRUE(FailOnBreaches(*ParseFailOn("reserved-later=" + std::to_string(later) + "s"), rep).empty());
}

// Arrivals at the snapshot's recorded rate: per queue, the work submitted (or started) in the
// window, as a Poisson stream of its copies; the same seed, the same stream.
TEST(DryRun, RecordedArrivalsFollowTheSnapshotsRatePerQueue) {
  auto s = LoadSnapshot(Src("test/sim/dryrun/weights.json"));  // 60 + 60 submitted in the last 10 min
  ASSERT_TRUE(s.ok());
  const auto a = RecordedArrivals(*s, 3600, 3600, 86400, 7);
  EXPECT_EQ(a.size(), RecordedArrivals(*s, 3600, 3600, 86400, 7).size());
  std::map<std::string, int> per;
  for (size_t i = 0; i < a.size(); ++i) {
    ++per[a[i].w.queue];
    EXPECT_EQ(a[i].w.id.rfind("recorded/" + a[i].w.queue + "/", 0), 0u) << a[i].w.id;
    EXPECT_EQ(a[i].w.per_member.gpus, 4);
    EXPECT_GE(a[i].duration_s, 1200);
    EXPECT_LE(a[i].duration_s, 3000);
    EXPECT_LE(a[i].w.submit_time_s, 3600);
    if (i > 0) {
      EXPECT_GE(a[i].w.submit_time_s, a[i - 1].w.submit_time_s);
    }
  }
  // 60 an hour each: a Poisson count within 4 standard deviations.
  for (const char* q : {"a", "b"}) {
    EXPECT_GT(per[q], 60 - 31) << q;
    EXPECT_LT(per[q], 60 + 31) << q;
  }
  EXPECT_NE(RecordedArrivals(*s, 3600, 3600, 86400, 8)[0].w.submit_time_s, a[0].w.submit_time_s);
  // Nothing in the window, nothing arrives.
  EXPECT_TRUE(RecordedArrivals(*s, 60, 3600, 86400, 7).empty());
  // They replay with the snapshot's work.
  DryRunOptions o;
  o.horizon_s = 3600;
  o.arrivals = a;
  auto cur = RunDryRun(*s, Config("current", {Q("a", 1), Q("b", 1)}), o);
  ASSERT_TRUE(cur.ok());
  EXPECT_EQ((*cur)["total"]["jobs"].get<int64_t>(), 120 + static_cast<int64_t>(a.size()));
}

TEST(FailOn, GrammarErrorsNameTheItem) {
  struct Case {
    std::string text, want;
  };
  const std::vector<Case> bad = {
      {"preempt-nonpreemptible,ttst-p99-increase=x", "--fail-on: \"ttst-p99-increase=x\": expected a percentage (20%) or a duration (30m)"},
      {"lost-gpu-hours=-1", "--fail-on: \"lost-gpu-hours=-1\": expected lost-gpu-hours=N (a number >= 0)"},
      {"preempt-nonpreemptible=1", "--fail-on: \"preempt-nonpreemptible=1\": preempt-nonpreemptible takes no value"},
      {"ttst-avg-increase", "--fail-on: \"ttst-avg-increase\": expected ttst-avg-increase=X% or ttst-avg-increase=DURATION"},
      {"reserved-later=5%", "--fail-on: \"reserved-later=5%\": expected a duration (30m)"},
      {"speed=3", "--fail-on: \"speed=3\": unknown check (accepted: "},
  };
  for (const auto& c : bad) {
    auto p = ParseFailOn(c.text);
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_EQ(p.status().Message().rfind(c.want, 0), 0u) << p.status().Message();
  }
  auto ok = ParseFailOn("ttst-p99-increase=20%,ttst-avg-increase=30m,reserved-later,reserved-later=1h,preemptions=0");
  ASSERT_TRUE(ok.ok()) << ok.status().Message();
  ASSERT_EQ(ok->size(), 5u);
  EXPECT_EQ((*ok)[0].unit, FailOnCheck::Unit::kPercent);
  EXPECT_EQ((*ok)[0].limit, 20);
  EXPECT_EQ((*ok)[1].unit, FailOnCheck::Unit::kSeconds);
  EXPECT_EQ((*ok)[1].limit, 1800);
  EXPECT_EQ((*ok)[2].limit, 0);
  EXPECT_EQ((*ok)[3].limit, 3600);
}

}  // namespace
}  // namespace tidal::sim
