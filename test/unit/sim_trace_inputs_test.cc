// Trace files as users' tools write them (sim/trace.h): a byte order mark, CRLF, tab-, ';'- or
// '|'-separated tables, quoted fields, header mistakes, zero-GPU members and out-of-range times,
// each read or refused with the line and column named.
// Threading: single-threaded tests.
#include <map>
#include <vector>

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
  EXPECT_EQ(t->bad_rows[0].message, "z.csv:2: gpus_per_member: must be a whole number from 1 to 1000000, got \"0\"");
  o.on_bad_row = TraceOptions::OnBadRow::kFail;
  EXPECT_FALSE(ParseTrace("id,submit,duration,members,gpus_per_member\na,0,100,2,0\n", "z.csv", o).ok());
}

TEST(SimTraceInputs, TimesInEveryFormUsersWriteAndErrorsThatSayWhatIsWrong) {
  TraceOptions o;
  auto t = ParseTrace(
      "id,submit,duration,gpus,limit\n"
      "a,0,400d,1,\n"                   // 2: a duration over 365 days (was refused as "not a duration")
      "b,0,00:10:00,1,1-00:00:00\n"      // 3: sacct's Elapsed and Timelimit
      "c,0,123:00:00,1,\n"               // 4: hours without a day part
      "d,0,1e16,1,\n"                    // 5: a number out of range
      "e,2024-01-01T00:00:00,10,1,\n"    // 6: a timestamp
      "f,0,10,1,0\n"                     // 7: a zero limit
      "g,0,1-25:00:00,1,\n"              // 8: 25 hours after a day part
      "h,0,10:61:00,1,\n"                // 9: 61 minutes
      "i,0,99999999999999d,1,\n",        // 10: a duration out of range
      "t.csv", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  ASSERT_EQ(t->jobs.size(), 3u) << AllBad(*t);
  EXPECT_EQ(t->jobs[0].duration_s, 400 * 86400);
  EXPECT_EQ(t->jobs[1].duration_s, 600);
  EXPECT_EQ(t->jobs[1].w.runtime_limit_s, 86400);
  EXPECT_EQ(t->jobs[2].duration_s, 123 * 3600);
  const std::string forms = "must be seconds from 0 to 1e15, a duration (90s, 2h, 1h30m) or [D-]HH:MM:SS, got ";
  const std::vector<std::string> want = {
      "t.csv:5: duration: " + forms + "\"1e16\" (more than 1e15 s)",
      // The first row's submit is seconds: the file's are (a file of timestamps: CsvTimestamps...).
      "t.csv:6: submit: \"2024-01-01T00:00:00\" is a timestamp, but line 2's submit, the first read, is seconds: a "
      "file's submit times are all seconds on the replay clock or all timestamps",
      "t.csv:7: limit: must be more than 0 s, got \"0\"",
      "t.csv:8: duration: " + forms + "\"1-25:00:00\"",
      "t.csv:9: duration: " + forms + "\"10:61:00\"",
      "t.csv:10: duration: " + forms + "\"99999999999999d\" (more than 1e15 s)",
  };
  ASSERT_EQ(t->bad_rows.size(), want.size()) << AllBad(*t);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(t->bad_rows[i].message, want[i]);

  auto j = ParseTrace("jobs:\n- {name: a, request: {gpus: 1}, duration: 400d}\n- {name: b, request: {gpus: 1}, duration: 1e30}\n",
                      "j.yaml", o);
  ASSERT_TRUE(j.ok()) << j.status().Message();
  ASSERT_EQ(j->jobs.size(), 1u) << AllBad(*j);
  EXPECT_EQ(j->jobs[0].duration_s, 400 * 86400);
  ASSERT_EQ(j->bad_rows.size(), 1u);
  EXPECT_EQ(j->bad_rows[0].message, "j.yaml:3: jobs[1].duration: " + forms + "\"1e+30\" (more than 1e15 s)");
  // Window bounds take the same durations.
  auto w = ParseWindowBound("400d", false, 0, "--from");
  ASSERT_TRUE(w.ok()) << w.status().Message();
  EXPECT_EQ(*w, 400 * 86400);
}

TEST(SimTraceInputs, AutoFormatReadsATableByItsHeaderWhateverTheFileName) {
  // Before, a csv table in a file not named .csv was parsed as YAML: "document: must be a list of jobs".
  TraceOptions o;
  auto t = ParseTrace("# exported by our tool\nid\tsubmit\tduration\tgpus\na\t0\t100\t1\n", "jobs.tsv", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  EXPECT_EQ(t->format, "csv");
  EXPECT_EQ(t->jobs.size(), 1u) << AllBad(*t);
  auto p = ParseTrace("timestamp,duration,num_gpus,cluster\n2017-10-01 00:00:00,100.0,1,vc1\n", "philly.txt", o);
  ASSERT_TRUE(p.ok()) << p.status().Message();
  EXPECT_EQ(p->format, "philly");
  // YAML stays YAML; a table of unknown columns in a .txt is still read as YAML and refused.
  auto j = ParseTrace("jobs:\n- {name: a, request: {gpus: 1}, duration: 10}\n", "jobs.txt", o);
  ASSERT_TRUE(j.ok()) << j.status().Message();
  EXPECT_EQ(j->format, "json");
  auto unknown = ParseTrace("Task|When|Took\n1|2024-01-01|00:10:00\n", "export.txt", o);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().Message().find("must be a list of jobs (read as YAML/JSON: for a table, name csv columns"),
            std::string::npos)
      << unknown.status().Message();
  // A sacct export (JobID and Submit columns) is read as one (sim_trace_sacct_test.cc), and one
  // without a GPU column is refused naming it.
  auto sacct = ParseTrace("JobID|Submit|Elapsed\n1|2024-01-01|00:10:00\n", "sacct.txt", o);
  ASSERT_FALSE(sacct.ok());
  EXPECT_NE(sacct.status().Message().find("sacct.txt:1: header: needs an AllocTRES or ReqTRES column (the GPUs)"), std::string::npos)
      << sacct.status().Message();
}

// The Philly table sorted (its SOURCE.md: rows are not in order) and saved by pandas, which adds
// an unnamed index column first, or with its columns in another order: still philly for auto. Before,
// only a header starting timestamp,duration,num_gpus was; these were read as csv and refused with
// 'unknown column ""' pointing at --columns.
TEST(SimTraceInputs, AutoFormatReadsAPhillyTableWhateverItsColumnOrder) {
  TraceOptions o;
  for (const std::string text :
       {",timestamp,duration,num_gpus,gpu_time,cluster\n0,2017-10-01 00:00:00,100.0,2,200.0,vc1\n1,2017-10-01 00:01:00,50.0,1,50.0,vc2\n",
        "cluster,timestamp,duration,num_gpus\nvc1,2017-10-01 00:00:00,100.0,2\nvc2,2017-10-01 00:01:00,50.0,1\n"}) {
    auto t = ParseTrace(text, "philly_sorted.csv", o);
    ASSERT_TRUE(t.ok()) << t.status().Message();
    EXPECT_EQ(t->format, "philly") << text;
    ASSERT_EQ(t->jobs.size(), 2u) << AllBad(*t);
    EXPECT_EQ(t->jobs[0].w.TotalGpus(), 2);
    EXPECT_EQ(t->jobs[0].duration_s, 100);
    EXPECT_EQ(t->jobs[0].w.queue, "vc1");
    EXPECT_EQ(t->jobs[1].w.submit_time_s, 60);
  }
}

// A Philly table with a comment or a blank line above its header (a note from whoever exported it), as
// csv tables may have: the header is the first line that is neither, under --format auto and philly.
// Before, line 1 was taken as the header: "missing column timestamp", or auto fell to csv/json.
TEST(SimTraceInputs, APhillyTableMayHaveCommentsAboveItsHeader) {
  TraceOptions o;
  o.on_bad_row = TraceOptions::OnBadRow::kFail;
  const std::string text = "# Philly, exported 2017-12-01 by ops\n\ntimestamp,duration,num_gpus,gpu_time,cluster\n"
                           "2017-10-01 00:00:00,100.0,2,200.0,vc1\n2017-10-01 00:01:00,50.0,1,50.0,vc2\n";
  for (const char* format : {"auto", "philly"}) {
    o.format = format;
    auto t = ParseTrace(text, "philly_noted.csv", o);
    ASSERT_TRUE(t.ok()) << format << ": " << t.status().Message();
    EXPECT_EQ(t->format, "philly") << format;
    ASSERT_EQ(t->jobs.size(), 2u) << format;
    EXPECT_EQ(t->jobs[1].w.submit_time_s, 60);
  }
  // A header that is missing a column is named at its own line.
  o.format = "philly";
  auto bad = ParseTrace("# note\ntimestamp,duration,gpu_time,cluster\n", "p.csv", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().Message().find("p.csv:2: header: missing column \"num_gpus\""), std::string::npos) << bad.status().Message();
}

// Submit times in Unix milliseconds (an exporter's epoch_ms) were read as seconds: the trace came out
// spread 1000 x, silently. A submit past 1e11 s (the year 5138) is now malformed, saying so.
TEST(SimTraceInputs, SubmitTimesInMillisecondsAreRefusedNotSpread) {
  TraceOptions o;
  o.on_bad_row = TraceOptions::OnBadRow::kFail;
  auto t = ParseTrace("id,submit,duration,gpus\na,1700000000000,60,1\nb,1700000060000,60,1\n", "ms.csv", o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().Message().find("ms.csv:2: submit: \"1700000000000\" seconds is after the year 5000 as a Unix time: "
                                      "milliseconds? Give seconds (1700000000)"),
            std::string::npos)
      << t.status().Message();
  auto secs = ParseTrace("id,submit,duration,gpus\na,1700000000,60,1\nb,1700000060,60,1\n", "s.csv", o);
  ASSERT_TRUE(secs.ok()) << secs.status().Message();
  EXPECT_EQ(secs->jobs[1].w.submit_time_s - secs->jobs[0].w.submit_time_s, 60);
}

// A spreadsheet saves rows it once formatted as lines of separators only (",,,"): blank rows, skipped
// like blank lines in every table format and not counted, never malformed (which refused the whole
// file under --on-bad-row fail).
TEST(SimTraceInputs, RowsOfEmptyFieldsAreBlankLines) {
  TraceOptions o;
  o.on_bad_row = TraceOptions::OnBadRow::kFail;
  const std::map<std::string, std::string> texts = {
      {"csv", ",,,\nid,submit,duration,gpus\na,0,60,2\n,,,\n\"\",\"\" , ,\r\n"},
      {"philly", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,60.0,2,120.0,vc1\n,,,,\n"},
      {"sacct", "JobID|Submit|Elapsed|AllocTRES|\n1|2026-01-01T00:00:00|00:01:00|gres/gpu=2|\n||||\n|||\n"}};
  for (const auto& [format, text] : texts) {
    auto t = ParseTrace(text, "blank.csv", o);
    ASSERT_TRUE(t.ok()) << format << ": " << t.status().Message();
    EXPECT_EQ(t->format, format);
    ASSERT_EQ(t->jobs.size(), 1u) << format;
    EXPECT_EQ(t->jobs[0].w.TotalGpus(), 2) << format;
    EXPECT_EQ(t->rows, 1) << format;
  }
}

// A table exported by another tool (Helios-like: its own column names, submit as timestamps, columns
// the simulator does not read): --columns names the columns to read, the rest are ignored and
// listed, and timestamps are rebased to the earliest like philly's.
TEST(SimTraceInputs, CsvTimestampsAndColumnsByTheirOwnNames) {
  const std::string text =
      "job_id,user,node_num,gpu_num,cpu_num,state,submit_time,duration,vc\n"
      "j1,alice,2,16,64,COMPLETED,2020-04-01 00:10:00,3600,VC_A\n"
      "j2,bob,1,1,8,FAILED,2020-04-01 00:00:00,60,vc_b\n"
      "j3,bob,1,2,8,COMPLETED,300,60,vc_b\n"  // 4: seconds in a file of timestamps
      "j4,carol,1,4,8,COMPLETED,2020-04-01 01:00:00,1h,VC_A\n";
  TraceOptions o;
  o.columns = {{"id", "job_id"}, {"gpus", "gpu_num"}, {"submit", "submit_time"}, {"queue", "vc"}};
  auto t = ParseTrace(text, "helios.csv", o);
  ASSERT_TRUE(t.ok()) << t.status().Message();
  EXPECT_EQ(t->format, "csv");
  EXPECT_EQ(t->ignored_columns, (std::vector<std::string>{"user", "node_num", "cpu_num", "state"}));
  ASSERT_EQ(t->jobs.size(), 3u) << AllBad(*t);
  EXPECT_EQ(t->origin, "2020-04-01 00:00:00");
  EXPECT_EQ(t->jobs[0].w.id, "j2");
  EXPECT_EQ(t->jobs[0].w.submit_time_s, 0);
  EXPECT_EQ(t->jobs[1].w.id, "j1");
  EXPECT_EQ(t->jobs[1].w.submit_time_s, 600);
  EXPECT_EQ(t->jobs[1].w.members, 2);
  EXPECT_EQ(t->jobs[1].w.queue, "vc-a");
  EXPECT_EQ(t->jobs[2].w.submit_time_s, 3600);
  ASSERT_EQ(t->bad_rows.size(), 1u);
  EXPECT_EQ(t->bad_rows[0].message, "helios.csv:4: submit: \"300\" is seconds, but line 2's submit, the first read, is a timestamp: a file's submit "
                                    "times are all seconds on the replay clock or all timestamps");
  // Windows take timestamps on such a file.
  o.from = "2020-04-01 00:05:00";
  auto w = ParseTrace(text, "helios.csv", o);
  ASSERT_TRUE(w.ok()) << w.status().Message();
  EXPECT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->outside_window, 1);
  o.from.clear();

  // Errors name the flag's item, or the header.
  auto err = [&](std::map<std::string, std::string> cols, const std::string& format = "auto") {
    TraceOptions x;
    x.columns = std::move(cols);
    x.format = format;
    auto r = ParseTrace(text, "helios.csv", x);
    return r.ok() ? std::string("accepted") : r.status().Message();
  };
  EXPECT_EQ(err({{"gpu", "gpu_num"}}).rfind("--columns gpu=gpu_num: \"gpu\" is not a csv column (accepted: class, ", 0), 0u);
  EXPECT_EQ(err({{"gpus", "gpu_num"}, {"members", "gpu_num"}}), "--columns: gpus and members both read column \"gpu_num\"");
  EXPECT_EQ(err({{"submit", "submitted"}, {"duration", "duration"}, {"gpus", "gpu_num"}}),
            "helios.csv:1: header: --columns submit=submitted: no column \"submitted\" in the header");
  EXPECT_EQ(err({{"gpus", "gpu_num"}}, "philly"), "--columns: only csv tables are read by column names of their own, not --format philly");
  // The flag's text.
  auto cols = ParseColumns("submit=submit_time, gpus=gpu_num");
  ASSERT_TRUE(cols.ok()) << cols.status().Message();
  EXPECT_EQ(*cols, (std::map<std::string, std::string>{{"gpus", "gpu_num"}, {"submit", "submit_time"}}));
  EXPECT_EQ(ParseColumns("submit").status().Message(),
            "--columns: expected NAME=HEADER[,NAME=HEADER...] (submit=submit_time), got \"submit\"");
  EXPECT_EQ(ParseColumns("gpus=a,gpus=b").status().Message(), "--columns: gpus given twice");
  EXPECT_EQ(ParseColumns("queue=").status().Message(), "--columns queue=: the header name is empty");
  // Without --columns the same header is refused, naming the flag.
  auto strict = ParseTrace(text, "helios.csv", TraceOptions{});
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().Message().find("unknown column \"job_id\""), std::string::npos) << strict.status().Message();
  EXPECT_NE(strict.status().Message().find("--columns NAME=HEADER"), std::string::npos);
}

}  // namespace
}  // namespace tidal::sim
