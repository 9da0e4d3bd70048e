// What an exploratory test of `tidalctl sim` / `tidalctl gen` found (each test fails on the code
// before its fix): Latin-1 names that made the JSON outputs throw, a csv's first malformed row
// deciding seconds vs timestamps, range errors that stated a bound the value met, options refused
// as the file's problem, an unbounded time series, a generator spec of billions of jobs, tidal
// leaving jobs that can never fit their pool unfinished, and unchecked output writes.
// Threading: single-threaded tests.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "sim/fabric.h"
#include "sim/generator.h"
#include "sim/replay.h"
#include "sim/report.h"
#include "sim/trace.h"

namespace tidal::sim {
namespace {

std::string AllBad(const Trace& t) {
  std::string out;
  for (const auto& b : t.bad_rows) out += b.message + "\n";
  return out;
}

// A Latin-1 byte in a queue, an id or the file name is read as Latin-1 and kept as UTF-8, so every
// name the outputs carry dumps as JSON (it threw type_error 316 and aborted `--out`).
TEST(SimRobust, Latin1NamesAreKeptAsUtf8) {
  auto t = ParseTrace("id,submit,duration,gpus,queue\ncaf\xe9,0,100,1,caf\xe9\n", "tr\xe9.csv", TraceOptions{});
  ASSERT_TRUE(t.ok()) << t.status().Message();
  ASSERT_EQ(t->jobs.size(), 1u) << AllBad(*t);
  EXPECT_EQ(t->jobs[0].w.id, "caf\xc3\xa9");
  EXPECT_EQ(t->jobs[0].w.queue, "cafe");
  EXPECT_EQ(t->file, "tr\xc3\xa9.csv");
  const nlohmann::json j = {{"id", t->jobs[0].w.id}, {"file", t->file}, {"queues", DescribeQueueNames(*t)}};
  EXPECT_NO_THROW((void)j.dump());
  EXPECT_EQ(AsUtf8("\xc9quipe \xe6\x97"), "\xc3\x89quipe \xc3\xa6\xc2\x97");  // a cut sequence too
  EXPECT_EQ(AsUtf8("\xe6\x97\xa5"), "\xe6\x97\xa5");                                     // valid UTF-8 kept

  // YAML and sacct read the same way.
  auto y = ParseTrace("jobs:\n- {name: a, queue: caf\xe9, request: {gpus: 1}, duration: 10}\n", "j.yaml", TraceOptions{});
  ASSERT_TRUE(y.ok()) << y.status().Message();
  ASSERT_EQ(y->jobs.size(), 1u) << AllBad(*y);
  EXPECT_NO_THROW((void)nlohmann::json(DescribeQueueNames(*y)).dump());
}

// The last guard: a string that is not UTF-8 never makes a dump throw.
TEST(SimRobust, DumpJsonNeverThrows) {
  const nlohmann::json j = {{"bad", std::string("caf\xe9")}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);
  std::string out;
  EXPECT_NO_THROW(out = DumpJson(j));
  EXPECT_NE(out.find("caf\xef\xbf\xbd"), std::string::npos) << out;  // U+FFFD
  EXPECT_NO_THROW((void)MarkdownReport({{"input", {{"pools", {{"slurm_trace", "s\xe9"}}}}}, {"policies", nlohmann::json::array()}}));
}

// The first row whose submit reads decides seconds vs timestamps: a malformed first row no longer
// makes every timestamped row malformed. Unreadable submits say why.
TEST(SimRobust, CsvSubmitFormIsDecidedByTheFirstReadableRow) {
  for (const char* first : {"", "abc", "N/A", "2020-02-30 00:00:00", "2020-04-01T00:10:00Z", "2020-04-01 00:10:00+02:00"}) {
    const std::string text = std::string("id,submit,duration,gpus\nz,") + first + ",10,1\nd,2020-04-01 00:00:00,10,1\ne,2020-04-01 00:01:00,10,1\n";
    auto t = ParseTrace(text, "tz.csv", TraceOptions{});
    ASSERT_TRUE(t.ok()) << t.status().Message();
    EXPECT_EQ(t->jobs.size(), 2u) << first << ": " << AllBad(*t);
    ASSERT_EQ(t->bad_rows.size(), 1u) << AllBad(*t);
    EXPECT_EQ(t->origin, "2020-04-01 00:00:00");
  }
  auto bad = [](const std::string& submit) {
    auto t = ParseTrace("id,submit,duration,gpus\nz," + submit + ",10,1\n", "b.csv", TraceOptions{});
    return t.ok() && t->bad_rows.size() == 1 ? t->bad_rows[0].message : std::string("?");
  };
  EXPECT_NE(bad("2020-02-30 00:00:00").find("invalid date"), std::string::npos) << bad("2020-02-30 00:00:00");
  EXPECT_NE(bad("2020-04-01T00:10:00Z").find("a time zone suffix (\"Z\") is not read"), std::string::npos)
      << bad("2020-04-01T00:10:00Z");
  EXPECT_NE(bad("abc").find("or a timestamp"), std::string::npos) << bad("abc");
  // A row of the other kind names the line that decided.
  auto m = ParseTrace("id,submit,duration,gpus\nz,x,10,1\na,5,10,1\nb,2020-04-01 00:00:00,10,1\n", "m.csv", TraceOptions{});
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->bad_rows.size(), 2u) << AllBad(*m);
  EXPECT_NE(m->bad_rows[1].message.find("is a timestamp, but line 3's submit, the first read, is seconds"), std::string::npos)
      << AllBad(*m);
}

// Range errors state the range that was violated, numbers as %g (they said "must be > 0" of 2e6,
// and printed 1e300 with 300 digits).
TEST(SimRobust, RangeErrorsStateTheBound) {
  TraceOptions o;
  o.load_scale = 2e6;
  Status s = CheckTraceOptions(o);
  EXPECT_EQ(s.Message(), "--load-scale: must be in [1e-6, 1e6] (submit times are divided by it), got 2e+06");
  EXPECT_EQ(s.plugin(), "--load-scale");  // a usage error, not the file's
  o = TraceOptions{};
  o.limit_factor = 1e300;
  EXPECT_EQ(CheckTraceOptions(o).Message(), "--limit-factor: must be in [1, 1e6] (declared limit = actual x factor), got 1e+300");
  o = TraceOptions{};
  o.load_scale = 1e-300;  // collapsed every arrival onto 1e18 s
  EXPECT_FALSE(CheckTraceOptions(o).ok());

  auto t = ParseTrace("id,submit,duration,gpus,members\na,0,10,2147483647,\nb,0,10,8,2000000\n", "g.csv", TraceOptions{});
  ASSERT_TRUE(t.ok());
  EXPECT_NE(AllBad(*t).find("gpus: must be a whole number from 0 to 1000000, got \"2147483647\""), std::string::npos) << AllBad(*t);
  EXPECT_NE(AllBad(*t).find("members: must be a whole number from 1 to 1000000"), std::string::npos) << AllBad(*t);

  GenSpec g = std::move(LoadGenSpec("philly-like")).value();
  g.load = 1e9;
  EXPECT_NE(ValidateGenSpec(g).Message().find("load: must be in (0, 100]"), std::string::npos) << ValidateGenSpec(g).Message();
  g = std::move(LoadGenSpec("llm-gangs")).value();
  g.declared_median = 2000;
  EXPECT_EQ(ValidateGenSpec(g).Message(), "declared.median: must be in (0, 1000]");
}

// Options are checked before any file is read and name their flag; a window bound the trace cannot
// take is a usage error too (exit 2 in tidalctl sim, not 1).
TEST(SimRobust, OptionErrorsNameTheirFlag) {
  TraceOptions o;
  o.format = "bogus";
  EXPECT_EQ(CheckTraceOptions(o).plugin(), "--format");
  o = TraceOptions{};
  o.from = "2020-02-30";
  EXPECT_EQ(CheckTraceOptions(o).plugin(), "--from");
  o = TraceOptions{};
  o.to = "nan";
  EXPECT_EQ(CheckTraceOptions(o).plugin(), "--to");
  o = TraceOptions{};
  o.from = "20";
  o.to = "10";
  EXPECT_EQ(CheckTraceOptions(o).Message(), "--to: must be after --from (20), got 10");
  o = TraceOptions{};
  o.from = "2017-10-01";  // a timestamp on a trace of seconds: only the trace can tell
  auto t = ParseTrace("id,submit,duration,gpus\na,0,10,1\n", "s.csv", o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().plugin(), "--from");
  o.from_flag = "--slurm-from";
  EXPECT_EQ(ParseTrace("id,submit,duration,gpus\na,0,10,1\n", "s.csv", o).status().plugin(), "--slurm-from");
}

// The time series keeps at most Simulator::kMaxSamples whatever the period (a 400-day job sampled
// every second aborted with bad_alloc), and none at all when nothing reads it.
TEST(SimRobust, TimeSeriesIsBounded) {
  SyntheticFabric f;
  f.gpus = 8;
  const ClusterState fabric = std::move(BuildSyntheticFabric(TopologyLevels::Default(), f)).value();
  auto t = ParseTrace("id,submit,duration,gpus\na,0,400d,1\nb,10,1,1\n", "long.csv", TraceOptions{});
  ASSERT_TRUE(t.ok());
  ReplaySpec spec;
  spec.fabric = &fabric;
  spec.jobs = &t->jobs;
  spec.sample_interval_s = 1;
  auto r = MakeReplay(spec, "fifo");
  ASSERT_TRUE(r.ok());
  r->sim->Run();
  EXPECT_LE(r->sim->series().size(), Simulator::kMaxSamples);
  EXPECT_GE(r->sim->series().size(), Simulator::kMaxSamples / 4);
  const auto& ser = r->sim->series();
  EXPECT_EQ(ser[1].t - ser[0].t, r->sim->sample_interval());  // still evenly spaced
  EXPECT_EQ(ser.back().t - ser[ser.size() - 2].t, r->sim->sample_interval());
  spec.series = false;
  auto none = MakeReplay(spec, "fifo");
  ASSERT_TRUE(none.ok());
  none->sim->Run();
  EXPECT_TRUE(none->sim->series().empty());
  EXPECT_EQ(TraceSpan(t->jobs), 400 * 86400);
}

// A spec whose expected job count is beyond kMaxGenJobs is refused naming load, days and gpus (it
// allocated until bad_alloc); the spec file alone is read, so the command line may still lower it.
TEST(SimRobust, GeneratorRefusesAstronomicalJobCounts) {
  GenSpec g = std::move(LoadGenSpec("philly-like")).value();
  g.load = 100;
  g.days = 3650;
  const Status s = ValidateGenSpec(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.Message().find("jobs: load 100, days 3650 and gpus 2048 give"), std::string::npos) << s.Message();
  EXPECT_NE(s.Message().find("at most 20000000"), std::string::npos) << s.Message();
  EXPECT_FALSE(Generate(g).ok());
  g.gpus = int64_t{1} << 30;
  g.load = 0.7;
  g.days = 1;
  EXPECT_FALSE(ValidateGenSpec(g).ok());
  auto parsed = ParseGenSpec("base: philly-like\nload: 10000%\ndays: 3650\n", "big.yaml");
  EXPECT_TRUE(parsed.ok()) << parsed.status().Message();  // --days 1 may follow
}

// Two pools: a job that can never fit its door's pool is rejected by tidal as by the baselines,
// with the same reason (tidal left it pending: "unfinished", read as a deadlock).
TEST(SimRobust, TidalRejectsWhatNeverFitsItsPool) {
  SyntheticFabric f;
  f.gpus = 64;
  f.nodes_per_domain = 1;
  f.fanout = {1, 1};
  ClusterState fabric = std::move(BuildSyntheticFabric(TopologyLevels::Default(), f)).value();
  ASSERT_TRUE(SplitPools(fabric, 8).ok());  // one Slurm node
  auto t = ParseTrace("id,submit,duration,gpus\nbig,0,100,16\nsmall,0,100,8\n", "s.csv", TraceOptions{});
  ASSERT_TRUE(t.ok());
  for (auto& j : t->jobs) j.w.front_door = FrontDoor::kSlurm;
  for (bool shortcuts : {true, false}) {
    ReplaySpec spec;
    spec.fabric = &fabric;
    spec.jobs = &t->jobs;
    spec.tidal_shortcuts = shortcuts;
    std::string reasons[2];
    int i = 0;
    for (const char* p : {"fifo", "tidal"}) {
      auto m = RunPolicy(spec, p, MetricsOptions{false, false});
      ASSERT_TRUE(m.ok()) << m.status().Message();
      EXPECT_EQ((*m)["jobs"]["rejected"].get<int64_t>(), 1) << p << " " << (*m)["jobs"].dump();
      EXPECT_EQ((*m)["jobs"]["unfinished"].get<int64_t>(), 0) << p;
      ASSERT_EQ((*m)["rejections"].size(), 1u) << p;
      reasons[i++] = (*m)["rejections"][0]["reason"].get<std::string>();
    }
    EXPECT_EQ(reasons[0], reasons[1]);
    EXPECT_EQ(reasons[0], "can never fit: needs 2 member(s) of 8 GPU; the slurm pool holds at most 1 such member(s)");
    // With lending the Kubernetes pool's nodes may come to it: not rejected, and it runs.
    auto lend = RunPolicy(spec, kLendingPolicyName, MetricsOptions{false, false});
    ASSERT_TRUE(lend.ok()) << lend.status().Message();
    EXPECT_EQ((*lend)["jobs"]["rejected"].get<int64_t>(), 0);
  }
}

// Output files are checked to the end: a full device is an error naming the file (exit 0 before).
TEST(SimRobust, WritesAreChecked) {
  const Status s = WriteTextFile("/dev/full", std::string(1 << 16, 'x'));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.Message().find("cannot write /dev/full: No space left on device"), std::string::npos) << s.Message();
  EXPECT_FALSE(WriteReport("/dev/full/x", {{"input", nlohmann::json::object()}, {"policies", nlohmann::json::array()}}).ok());
}

// --policy: "all" in a list and empty names are named (all,fifo said all was unknown; "fifo," passed).
TEST(SimRobust, PolicyListErrors) {
  EXPECT_EQ(ParsePolicies("all,fifo").status().Message(), "--policy: all cannot be combined with other policies");
  EXPECT_FALSE(ParsePolicies("fifo,").ok());
  EXPECT_FALSE(ParsePolicies(",fifo").ok());
  EXPECT_FALSE(ParsePolicies("").ok());
  EXPECT_TRUE(ParsePolicies("fifo,tidal").ok());
}

}  // namespace
}  // namespace tidal::sim
