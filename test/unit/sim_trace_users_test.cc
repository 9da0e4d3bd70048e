// Traces as users have them (sim/trace_fields.h): a gpu_time column rounded to the column's
// precision or off by a small relative error is accepted and counted; queue names in any case or
// with `_` and `.` are normalised with the mapping kept; what is really malformed is still refused.
#include <gtest/gtest.h>

#include "sim/trace.h"
#include "sim/trace_fields.h"

namespace tidal::sim {
namespace {

using trace_fields::CheckGpuTime;
using trace_fields::GpuTimeCheck;
using trace_fields::NormaliseQueueName;

constexpr const char* kRounded =
    "timestamp,duration,num_gpus,gpu_time,cluster\n"
    "2017-10-01 00:00:00,66.123,8,529.0,vc1\n"       // 2: 528.984 rounded to 0.1 -> corrected
    "2017-10-01 00:01:00,3600.4,128,460851.2,vc1\n"  // 3: exact
    "2017-10-01 00:02:00,100,64,6420,vc1\n"          // 4: integer duration: +-0.5 s x 64 GPUs -> corrected
    "2017-10-01 00:03:00,1000.0,2,2015.0,vc1\n"      // 5: 0.75% off: within 1% -> corrected
    "2017-10-01 00:04:00,1000.0,2,2100.0,vc1\n"      // 6: 5% off: malformed
    "2017-10-01 00:05:00,50.5,2,101.0,vc1\n";        // 7: exact

TEST(SimTraceUsers, RoundedGpuTimeAcceptedAndCounted) {
  TraceOptions o;
  auto t = ParseTrace(kRounded, "r.csv", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  EXPECT_EQ(t->jobs.size(), 5u);
  EXPECT_EQ(t->gpu_time_corrected, 3);
  ASSERT_EQ(t->bad_rows.size(), 1u);
  EXPECT_NE(t->bad_rows[0].message.find("r.csv:6: gpu_time: \"2100.0\" is not duration x num_gpus"), std::string::npos)
      << t->bad_rows[0].message;
  EXPECT_EQ(t->jobs[0].duration_s, 67);  // duration is what the replay uses, rounded up as before
  EXPECT_EQ(t->jobs[0].w.members, 1);
  EXPECT_EQ(t->jobs[0].w.per_member.gpus, 8);
}

TEST(SimTraceUsers, ZeroToleranceStillAllowsTheColumnsRounding) {
  TraceOptions o;
  o.gpu_time_tolerance = 0;
  auto t = ParseTrace(kRounded, "r.csv", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  EXPECT_EQ(t->gpu_time_corrected, 2);  // rows 2 and 4; row 5's 0.75% is now refused
  ASSERT_EQ(t->bad_rows.size(), 2u);
  EXPECT_EQ(t->bad_rows[0].line, 5);
  EXPECT_EQ(t->bad_rows[1].line, 6);
  o.gpu_time_tolerance = 0.06;
  t = ParseTrace(kRounded, "r.csv", o);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->bad_rows.empty());
  EXPECT_EQ(t->gpu_time_corrected, 4);
  o.gpu_time_tolerance = -1;
  EXPECT_FALSE(ParseTrace(kRounded, "r.csv", o).ok());
}

TEST(SimTraceUsers, CheckGpuTimeCases) {
  struct Case {
    const char* name;
    const char *gt, *dur;
    int64_t gpus;
    double rel;
    GpuTimeCheck want;
  };
  const Case cases[] = {
      {"exact", "800.0", "100.0", 8, 0, GpuTimeCheck::kExact},
      {"float noise", "0.30000000000000004", "0.1", 3, 0, GpuTimeCheck::kExact},
      {"gpu_time to 0.1", "529.0", "66.123", 8, 0, GpuTimeCheck::kRounded},
      {"gpu_time to 1", "529", "66.123", 8, 0, GpuTimeCheck::kRounded},
      {"gpu_time in 1e3", "5.00e5", "3906.5", 128, 0, GpuTimeCheck::kRounded},
      {"beyond rounding", "530.0", "66.123", 8, 0, GpuTimeCheck::kDisagrees},
      {"within relative", "530.0", "66.123", 8, 0.01, GpuTimeCheck::kRounded},
      {"double", "1600.0", "100.0", 8, 0.01, GpuTimeCheck::kDisagrees},
  };
  for (const auto& c : cases) {
    double gt = std::stod(c.gt), dur = std::stod(c.dur);
    EXPECT_EQ(CheckGpuTime(c.gt, gt, c.dur, dur, c.gpus, c.rel), c.want) << c.name;
  }
}

TEST(SimTraceUsers, FailStillRefusesWhatIsReallyMalformed) {
  TraceOptions o;
  o.on_bad_row = TraceOptions::OnBadRow::kFail;
  const std::string head = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,66.123,8,529.0,LS\n";
  auto ok = ParseTrace(head, "f.csv", o);  // rounded and upper-case: accepted even with fail
  ASSERT_TRUE(ok.ok()) << ok.status().Message();
  EXPECT_EQ(ok->gpu_time_corrected, 1);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"2017-10-01 00:01:00,10.0,-8,-80.0,vc1", "f.csv:3: num_gpus: "},
      {"2017-10-01 00:01:00,10.0,8,eighty,vc1", "f.csv:3: gpu_time: must be a number"},
      {"2017-10-01 00:01:00,1e,8,80.0,vc1", "f.csv:3: duration: "},
      // Found by the trace fuzzer: a duration too large for int64 seconds was converted anyway.
      {"2017-10-01 00:01:00,6" + std::string(127, '4') + ".0,1,64.0,vc1", "f.csv:3: duration: must be a number of seconds from 0 to 1e15"},
      {"2017-10-01 00:01:00,1e16,1,1e16,vc1", "f.csv:3: duration: "},
      {"2017-10-01 00:01:00,10.0,8,80.0,_._", "f.csv:3: cluster: \"_._\" has no character of a queue name"},
  };
  for (const auto& [row, want] : bad) {
    auto t = ParseTrace(head + row + "\n", "f.csv", o);
    ASSERT_FALSE(t.ok()) << row;
    EXPECT_NE(t.status().Message().find(want), std::string::npos) << t.status().Message();
  }
}

// The largest duration a trace may give, times the largest --limit-factor, or spread by a tiny
// --load-scale: whole seconds within int64 (UBSan in the sanitizer build checks the conversions).
TEST(SimTraceUsers, HugeDurationsAndFactorsStayInRange) {
  TraceOptions o;
  o.limit_factor = 1e6;
  o.load_scale = 1e-6;  // the least --load-scale
  // (A submit past 1e11 s reads as milliseconds and is refused: SimTraceInputs.SubmitTimesInMilliseconds...)
  auto t = ParseTrace("submit,duration,gpus,queue\n0,1e15,1,a\n1e11,10,1,a\n", "h.csv", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].duration_s, 1000000000000000);
  EXPECT_EQ(t->jobs[0].w.runtime_limit_s, 1000000000000000000) << "1e21 held at 1e18";
  EXPECT_EQ(t->jobs[1].w.submit_time_s, 100000000000000000) << "1e11 / 1e-6";
}

TEST(SimTraceUsers, NormaliseQueueName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"LS", "ls"},
      {"ml_infra.EU", "ml-infra-eu"},
      {"Team A", "team-a"},
      {"--a__b--", "a-b"},
      {"prod/serving:v2", "prod-serving-v2"},
      {"caf\xc3\xa9!", "cafe"},  // a Latin letter folded to ASCII; other ASCII characters dropped
      {"\xc3\x89quipe", "equipe"},  // "Équipe": the capital É is a letter too, not dropped
      {"\xc9quipe", "equipe"},  // the same name in Latin-1 (not valid UTF-8)
      {"Stra\xc3\x9f" "e \xc5\x81\xc3\xb3" "d\xc5\xba", "strasse-lodz"},  // "Straße Łódź"
      {"\xe6\x97\xa5\xe6\x9c\xac", "u65e5-u672c"},  // "日本": kept, one queue of its own
      {"\xe4\xb8\xad\xe5\x9b\xbd", "u4e2d-u56fd"},  // "中国": another one
      {"ml\xe2\x80\x93infra\xc2\xa0" "eu", "ml-infra-eu"},  // en dash and no-break space separate
      {"team\xf0\x9f\x9a\x80", "team-u1f680"},  // an emoji
      {"\xe2\x80\x94", ""},  // punctuation alone: nothing valid is left
      {"_._", ""},
      {"", ""},
      {std::string(70, 'x'), std::string(63, 'x')},
      {std::string(62, 'x') + "_y", std::string(62, 'x')},  // no trailing '-' after truncation
  };
  for (const auto& [raw, want] : cases) EXPECT_EQ(NormaliseQueueName(raw), want) << raw;
}

TEST(SimTraceUsers, QueueNamesNormalisedInEveryFormatWithTheMappingKept) {
  TraceOptions o;
  auto p = ParseTrace(
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-10-01 00:00:00,10.0,1,10.0,LS\n"
      "2017-10-01 00:00:01,10.0,1,10.0,BE\n"
      "2017-10-01 00:00:02,10.0,1,10.0,ls\n"
      "2017-10-01 00:00:03,10.0,1,10.0,ml_infra.eu\n",
      "p.csv", o);
  ASSERT_TRUE(p.ok()) << p.status().Message();
  ASSERT_TRUE(p->bad_rows.empty());
  ASSERT_EQ(p->jobs.size(), 4u);
  EXPECT_EQ(p->jobs[0].w.queue, "ls");
  EXPECT_EQ(p->jobs[1].w.queue, "be");
  EXPECT_EQ(p->jobs[2].w.queue, "ls");
  EXPECT_EQ(p->jobs[3].w.queue, "ml-infra-eu");
  const std::map<std::string, std::string> renames = {{"BE", "be"}, {"LS", "ls"}, {"ml_infra.eu", "ml-infra-eu"}};
  EXPECT_EQ(p->queue_renames, renames);
  ASSERT_EQ(p->queue_merges.size(), 1u);
  EXPECT_EQ(p->queue_merges[0], "ls <- LS, ls");
  EXPECT_EQ(DescribeQueueNames(*p), "BE -> be, LS -> ls, ml_infra.eu -> ml-infra-eu; merged into one queue: ls <- LS, ls");

  auto c = ParseTrace("submit,duration,gpus,queue\n0,10,1,Team_A\n1,10,1,\n2,10,1,***\n", "c.csv", o);
  ASSERT_TRUE(c.ok()) << c.status().Message();
  ASSERT_EQ(c->jobs.size(), 2u);
  EXPECT_EQ(c->jobs[0].w.queue, "team-a");
  EXPECT_EQ(c->jobs[1].w.queue, "default");
  ASSERT_EQ(c->bad_rows.size(), 1u);
  EXPECT_NE(c->bad_rows[0].message.find("c.csv:4: queue: "), std::string::npos) << c->bad_rows[0].message;
  EXPECT_TRUE(c->queue_merges.empty());

  auto j = ParseTrace("jobs:\n- name: a\n  queue: ML_Infra\n  members: 1\n  request: {gpus: 1}\n  duration: 10\n",
                      "j.yaml", o);
  ASSERT_TRUE(j.ok()) << j.status().Message();
  ASSERT_EQ(j->jobs.size(), 1u) << (j->bad_rows.empty() ? "" : j->bad_rows[0].message);
  EXPECT_EQ(j->jobs[0].w.queue, "ml-infra");
  EXPECT_EQ(j->queue_renames.at("ML_Infra"), "ml-infra");
}

TEST(SimTraceUsers, ParseRelativeTolerance) {
  EXPECT_DOUBLE_EQ(*ParseRelativeTolerance("1%", "--gpu-time-tolerance"), 0.01);
  EXPECT_DOUBLE_EQ(*ParseRelativeTolerance("0.02", "--gpu-time-tolerance"), 0.02);
  EXPECT_DOUBLE_EQ(*ParseRelativeTolerance("0", "--gpu-time-tolerance"), 0);
  for (const char* bad : {"150%", "2", "-1%", "x", ""}) {
    auto t = ParseRelativeTolerance(bad, "--gpu-time-tolerance");
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().Message().find("--gpu-time-tolerance: "), std::string::npos);
  }
}

}  // namespace
}  // namespace tidal::sim
