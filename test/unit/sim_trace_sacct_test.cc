// A Slurm cluster's own history as a trace (format sacct, sim/trace_sacct.cc): test/sim/sacct/
// history.txt is `sacct -P` output without -X (steps included) with one row of each kind a real
// export holds: steps, a pending job, a running one, a CPU-only one, typed GRES, gangs over several
// nodes, a requeued run (sacct -D), [D-]HH:MM:SS times, UNLIMITED and Partition_Limit limits, and
// malformed rows. Known answers per row.
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "sim/trace.h"

namespace tidal::sim {
namespace {

std::string ReadFixture(const std::string& rel) {
  std::ifstream in(std::string(TIDAL_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, const SimJob*> ById(const Trace& t) {
  std::map<std::string, const SimJob*> out;
  for (const auto& j : t.jobs) out[j.w.id] = &j;
  return out;
}

TEST(SimTraceSacct, ASlurmHistoryReadsAsJobsWithEveryOtherRowCounted) {
  TraceOptions o;  // format auto: JobID and Submit columns say sacct
  auto t = ParseTrace(ReadFixture("test/sim/sacct/history.txt"), "history.txt", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  EXPECT_EQ(t->format, "sacct");
  EXPECT_EQ(t->rows, 15);
  const auto by = ById(*t);
  ASSERT_EQ(by.size(), 7u);
  for (const char* id : {"100", "101", "105", "106", "107", "107#2", "108"}) ASSERT_TRUE(by.count(id)) << id;

  // Trace time 0 is the earliest kept Submit; times read as in the file.
  EXPECT_EQ(t->origin, "2026-11-02 10:00:00");
  const SimJob& a = *by.at("100");
  EXPECT_EQ(a.w.submit_time_s, 0);
  EXPECT_EQ(a.duration_s, 3600);
  EXPECT_EQ(a.w.runtime_limit_s, 7200);  // Timelimit 02:00:00
  EXPECT_EQ(a.w.members, 1);
  EXPECT_EQ(a.w.per_member.gpus, 1);
  EXPECT_EQ(a.w.queue, "ml-infra");  // Account ML_Infra, normalised

  const SimJob& b = *by.at("101");  // 16 GPUs (gres/gpu, not twice with its typed count) on 2 nodes
  EXPECT_EQ(b.w.submit_time_s, 1800);
  EXPECT_EQ(b.duration_s, 93784);       // 1-02:03:04
  EXPECT_EQ(b.w.runtime_limit_s, 172800);  // 2-00:00:00
  EXPECT_EQ(b.w.members, 2);
  EXPECT_EQ(b.w.per_member.gpus, 8);
  EXPECT_EQ(b.w.queue, "llm");

  const SimJob& c = *by.at("105");  // 6 GPUs on 2 nodes: 2 x 3; UNLIMITED: the limit factor (2)
  EXPECT_EQ(c.w.members, 2);
  EXPECT_EQ(c.w.per_member.gpus, 3);
  EXPECT_EQ(c.duration_s, 1800);
  EXPECT_EQ(c.w.runtime_limit_s, 3600);
  EXPECT_EQ(c.w.queue, "vision");

  const SimJob& d = *by.at("106");  // typed GRES only (gres/gpu:h100=24) on 3 nodes; Partition_Limit
  EXPECT_EQ(d.w.members, 3);
  EXPECT_EQ(d.w.per_member.gpus, 8);
  EXPECT_EQ(d.duration_s, 0);
  EXPECT_EQ(d.w.runtime_limit_s, 1);

  // sacct -D: the requeued run and the last one are two runs, each held its GPUs; 5 GPUs on 2
  // nodes cannot be split evenly: the shape of 5 total GPUs.
  const SimJob& e1 = *by.at("107");
  const SimJob& e2 = *by.at("107#2");
  EXPECT_EQ(e1.duration_s, 600);
  EXPECT_EQ(e2.duration_s, 3600);
  EXPECT_EQ(e2.w.submit_time_s, 8400);
  EXPECT_EQ(e2.w.members, 1);
  EXPECT_EQ(e2.w.per_member.gpus, 5);

  EXPECT_EQ(by.at("108")->w.submit_time_s, 3 * 3600);  // "2026-11-02 13:00": a space and no seconds

  // Every other row is counted: skipped for a reason, or malformed naming its column.
  EXPECT_EQ(t->skipped, (std::map<std::string, int64_t>{{"job steps (sacct -X leaves them out)", 2},
                                                         {"never started", 1},
                                                         {"not ended", 1},
                                                         {"no GPUs (CPU-only jobs)", 1}}));
  EXPECT_EQ(DescribeSkipped(*t), "2 job steps (sacct -X leaves them out), 1 never started, 1 no GPUs (CPU-only jobs), 1 not ended");
  ASSERT_EQ(t->bad_rows.size(), 3u);
  EXPECT_EQ(t->bad_rows[0].message.rfind("history.txt:14: Submit: invalid timestamp \"yesterday\"", 0), 0u) << t->bad_rows[0].message;
  EXPECT_EQ(t->bad_rows[1].message.rfind("history.txt:15: AllocTRES: a GPU count that is not a whole number", 0), 0u) << t->bad_rows[1].message;
  EXPECT_EQ(t->bad_rows[2].message.rfind("history.txt:16: Elapsed: ", 0), 0u) << t->bad_rows[2].message;
  EXPECT_EQ(static_cast<int64_t>(t->jobs.size() + t->bad_rows.size()) + 5, t->rows);
  // The queue names changed are listed.
  EXPECT_EQ(t->queue_renames.at("ML_Infra"), "ml-infra");
  EXPECT_EQ(t->queue_renames.at("LLM"), "llm");

  // --on-bad-row fail refuses the first malformed row.
  o.on_bad_row = TraceOptions::OnBadRow::kFail;
  auto strict = ParseTrace(ReadFixture("test/sim/sacct/history.txt"), "history.txt", o);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().Message().rfind("history.txt:14: Submit:", 0), 0u) << strict.status().Message();
}

// sacct -p (a trailing '|' on every line), lower-case column names, the run time from ElapsedRaw or
// from Start and End, ReqTRES when AllocTRES is empty, Partition when there is no Account column.
TEST(SimTraceSacct, ParsableFormsAndFallbackColumns) {
  const std::string text =
      "jobid|submit|start|end|reqtres|alloctres|partition|\n"
      "7|2026-01-01T00:00:00|2026-01-01T00:10:00|2026-01-01T02:10:00|gres/gpu=16,node=2||GPU_A|\n"
      "8|2026-01-01T01:00:00|2026-01-01T01:00:00|2026-01-01T01:00:59|cpu=1|gres/gpu:a100=4,gres/gpu:v100=4|GPU_A|\n";
  TraceOptions o;
  auto t = ParseTrace(text, "p.txt", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  ASSERT_EQ(t->jobs.size(), 2u) << (t->bad_rows.empty() ? "" : t->bad_rows[0].message);
  EXPECT_EQ(t->jobs[0].w.id, "7");
  EXPECT_EQ(t->jobs[0].duration_s, 7200);           // End - Start
  EXPECT_EQ(t->jobs[0].w.TotalGpus(), 16);          // ReqTRES: AllocTRES empty
  EXPECT_EQ(t->jobs[0].w.members, 2);               // 16 total on 8-GPU nodes
  EXPECT_EQ(t->jobs[0].w.queue, "gpu-a");           // Partition
  EXPECT_EQ(t->jobs[1].w.TotalGpus(), 8);           // the typed counts summed
  EXPECT_EQ(t->jobs[1].duration_s, 59);
  EXPECT_EQ(t->jobs[1].w.submit_time_s, 3600);

  const std::string raw = "JobIDRaw|Submit|ElapsedRaw|TimelimitRaw|AllocTRES|Account\n"
                          "9|2026-01-01T00:00:00|90|30|gres/gpu=1|a\n"
                          "10|2026-01-01T00:00:00|90|UNLIMITED|gres/gpu=1|a\n";
  auto r = ParseTrace(raw, "r.txt", o);
  ASSERT_TRUE(r.ok()) << r.status().Message();
  ASSERT_EQ(r->jobs.size(), 2u);
  EXPECT_EQ(r->jobs[0].duration_s, 90);
  EXPECT_EQ(r->jobs[0].w.runtime_limit_s, 1800);  // 30 minutes
  EXPECT_EQ(r->jobs[1].w.runtime_limit_s, 180);   // none declared: 90 s x the limit factor 2
}

TEST(SimTraceSacct, AHeaderWithoutTheColumnsItNeedsIsRefusedNamingThem) {
  TraceOptions o;
  o.format = "sacct";
  auto t = ParseTrace("JobID|Submit|Account\n1|2026-01-01T00:00:00|a\n", "h.txt", o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().Message().find("h.txt:1: header: needs an Elapsed column (or Start and End)"), std::string::npos)
      << t.status().Message();
  EXPECT_NE(t.status().Message().find("sacct -X -P --format=JobID,Submit"), std::string::npos);
  auto twice = ParseTrace("JobID|Submit|Elapsed|AllocTRES|jobid\n", "h.txt", o);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().Message().find("column \"jobid\" given twice"), std::string::npos) << twice.status().Message();
  auto empty = ParseTrace("", "e.txt", o);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().Message().find("no header line"), std::string::npos);
  // sacct without -P: asked for it, not read as YAML.
  o.format = "auto";
  auto fixed = ParseTrace("JobID           Submit              Elapsed\n------------ ------------------- ----------\n"
                          "1            2026-01-01T00:00:00   00:01:00\n",
                          "fixed.txt", o);
  ASSERT_FALSE(fixed.ok());
  EXPECT_EQ(fixed.status().Message(), "fixed.txt:1: header: fixed-width sacct output; run sacct with -P (parsable: fields separated by |)");
  // A table with JobID and Submit columns is read as sacct whatever its name, not as csv.
  o.format = "auto";
  auto a = ParseTrace("JobID,Submit,Elapsed,AllocTRES\n1,2026-01-01T00:00:00,00:01:00,gres/gpu=2\n", "export.csv", o);
  ASSERT_TRUE(a.ok()) << a.status().Message();
  EXPECT_EQ(a->format, "sacct");
  ASSERT_EQ(a->jobs.size(), 1u);
  EXPECT_EQ(a->jobs[0].w.TotalGpus(), 2);
}

// sacct -P does not quote: a '"' in a field (a JobName, a Comment) is text, and the row reads.
// Before, the RFC 4180 quoting of comma-separated tables applied: "unterminated quote", the row lost.
TEST(SimTraceSacct, AQuoteInAParsableFieldIsText) {
  const std::string text =
      "JobID|JobName|Submit|Elapsed|AllocTRES|Account\n"
      "1|train \"big|2026-01-01T00:00:00|00:10:00|gres/gpu=8|a\n"
      "2|\"x|y\"|2026-01-01T00:01:00|00:10:00|gres/gpu=2|a\n";  // 3 fields after the name: 1 too many
  TraceOptions o;
  auto t = ParseTrace(text, "q.txt", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  ASSERT_EQ(t->jobs.size(), 1u) << (t->bad_rows.empty() ? "" : t->bad_rows[0].message);
  EXPECT_EQ(t->jobs[0].w.id, "1");
  EXPECT_EQ(t->jobs[0].w.TotalGpus(), 8);
  ASSERT_EQ(t->bad_rows.size(), 1u);
  EXPECT_EQ(t->bad_rows[0].message, "q.txt:3: expected 6 fields, got 7");
}

// A job cancelled while pending: Slurm sets its Start and End to the cancel time (Elapsed
// 00:00:00) and it has no allocation (AllocTRES empty, NodeList "None assigned"). It never ran and
// is skipped as never started, not replayed as a 0-second job of its ReqTRES GPUs. A job that did
// get its GPUs and ended within the second (AllocTRES set) still is one.
TEST(SimTraceSacct, AJobCancelledWhilePendingNeverStarted) {
  const std::string text =
      "JobID|Submit|Start|End|Elapsed|AllocTRES|ReqTRES|State\n"
      "1|2026-01-01T00:00:00|2026-01-01T00:30:00|2026-01-01T00:30:00|00:00:00||gres/gpu=8|CANCELLED by 1000\n"
      "2|2026-01-01T01:00:00|2026-01-01T01:00:00|2026-01-01T01:00:00|00:00:00|gres/gpu=8|gres/gpu=8|CANCELLED by 1000\n"
      "3|2026-01-01T02:00:00|2026-01-01T02:00:00|2026-01-01T04:00:00|02:00:00||gres/gpu=4|COMPLETED\n";
  TraceOptions o;
  auto t = ParseTrace(text, "c.txt", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  const auto by = ById(*t);
  EXPECT_EQ(by.size(), 2u);
  EXPECT_FALSE(by.count("1"));
  ASSERT_TRUE(by.count("2"));
  ASSERT_TRUE(by.count("3"));  // AllocTRES empty but it ran: ReqTRES's GPUs
  EXPECT_EQ(by.at("3")->w.TotalGpus(), 4);
  EXPECT_EQ(t->skipped, (std::map<std::string, int64_t>{{"never started", 1}}));
  EXPECT_EQ(t->origin, "2026-01-01 01:00:00");  // the cancelled job is no trace time 0 either

  // Without AllocTRES: a CANCELLED job of no run time, or one whose NodeList is "None assigned".
  const std::string req =
      "JobID|Submit|Start|End|ReqTRES|NodeList|State\n"
      "4|2026-01-01T00:00:00|2026-01-01T00:05:00|2026-01-01T00:05:00|gres/gpu=8|None assigned|CANCELLED\n"
      "5|2026-01-01T00:00:00|2026-01-01T00:06:00|2026-01-01T00:06:00|gres/gpu=8|None assigned|FAILED\n"
      "6|2026-01-01T00:00:00|2026-01-01T00:07:00|2026-01-01T00:07:00|gres/gpu=8|node-1|FAILED\n"
      "7|2026-01-01T00:00:00|2026-01-01T00:08:00|2026-01-01T00:08:00|gres/gpu=8||CANCELLED by 0\n";
  auto r = ParseTrace(req, "r.txt", o);
  ASSERT_TRUE(r.ok()) << r.status().Message();
  ASSERT_EQ(r->jobs.size(), 1u);
  EXPECT_EQ(r->jobs[0].w.id, "6");
  EXPECT_EQ(r->skipped, (std::map<std::string, int64_t>{{"never started", 3}}));
}

// Monthly exports joined into one file (sacct ... >> history.txt): the header printed again is
// skipped, and a job listed by two exports (it ran across the boundary) is one run, not a requeued
// second run "1#2" holding its GPUs again. A requeued run (sacct -D: another Start) still is one.
TEST(SimTraceSacct, JoinedExportsListEachRunOnce) {
  const std::string h = "JobID|Submit|Start|End|Elapsed|AllocTRES|State\n";
  const std::string text =
      h + "1|2026-10-31T22:00:00|2026-10-31T22:00:05|2026-11-01T02:00:05|04:00:00|gres/gpu=8|COMPLETED\n" +
      "2|2026-10-31T23:00:00|2026-10-31T23:10:00|2026-10-31T23:20:00|00:10:00|gres/gpu=8|REQUEUED\n" + h +
      "1|2026-10-31T22:00:00|2026-10-31T22:00:05|2026-11-01T02:00:05|04:00:00|gres/gpu=8|COMPLETED\n" +
      "2|2026-10-31T23:00:00|2026-11-01T00:10:00|2026-11-01T00:20:00|00:10:00|gres/gpu=8|COMPLETED\n";
  TraceOptions o;
  o.on_bad_row = TraceOptions::OnBadRow::kFail;
  auto t = ParseTrace(text, "j.txt", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  const auto by = ById(*t);
  EXPECT_EQ(by.size(), 3u);
  for (const char* id : {"1", "2", "2#2"}) EXPECT_TRUE(by.count(id)) << id;
  EXPECT_EQ(t->rows, 5);  // the header printed again is a line read, and counted
  EXPECT_EQ(t->skipped, (std::map<std::string, int64_t>{{"header lines repeated (exports joined)", 1},
                                                         {"runs listed again (exports joined)", 1}}));
}

// sacct --json (Slurm 21.08+) is not read, and says so, asking for -P. Before, it was read as a
// trace document and refused on its first other key ("errors: unknown field"): removing the keys
// one by one led to "jobs[0].duration: required", never to the export the reader takes.
TEST(SimTraceSacct, SacctJsonIsRefusedAskingForParsableOutput) {
  const std::string text =
      "{\"meta\": {\"plugins\": {\"data_parser\": \"data_parser/v0.0.40\"}},\n"
      " \"jobs\": [{\"job_id\": 1, \"account\": \"ml\", \"time\": {\"elapsed\": 60, \"submission\": 1700000000}}],\n"
      " \"warnings\": [], \"errors\": []}\n";
  TraceOptions o;
  auto t = ParseTrace(text, "history.json", o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().Message().find("history.json:1: meta: sacct --json output is not read; export with sacct -X -P"),
            std::string::npos)
      << t.status().Message();
}

}  // namespace
}  // namespace tidal::sim
