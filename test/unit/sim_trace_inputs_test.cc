// Trace files as users' tools write them (sim/trace.h): a byte order mark, CRLF, tab-, ';'- or
// '|'-separated tables, quoted fields, header mistakes, zero-GPU members and out-of-range times,
// each read or refused with the line and column named.
// Threading: single-threaded tests.
#include <gtest/gtest.h>

#include "sim/trace.h"
#include "sim/trace_fields.h"

namespace tidal::sim {
namespace {

std::string AllBad(const Trace& t) {
  std::string out;
  for (const auto& b : t.bad_rows) out += b.message + "\n";
  return out;
}

TEST(SimTraceInputs, ByteOrderMarkIsIgnoredInEveryFormat) {
  TraceOptions o;
  const std::string bom = "\xEF\xBB\xBF";
  auto c = ParseTrace(bom + "id,submit,duration,gpus\r\na,0,100,1\r\n", "c.csv", o);
  ASSERT_TRUE(c.ok()) << c.status().Message();  // was: header: unknown column "\xEF\xBB\xBFid"
  EXPECT_EQ(c->format, "csv");
  ASSERT_EQ(c->jobs.size(), 1u) << AllBad(*c);
  EXPECT_EQ(c->jobs[0].w.id, "a");

  auto p = ParseTrace(bom + "timestamp,duration,num_gpus,gpu_time,cluster\r\n2017-10-01 00:00:00,100.0,1,100.0,vc1\r\n",
                      "p.csv", o);
  ASSERT_TRUE(p.ok()) << p.status().Message();
  EXPECT_EQ(p->format, "philly");  // auto-detected despite the mark
  ASSERT_EQ(p->jobs.size(), 1u) << AllBad(*p);

  auto j = ParseTrace(bom + "jobs:\n- {name: a, request: {gpus: 1}, duration: 10}\n", "j.yaml", o);
  ASSERT_TRUE(j.ok()) << j.status().Message();
  EXPECT_EQ(j->jobs.size(), 1u) << AllBad(*j);
}

TEST(SimTraceInputs, TabSemicolonAndPipeSeparatedTables) {
  TraceOptions o;
  for (const char sep : {'\t', ';', '|'}) {
    std::string text = "id,submit,duration,gpus,queue\na,0,100,2,\"ml, infra\"\nb,5,10,1,be\n";
    for (size_t i = 0, q = 0; i < text.size(); ++i) {  // the commas outside quotes become `sep`
      if (text[i] == '"') q ^= 1;
      if (text[i] == ',' && q == 0) text[i] = sep;
    }
    auto t = ParseTrace(text, "t.csv", o);
    ASSERT_TRUE(t.ok()) << sep << ": " << t.status().Message();
    ASSERT_EQ(t->jobs.size(), 2u) << AllBad(*t);
    EXPECT_EQ(t->jobs[0].w.queue, "ml-infra");
    EXPECT_EQ(t->jobs[0].w.per_member.gpus, 2);
    EXPECT_EQ(t->jobs[1].duration_s, 10);
  }
  auto p = ParseTrace("timestamp\tduration\tnum_gpus\tgpu_time\tcluster\n2017-10-01 00:00:00\t100.0\t2\t200.0\tvc1\n",
                      "p.tsv", o);
  ASSERT_TRUE(p.ok()) << p.status().Message();
  EXPECT_EQ(p->format, "philly");
  ASSERT_EQ(p->jobs.size(), 1u) << AllBad(*p);
  // A row of another separator in a comma file is still a wrong field count, named.
  auto bad = ParseTrace("id,submit,duration,gpus\na\t0\t100\t1\n", "b.csv", o);
  ASSERT_TRUE(bad.ok());
  ASSERT_EQ(bad->bad_rows.size(), 1u);
  EXPECT_EQ(bad->bad_rows[0].message, "b.csv:2: expected 4 fields, got 1");
}

TEST(SimTraceInputs, PhillyHeaderWithARepeatedColumnIsRefused) {
  // Before, the last "duration" won silently and every row was then refused for its gpu_time.
  TraceOptions o;
  auto t = ParseTrace("timestamp,duration,num_gpus,gpu_time,cluster,duration\n2017-10-01 00:00:00,100.0,1,100.0,vc1,5\n",
                      "p.csv", o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().Message(), "p.csv:1: header: column \"duration\" given twice");
}

TEST(SimTraceInputs, CsvMembersOfZeroGpusAreMalformed) {
  // Before, gpus_per_member 0 was read: the baselines ran a job asking for nothing and tidal
  // rejected it, so the policies' completed counts differed for no reason the report gave.
  TraceOptions o;
  auto t = ParseTrace("id,submit,duration,members,gpus_per_member\na,0,100,2,0\nb,0,100,2,4\n", "z.csv", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].w.id, "b");
  ASSERT_EQ(t->bad_rows.size(), 1u);
  EXPECT_EQ(t->bad_rows[0].message, "z.csv:2: gpus_per_member: must be a whole number >= 1, got \"0\"");
  o.on_bad_row = TraceOptions::OnBadRow::kFail;
  EXPECT_FALSE(ParseTrace("id,submit,duration,members,gpus_per_member\na,0,100,2,0\n", "z.csv", o).ok());
}

}  // namespace
}  // namespace tidal::sim
