// Trace readers for the simulator: job tables in, SimJobs (Workload + actual duration) out.
//
// Formats (docs/simulator.md has the full reference):
//   philly  the Philly job table derived by the Pollux authors (../shared/traces/philly-pollux):
//           header `timestamp,duration,num_gpus,gpu_time,cluster`, rows in any order.
//           timestamp "YYYY-MM-DD HH:MM:SS" (submit; trace time 0 = the earliest row),
//           duration seconds (float; rounded UP to whole seconds), num_gpus total GPUs,
//           gpu_time must equal duration x num_gpus within the columns' rounding or
//           gpu_time_tolerance (trace_fields.h), cluster = virtual cluster -> queue name.
//   csv     generic CSV with a header naming its columns (any order):
//             submit (required, seconds), duration (required, seconds), id, queue,
//             gpus (total) and/or members + gpus_per_member, min_members, priority,
//             limit (declared runtime limit, seconds), required, preferred (topology levels),
//             preemptible (true/false), class.
//   json    a YAML/JSON document {jobs: [...]} (or a top-level list): each entry is a workload as
//           in workload files (core/io/workload_file.h: name, queue, members, request, ...,
//           submitTime, runtimeLimit) plus `duration` (required).
//   sacct   a Slurm cluster's history, `sacct -X -P --format=JobID,Submit,Start,End,Elapsed,
//           Timelimit,AllocTRES,ReqTRES,NNodes,Account,Partition,State` (sim/trace_sacct.cc has the
//           columns): timestamps like philly's, GPUs from the TRES, queue = Account. Steps, jobs
//           never started or not ended, CPU-only jobs, and a header or run repeated by exports
//           joined into one file are skipped and counted (Trace::skipped).
// Format "auto" picks philly for a header starting "timestamp,duration,num_gpus" (or naming
// timestamp, duration, num_gpus and cluster in any order, beside others), sacct for a header
// with JobID and Submit columns (any case), csv for a
// header of csv columns (including submit) whatever the file's name, and for other .csv files,
// json otherwise. Tables are comma-separated unless their header has no comma but a
// tab, ';' or '|' (trace_fields.h, DetectSeparator); a leading UTF-8 byte order mark is ignored.
//
// GPU shape: a job of G total GPUs (philly, or csv with only `gpus`) becomes one member of G GPUs
// when G fits on one node, else G/d members of d GPUs with d the largest divisor of G that fits on
// a node (128 -> 16 x 8, 12 -> 2 x 6 on 8-GPU nodes). CPU and memory requests are zero: the traces
// carry GPUs only.
//
// Runtime-estimate model: traces give actual durations only. A job without a declared limit gets
// declared limit = ceil(actual x limit_factor) (limit_factor >= 1, default 2). Only schedulers see
// the limit; a job runs for its actual duration (killed at the limit if it is shorter).
//
// Window and load scaling: jobs submitted in [from, to) of trace time are kept; their submit
// times are rebased to the window start and divided by load_scale (time compression: 2 = twice
// the arrival rate; durations unchanged).
//
// Queue names (philly cluster, csv queue, json queue) are normalised to valid queue names: "LS" ->
// "ls", "ml_infra.eu" -> "ml-infra-eu" (rules in trace_fields.h); the changes are kept in the Trace.
//
// Malformed rows are never dropped silently: each is reported as "file:line: column: reason" in
// Trace::bad_rows and skipped, or the whole read fails on the first one (OnBadRow::kFail).
// Threading: plain functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/status.h"
#include "sim/simulator.h"

namespace tidal::sim {

struct TraceOptions {
  enum class OnBadRow { kSkip, kFail };
  std::string format = "auto";  // auto | philly | csv | json | sacct
  OnBadRow on_bad_row = OnBadRow::kSkip;
  int64_t gpus_per_node = 8;    // for the GPU shape of total-GPU rows
  double limit_factor = 2.0;    // declared limit = ceil(actual x factor) when a row declares none
  // Window on trace time, each "" (open), a timestamp "2017-10-01[ 12:00[:00]]" (traces with
  // timestamps) or a duration from the trace origin ("30d", "3600").
  std::string from, to;
  std::string from_flag = "--from", to_flag = "--to";  // the flags they came from, for errors
  double load_scale = 1.0;      // submit times are divided by this
  int64_t max_jobs = 0;         // 0 = all; else the first N jobs in submit order (after the window)
  // philly gpu_time vs duration x num_gpus: relative error accepted beyond the columns' rounding.
  double gpu_time_tolerance = 0.01;
  // csv: the file's own header names for csv columns (--columns submit=submit_time,gpus=gpu_num):
  // csv column -> header name. With any, the header's other columns are ignored (Trace::ignored_columns).
  std::map<std::string, std::string> columns;
};

struct BadRow {
  int64_t line = 0;
  std::string message;  // "file:line: column: reason"
};

struct Trace {
  std::string file, format;
  std::vector<SimJob> jobs;      // by (submit time, line)
  std::vector<BadRow> bad_rows;  // in file order
  int64_t rows = 0;              // data rows read (good + bad)
  int64_t outside_window = 0;
  std::string origin;            // philly: the timestamp of trace time 0
  int64_t origin_unix = 0;       // philly: trace time 0 as seconds since 1970 (timestamps read as UTC)
  int64_t gpu_time_corrected = 0;  // philly rows whose gpu_time agreed only within rounding/tolerance
  // Rows read but not jobs to replay, by why (sacct: "job steps ...", "never started", "not ended",
  // "no GPUs ...", "header lines repeated ...", "runs listed again ..."): well formed, so not bad_rows, and counted so that none is dropped silently.
  std::map<std::string, int64_t> skipped;
  std::vector<std::string> ignored_columns;  // csv with --columns: the header's columns not read
  std::map<std::string, std::string> queue_renames;  // trace queue name -> normalised, changed ones only
  std::vector<std::string> queue_merges;             // "ls <- LS, ls": distinct names made one queue
};

// --columns: "submit=submit_time,gpus=gpu_num" as csv column -> header name; errors name the item
// (not NAME=HEADER, NAME not a csv column, a name twice, two names for one header).
StatusOr<std::map<std::string, std::string>> ParseColumns(const std::string& text);
Status CheckColumns(const std::map<std::string, std::string>& columns);
// "1%" or "0.01" as 0.01 (0..1); the error names `flag`.
StatusOr<double> ParseRelativeTolerance(const std::string& text, const std::string& flag);
// "LS -> ls, BE -> be" and the merges, for the report's input section; "" when nothing changed.
std::string DescribeQueueNames(const Trace& t);
// "40 job steps (sacct -X leaves them out), 3 never started": Trace::skipped; "" when none.
std::string DescribeSkipped(const Trace& t);

// The options that need no trace, checked as the flags they come from (--format, --load-scale,
// --limit-factor, --gpu-time-tolerance, --columns, the syntax of --from/--to and their order when
// both are of one kind); the error names the flag and the accepted range.
Status CheckTraceOptions(const TraceOptions& opts);
// Errors that come from an option rather than from the file (CheckTraceOptions', and a window
// bound the trace cannot take: a timestamp on a trace without timestamps) carry the flag as
// Status::plugin() ("--from"): a usage error for the caller. Others are the file's.
// Text is read as UTF-8, a byte that is not valid UTF-8 as Latin-1 (AsUtf8): every name kept in the
// Trace (ids, queues, the file name) is valid UTF-8.
StatusOr<Trace> LoadTrace(const std::string& path, const TraceOptions& opts);
StatusOr<Trace> ParseTrace(const std::string& text, const std::string& file, const TraceOptions& opts);
// `text` as valid UTF-8: a byte that is not part of valid UTF-8 is read as Latin-1 (0xE9 -> "é").
std::string AsUtf8(std::string_view text);

// "YYYY-MM-DD HH:MM:SS" (or "YYYY-MM-DD", "YYYY-MM-DDTHH:MM[:SS]") as seconds since 1970, read as UTC.
StatusOr<int64_t> ParseTimestamp(const std::string& text);
// A window bound as trace time: a timestamp (only when `has_timestamps`; relative to
// `origin_unix`) or a duration from the trace origin ("30d", "3600").
StatusOr<int64_t> ParseWindowBound(const std::string& text, bool has_timestamps, int64_t origin_unix,
                                   const std::string& flag);
// The GPU shape of G total GPUs on nodes of `gpus_per_node` (see the header comment).
void ShapeFromTotal(int64_t gpus, int64_t gpus_per_node, int32_t* members, int64_t* per_member);

}  // namespace tidal::sim
