#include "sim/trace.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <map>
#include <set>

#include "core/api/duration.h"
#include "core/io/document.h"
#include "core/io/workload_file.h"
#include "sim/trace_fields.h"
#include "sim/trace_reader.h"

namespace tidal::sim {
namespace {

using namespace trace_fields;  // NOLINT: the field helpers are this file's vocabulary
using trace_reader::Reader;
using trace_reader::Row;

// The format a file's content says, for --format auto: philly for a first line naming the columns
// philly needs (timestamp, duration, num_gpus, cluster) in any order, beside others (a pandas
// export's unnamed index column) or starting timestamp,duration,num_gpus; csv for a header (the first line that is not blank or a comment)
// of csv columns only, including submit, whatever the file's name; "" when neither.
std::string FormatByContent(const std::string& text) {
  std::string header;  // comments or blank lines may stand above a Philly header too
  for (size_t pos = 0; pos < text.size() && header.empty();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string l = text.substr(pos, nl - pos);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (!BlankRecord(l, DetectSeparator(l)) && Trim(l)[0] != '#') header = l;
    pos = nl + 1;
  }
  std::vector<std::string> cols;
  SplitCsv(header, &cols, DetectSeparator(header));
  if (cols.size() >= 3 && cols[0] == "timestamp" && cols[1] == "duration" && cols[2] == "num_gpus") return "philly";
  const std::set<std::string> first(cols.begin(), cols.end());
  if (first.count("timestamp") && first.count("duration") && first.count("num_gpus") && first.count("cluster")) return "philly";
  SplitCsv(header, &cols, DetectSeparator(header));
  bool jobid = false, submit_col = false;  // sacct -P: JobID and Submit, in any case
  for (const auto& c : cols) {
    const std::string l = AsciiLower(Trim(c));
    jobid = jobid || l == "jobid" || l == "jobidraw";
    submit_col = submit_col || l == "submit";
  }
  if (jobid && submit_col) return "sacct";
  // sacct without -P prints fixed-width columns: read as sacct, which asks for -P.
  if (cols.size() == 1) {
    const std::string l = AsciiLower(Trim(header).substr(0, 6));
    if (l == "jobid " || l == "jobid\t") return "sacct";
  }
  bool all = cols.size() >= 2, submit = false;
  for (const auto& c : cols) {
    all = all && trace_reader::CsvColumns().count(c) > 0;
    submit = submit || c == "submit";
  }
  return all && submit ? "csv" : "";
}

}  // namespace

Status trace_reader::Reader::Philly(const std::string& text, std::vector<Row>* rows) {
  std::map<std::string, size_t> col;
  size_t ncols = 0;
  Status header_error;
  bool stop = false, header_read = false;
  std::vector<std::string> f;
  ForEachLine(text, [&](int64_t line, const std::string& l) {
    if (stop || !header_error.ok()) return;
    if (!header_read) {  // the first line that is not blank or a # comment (a note above the table)
      sep_ = DetectSeparator(l);
      if (BlankRecord(l, sep_) || Trim(l)[0] == '#') return;
      header_read = true;
      const std::string at = file_ + ":" + std::to_string(line) + ": header: ";
      SplitCsv(l, &f, sep_);
      ncols = f.size();
      for (size_t i = 0; i < f.size(); ++i) {
        if (!col.emplace(f[i], i).second && header_error.ok()) {
          header_error = Status::Error(at + "column \"" + f[i] + "\" given twice");
        }
      }
      for (const char* need : {"timestamp", "duration", "num_gpus", "cluster"}) {
        if (!col.count(need) && header_error.ok()) {
          header_error = Status::Error(at + "missing column \"" + need +
                                       "\" (philly format: timestamp,duration,num_gpus,gpu_time,cluster)");
        }
      }
      return;
    }
    if (BlankRecord(l, sep_)) return;  // ",,,,": a spreadsheet's empty row
    ++trace_->rows;
    if (!Fields(line, l, ncols, &f, &stop)) return;
    Row r;
    const std::string& ts = f[col["timestamp"]];
    auto t = ParseTimestamp(ts);
    if (!t.ok()) {
      stop = !Bad(line, "timestamp", "invalid timestamp \"" + ts + "\" (expected YYYY-MM-DD HH:MM:SS)");
      return;
    }
    double dur = 0;
    const std::string& ds = f[col["duration"]];
    if (!ParseNumber(ds, &dur) || dur < 0 || dur > kMaxTraceSeconds) {
      stop = !Bad(line, "duration", "must be a number of seconds from 0 to 1e15, got \"" + ds + "\"");
      return;
    }
    int64_t gpus = 0;
    const std::string& gs = f[col["num_gpus"]];
    if (!ParseInt(gs, &gpus) || gpus < 1 || gpus > 1000000) {
      stop = !Bad(line, "num_gpus", "must be a whole number of GPUs from 1 to 1000000, got \"" + gs + "\"");
      return;
    }
    bool corrected = false;
    if (col.count("gpu_time")) {
      double gt = 0;
      const std::string& gts = f[col["gpu_time"]];
      if (!ParseNumber(gts, &gt) || gt < 0) {
        stop = !Bad(line, "gpu_time", "must be a number of GPU-seconds >= 0, got \"" + gts + "\"");
        return;
      }
      const GpuTimeCheck c = CheckGpuTime(gts, gt, ds, dur, gpus, opts_.gpu_time_tolerance);
      if (c == GpuTimeCheck::kDisagrees) {
        stop = !Bad(line, "gpu_time", "\"" + gts + "\" is not duration x num_gpus (" + ds + " x " + gs +
                                          "), not even within the columns' rounding or --gpu-time-tolerance");
        return;
      }
      corrected = c == GpuTimeCheck::kRounded;
    }
    const std::string& vc = f[col["cluster"]];
    const std::string queue = QueueName(vc);
    if (queue.empty()) {
      stop = !Bad(line, "cluster", "\"" + vc + "\" has no character of a queue name ([A-Za-z0-9])");
      return;
    }
    if (corrected) ++trace_->gpu_time_corrected;
    Workload& w = r.job.w;
    w.id = "philly-" + std::to_string(line);
    w.queue = queue;
    ShapeFromTotal(gpus, opts_.gpus_per_node, &w.members, &w.per_member.gpus);
    w.min_members = w.members;
    w.workload_class = WorkloadClass::kTraining;
    r.job.duration_s = static_cast<int64_t>(std::ceil(dur));
    r.job.line = line;
    r.raw_submit = *t;
    rows->push_back(std::move(r));
  });
  if (!header_error.ok()) return header_error;
  if (!header_read) {
    return Status::Error(file_ + ": header: none (philly format: timestamp,duration,num_gpus,gpu_time,cluster)");
  }
  if (stop) return Failed();
  return Status::Ok();
}

Status trace_reader::Reader::Json(const std::string& text, std::vector<Row>* rows) {
  auto doc = ParseDocument(text, file_);
  if (!doc.ok()) return doc.status();
  const nlohmann::json* list = &doc->root;
  std::string prefix;
  if (doc->root.is_object()) {
    if (!doc->root.contains("jobs")) return doc->Locate(Status::Error("document: expected {jobs: [...]} or a list of jobs"));
    // Slurm's own JSON (sacct --json, squeue --json): "meta" beside its "jobs", which are no trace's.
    if (doc->root.contains("meta") && doc->root.at("meta").is_object()) {
      return doc->Locate(Status::Error(
          "meta: sacct --json output is not read; export with sacct -X -P --format=JobID,Submit,Start,End,Elapsed,"
          "Timelimit,AllocTRES,ReqTRES,NNodes,Account,Partition,State (docs/simulator.md, \"sacct\")"));
    }
    for (const auto& [key, value] : doc->root.items()) {
      if (key != "jobs") return doc->Locate(Status::Error(key + ": unknown field (a trace document holds jobs only)"));
    }
    list = &doc->root.at("jobs");
    prefix = "jobs";
  }
  if (!list->is_array()) {
    // A line of text read as YAML is a string: most likely a table whose header this reader does not know.
    const std::string hint = list->is_string() ? " (read as YAML/JSON: for a table, name csv columns in its header "
                                                 "or give --format csv or philly)"
                                               : "";
    return doc->Locate(Status::Error((prefix.empty() ? "document" : prefix) + ": must be a list of jobs" + hint));
  }
  std::set<std::string> ids;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string p = prefix + "[" + std::to_string(i) + "]";
    const int64_t line = doc->LineOf(p);
    ++trace_->rows;
    auto bad = [&](const Status& s) {
      BadRow b;
      b.line = line;
      b.message = doc->Locate(s).Message();
      trace_->bad_rows.push_back(std::move(b));
      return opts_.on_bad_row == TraceOptions::OnBadRow::kSkip;
    };
    nlohmann::json j = (*list)[i];
    if (!j.is_object()) {
      if (!bad(Status::Error(p + ": must be a mapping"))) return Failed();
      continue;
    }
    Row r;
    if (!j.contains("duration")) {
      if (!bad(Status::Error(p + ".duration: required (actual run time)"))) return Failed();
      continue;
    }
    const auto& d = j.at("duration");
    const std::string ds = d.is_string() ? d.get<std::string>() : d.is_number() ? d.dump() : "";
    if (!ParseSeconds(ds, &r.job.duration_s)) {
      if (!bad(Status::Error(p + ".duration: " + SecondsError(ds.empty() ? d.dump() : ds)))) return Failed();
      continue;
    }
    j.erase("duration");
    if (j.contains("queue") && j.at("queue").is_string()) {
      const std::string qs = j.at("queue").get<std::string>();
      const std::string q = QueueName(qs);
      if (q.empty()) {
        if (!bad(Status::Error(p + ".queue: \"" + qs + "\" has no character of a queue name ([A-Za-z0-9])"))) return Failed();
        continue;
      }
      j["queue"] = q;
    }
    auto w = DecodeWorkload(j, p);
    if (!w.ok()) {
      if (!bad(w.status())) return Failed();
      continue;
    }
    if (!ids.insert(w->id).second) {
      if (!bad(Status::Error(p + ".name: duplicate job \"" + w->id + "\""))) return Failed();
      continue;
    }
    r.job.w = std::move(w).value();
    r.job.line = line;
    r.raw_submit = r.job.w.submit_time_s;
    rows->push_back(std::move(r));
  }
  return Status::Ok();
}

namespace {

// Trace seconds scaled by a factor (--load-scale, --limit-factor), as whole seconds: held within
// +-1e18 (an int64 holds 9.2e18), so a huge duration times a large factor cannot overflow.
int64_t WholeSeconds(double s) { return static_cast<int64_t>(std::clamp(s, -1e18, 1e18)); }

}  // namespace

namespace {

// A number as "%g" (2e+06, 0.5): a message never prints 300 digits.
std::string Num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// An error of an option, not of the file: the flag is the Status's plugin (trace.h).
Status FlagError(const std::string& flag, const std::string& why) { return Status::Error(flag + ": " + why, flag); }

// Whether a window bound is written as a timestamp (ParseWindowBound reads it so).
bool TimestampBound(const std::string& text) {
  return text.find('-') != std::string::npos && text.size() >= 10 && std::isdigit(static_cast<unsigned char>(text[0]));
}

// --from/--to as far as no trace is needed: each bound's syntax, and their order when both are
// timestamps or both durations.
Status CheckWindow(const TraceOptions& opts) {
  int64_t bound[2] = {0, 0};
  const std::string* text[2] = {&opts.from, &opts.to};
  const std::string* flag[2] = {&opts.from_flag, &opts.to_flag};
  for (int i = 0; i < 2; ++i) {
    if (text[i]->empty()) continue;
    auto v = ParseWindowBound(*text[i], TimestampBound(*text[i]), 0, *flag[i]);
    if (!v.ok()) return Status::Error(v.status().Message(), *flag[i]);
    bound[i] = *v;
  }
  if (!opts.from.empty() && !opts.to.empty() && TimestampBound(opts.from) == TimestampBound(opts.to) && bound[1] <= bound[0]) {
    return FlagError(opts.to_flag, "must be after " + opts.from_flag + " (" + opts.from + "), got " + opts.to);
  }
  return Status::Ok();
}

}  // namespace

Status CheckTraceOptions(const TraceOptions& opts) {
  if (!(opts.limit_factor >= 1.0) || opts.limit_factor > 1e6) {
    return FlagError("--limit-factor", "must be in [1, 1e6] (declared limit = actual x factor), got " + Num(opts.limit_factor));
  }
  if (!(opts.gpu_time_tolerance >= 0) || opts.gpu_time_tolerance > 1) {
    return FlagError("--gpu-time-tolerance", "must be in [0, 1] (0.01 = 1%), got " + Num(opts.gpu_time_tolerance));
  }
  if (!(opts.load_scale >= 1e-6) || opts.load_scale > 1e6) {
    return FlagError("--load-scale", "must be in [1e-6, 1e6] (submit times are divided by it), got " + Num(opts.load_scale));
  }
  const std::string& f = opts.format;
  if (f != "auto" && f != "philly" && f != "csv" && f != "json" && f != "sacct") {
    return FlagError("--format", "unknown trace format \"" + f + "\" (accepted: auto, philly, csv, json, sacct)");
  }
  if (Status c = CheckColumns(opts.columns); !c.ok()) return Status::Error(c.Message(), "--columns");
  if (!opts.columns.empty() && f != "auto" && f != "csv") {
    return Status::Error("--columns: only csv tables are read by column names of their own, not --format " + f, "--columns");
  }
  return CheckWindow(opts);
}

StatusOr<Trace> ParseTrace(const std::string& raw_text, const std::string& raw_file, const TraceOptions& opts) {
  if (Status s = CheckTraceOptions(opts); !s.ok()) return s;
  // Latin-1 bytes become UTF-8 here, once: every name read from the text is then valid UTF-8.
  const std::string text = ToUtf8(WithoutBom(raw_text));
  Trace t;
  t.file = ToUtf8(raw_file);
  const std::string& file = t.file;
  std::string fmt = opts.format;
  if (fmt == "auto") {
    fmt = opts.columns.empty() ? FormatByContent(text) : "csv";
    if (fmt.empty()) fmt = file.size() >= 4 && file.substr(file.size() - 4) == ".csv" ? "csv" : "json";
  }
  t.format = fmt;
  std::vector<Row> rows;
  Reader reader(file, opts, &t);
  Status s;
  if (fmt == "philly") {
    s = reader.Philly(text, &rows);
  } else if (fmt == "csv") {
    s = reader.Csv(text, &rows);
  } else if (fmt == "json") {
    s = reader.Json(text, &rows);
  } else {
    s = reader.Sacct(text, &rows);  // CheckTraceOptions took no other format
  }
  if (!s.ok()) return s;
  reader.Finish();

  // Trace time: philly and sacct rows (and csv rows with timestamps) are unix seconds, rebased to
  // the earliest row; the others are already seconds on the replay clock.
  const bool timestamps = fmt == "philly" || fmt == "sacct" || (fmt == "csv" && reader.csv_timestamps());
  int64_t origin = 0;
  if (timestamps && !rows.empty()) {
    origin = rows.front().raw_submit;
    for (const auto& r : rows) origin = std::min(origin, r.raw_submit);
    t.origin_unix = origin;
    const int64_t days = origin >= 0 ? origin / 86400 : (origin - 86399) / 86400;
    const int64_t sec = origin - days * 86400;
    // civil_from_days (H. Hinnant)
    const int64_t z = days + 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    const unsigned d = doy - (153 * mp + 2) / 5 + 1;
    const unsigned m = mp < 10 ? mp + 3 : mp - 9;
    const int64_t y = static_cast<int64_t>(yoe) + era * 400 + (m <= 2);
    char buf[128];
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u %02lld:%02lld:%02lld", static_cast<long long>(y), m, d,
                  static_cast<long long>(sec / 3600), static_cast<long long>(sec / 60 % 60),
                  static_cast<long long>(sec % 60));
    t.origin = buf;
  }
  int64_t from = INT64_MIN, to = INT64_MAX;
  if (!opts.from.empty()) {
    auto v = ParseWindowBound(opts.from, timestamps, origin, opts.from_flag);
    if (!v.ok()) return Status::Error(v.status().Message(), opts.from_flag);
    from = *v;
  }
  if (!opts.to.empty()) {
    auto v = ParseWindowBound(opts.to, timestamps, origin, opts.to_flag);
    if (!v.ok()) return Status::Error(v.status().Message(), opts.to_flag);
    to = *v;
  }
  if (from != INT64_MIN && to != INT64_MAX && to <= from) {
    return FlagError(opts.to_flag, "must be after " + opts.from_flag + " (" + opts.from + "), got " + opts.to);
  }
  const int64_t base = from == INT64_MIN ? 0 : from;
  for (auto& r : rows) r.raw_submit -= origin;
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.raw_submit != b.raw_submit ? a.raw_submit < b.raw_submit : a.job.line < b.job.line;
  });
  for (auto& r : rows) {
    if (r.raw_submit < from || r.raw_submit >= to) {
      ++t.outside_window;
      continue;
    }
    if (opts.max_jobs > 0 && static_cast<int64_t>(t.jobs.size()) >= opts.max_jobs) break;
    SimJob j = std::move(r.job);
    j.w.submit_time_s = WholeSeconds(std::floor(static_cast<double>(r.raw_submit - base) / opts.load_scale));
    if (j.w.runtime_limit_s <= 0) {
      j.w.runtime_limit_s = std::max<int64_t>(1, WholeSeconds(std::ceil(static_cast<double>(j.duration_s) * opts.limit_factor)));
    }
    t.jobs.push_back(std::move(j));
  }
  return t;
}

StatusOr<Trace> LoadTrace(const std::string& path, const TraceOptions& opts) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseTrace(*text, path, opts);
}

}  // namespace tidal::sim
