// Trace readers of the simulator (sim/trace.h): Philly, generic CSV and YAML/JSON; malformed rows
// reported with their line numbers, skipped or refused; window, load scaling, runtime-limit model.
#include <gtest/gtest.h>

#include "sim/trace.h"

namespace tidal::sim {
namespace {

std::string Src(const std::string& rel) { return std::string(TIDAL_SOURCE_DIR) + "/" + rel; }

constexpr const char* kPhilly =
    "timestamp,duration,num_gpus,gpu_time,cluster\n"
    "2017-10-01 00:10:00,60.0,1,60.0,vc1\n"       // line 2
    "2017-10-01 00:00:00,3600.4,128,460851.2,vc2\n"  // line 3: earliest; 16 x 8 GPUs
    "2017-10-01 00:05:00,10.0,12,120.0,vc1\n";      // line 4: 2 x 6 GPUs

TEST(SimTrace, PhillyRowsSortedShapedAndRebased) {
  TraceOptions o;
  auto t = ParseTrace(kPhilly, "p.csv", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  EXPECT_EQ(t->format, "philly");
  EXPECT_EQ(t->origin, "2017-10-01 00:00:00");
  ASSERT_EQ(t->jobs.size(), 3u);
  const auto& a = t->jobs[0];
  EXPECT_EQ(a.w.id, "philly-3");
  EXPECT_EQ(a.w.queue, "vc2");
  EXPECT_EQ(a.w.submit_time_s, 0);
  EXPECT_EQ(a.w.members, 16);
  EXPECT_EQ(a.w.per_member.gpus, 8);
  EXPECT_EQ(a.duration_s, 3601);             // rounded up
  EXPECT_EQ(a.w.runtime_limit_s, 7202);      // declared = actual x 2
  EXPECT_EQ(t->jobs[1].w.id, "philly-4");
  EXPECT_EQ(t->jobs[1].w.submit_time_s, 300);
  EXPECT_EQ(t->jobs[1].w.members, 2);
  EXPECT_EQ(t->jobs[1].w.per_member.gpus, 6);
  EXPECT_EQ(t->jobs[2].w.submit_time_s, 600);
  EXPECT_EQ(t->jobs[2].w.members, 1);
  EXPECT_TRUE(t->bad_rows.empty());
}

TEST(SimTrace, WindowLoadScaleAndLimitFactor) {
  TraceOptions o;
  o.from = "2017-10-01 00:05:00";
  o.to = "20m";
  o.load_scale = 2;
  o.limit_factor = 1.5;
  auto t = ParseTrace(kPhilly, "p.csv", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->outside_window, 1);
  EXPECT_EQ(t->jobs[0].w.submit_time_s, 0);    // rebased to the window start
  EXPECT_EQ(t->jobs[1].w.submit_time_s, 150);  // 300 s later, compressed 2x
  EXPECT_EQ(t->jobs[1].w.runtime_limit_s, 90);
  o.to = "2017-10-01 00:01:00";
  EXPECT_FALSE(ParseTrace(kPhilly, "p.csv", o).ok());  // --to before --from
}

TEST(SimTrace, MalformedRowsReportedWithLineNumbersAndSkipped) {
  TraceOptions o;
  auto t = LoadTrace(Src("test/sim/malformed.csv"), o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  ASSERT_EQ(t->jobs.size(), 3u);  // line 8's VC_2 is normalised to vc-2, not refused
  EXPECT_EQ(t->rows, 9);
  ASSERT_EQ(t->bad_rows.size(), 6u);
  const std::vector<std::pair<int64_t, std::string>> want = {
      {3, "duration"}, {4, "num_gpus"}, {5, "timestamp"}, {6, "gpu_time"}, {7, "expected 5 fields"}, {10, "cluster"}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(t->bad_rows[i].line, want[i].first);
    EXPECT_NE(t->bad_rows[i].message.find("malformed.csv:" + std::to_string(want[i].first) + ": "), std::string::npos)
        << t->bad_rows[i].message;
    EXPECT_NE(t->bad_rows[i].message.find(want[i].second), std::string::npos) << t->bad_rows[i].message;
  }
  EXPECT_EQ(t->jobs[1].w.queue, "vc-2");
  EXPECT_EQ(t->jobs[2].duration_s, 51);
  EXPECT_EQ(t->jobs[2].w.queue, "vc2");
}

TEST(SimTrace, MalformedRowRefusedWithFail) {
  TraceOptions o;
  o.on_bad_row = TraceOptions::OnBadRow::kFail;
  auto t = LoadTrace(Src("test/sim/malformed.csv"), o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().Message().find("malformed.csv:3: duration: "), std::string::npos) << t.status().Message();
}

TEST(SimTrace, GenericCsv) {
  TraceOptions o;
  auto t = ParseTrace(
      "# comment before the header\n"
      "id,submit,duration,members,gpus_per_member,queue,priority,limit,required,preemptible\n"
      "big,0,1h,4,8,research,5,2h,leaf,true\n"
      "small,10,30,,1,dev,,,,\n",
      "g.csv", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  ASSERT_EQ(t->jobs.size(), 2u);
  const auto& b = t->jobs[0];
  EXPECT_EQ(b.w.id, "big");
  EXPECT_EQ(b.w.members, 4);
  EXPECT_EQ(b.w.per_member.gpus, 8);
  EXPECT_EQ(b.duration_s, 3600);
  EXPECT_EQ(b.w.runtime_limit_s, 7200);  // declared in the row: the model does not apply
  EXPECT_EQ(b.w.priority, 5);
  EXPECT_EQ(b.w.required_level, "leaf");
  EXPECT_TRUE(b.w.preemptible);
  EXPECT_EQ(t->jobs[1].w.runtime_limit_s, 60);
  EXPECT_EQ(t->jobs[1].w.queue, "dev");
}

TEST(SimTrace, GenericCsvErrors) {
  TraceOptions o;
  auto unknown = ParseTrace("submit,duration,gpus,colour\n0,1,1,red\n", "g.csv", o);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().Message().find("g.csv:1: header: unknown column \"colour\""), std::string::npos);
  auto t = ParseTrace("id,submit,duration,gpus,members\na,0,10,6,4\nc,0,10,1,\nc,0,10,1,\nb,-5,10,1,\n", "g.csv", o);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->jobs.size(), 1u);
  ASSERT_EQ(t->bad_rows.size(), 3u);
  EXPECT_NE(t->bad_rows[0].message.find("g.csv:2: gpus: 6 is not a multiple of members (4)"), std::string::npos)
      << t->bad_rows[0].message;
  EXPECT_NE(t->bad_rows[1].message.find("g.csv:4: id: duplicate job id \"c\""), std::string::npos) << t->bad_rows[1].message;
  EXPECT_NE(t->bad_rows[2].message.find("g.csv:5: submit:"), std::string::npos) << t->bad_rows[2].message;
}

TEST(SimTrace, YamlJobs) {
  TraceOptions o;
  auto t = LoadTrace(Src("test/sim/jobs.yaml"), o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].w.id, "train");
  EXPECT_EQ(t->jobs[0].duration_s, 3600);
  EXPECT_EQ(t->jobs[0].w.runtime_limit_s, 7200);
  EXPECT_EQ(t->jobs[0].w.required_level, "leaf");
  EXPECT_EQ(t->jobs[1].w.submit_time_s, 30);
  EXPECT_EQ(t->jobs[1].w.runtime_limit_s, 1200);
  auto bad = ParseTrace("jobs:\n  - name: a\n    request: {gpus: 1}\n  - name: b\n    request: {gpus: x}\n    duration: 5\n",
                        "j.yaml", o);
  ASSERT_TRUE(bad.ok());
  ASSERT_EQ(bad->bad_rows.size(), 2u);
  EXPECT_NE(bad->bad_rows[0].message.find("j.yaml:2: jobs[0].duration: required"), std::string::npos)
      << bad->bad_rows[0].message;
  EXPECT_EQ(bad->bad_rows[1].line, 4);
  EXPECT_NE(bad->bad_rows[1].message.find("jobs[1].request.gpus"), std::string::npos) << bad->bad_rows[1].message;
}

TEST(SimTrace, ShapesAndTimestamps) {
  int32_t m = 0;
  int64_t g = 0;
  ShapeFromTotal(8, 8, &m, &g);
  EXPECT_EQ(m * 100 + g, 108);
  ShapeFromTotal(24, 8, &m, &g);
  EXPECT_EQ(m * 100 + g, 308);
  ShapeFromTotal(13, 8, &m, &g);
  EXPECT_EQ(m * 100 + g, 1301);
  EXPECT_EQ(*ParseTimestamp("1970-01-02 00:00:01"), 86401);
  EXPECT_EQ(*ParseTimestamp("2017-10-01"), *ParseTimestamp("2017-10-01 00:00:00"));
  EXPECT_FALSE(ParseTimestamp("2017-02-29 00:00:00").ok());
  EXPECT_FALSE(ParseTimestamp("2017-10-01 25:00:00").ok());
  EXPECT_FALSE(ParseTimestamp("2017-10-01x").ok());
}

}  // namespace
}  // namespace tidal::sim
