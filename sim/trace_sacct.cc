// The sacct reader (sim/trace.h, format "sacct"): a Slurm cluster's own job history as printed by
//   sacct -a -X -P -S 2026-11-01 -E 2026-12-01
//         --format=JobID,Submit,Start,End,Elapsed,Timelimit,AllocTRES,ReqTRES,NNodes,Account,Partition,State
// A header names the columns, in any order and any case; columns this reader does not use are
// ignored (sacct has a hundred). `-p` (a trailing '|' on every line) reads like `-P`. sacct never
// quotes, so a '"' in a '|'-separated row is text (a JobName "train \"big"); a table with another
// separator (a spreadsheet's export) may be RFC 4180 quoted. Exports joined into one file: the
// header printed again is skipped, and a run listed again (same JobID, Submit, Start, End, Elapsed)
// is one run; both are counted.
//
// Columns read (docs/simulator.md, "sacct"):
//   JobID                    the job's id (JobIDRaw when JobID is absent); a step ("123.batch",
//                            "123.0": sacct without -X) is skipped and counted
//   Submit                   submit time, a timestamp (2026-11-02T10:15:03)
//   Start, End               a job that never started (Start Unknown/None; or no run time and no
//                            allocation: a job cancelled while pending, which Slurm gives Start =
//                            End, AllocTRES empty, NodeList "None assigned") or has not ended (End
//                            Unknown, State RUNNING...) is skipped and counted
//   Elapsed / ElapsedRaw     actual run time; else End - Start
//   Timelimit / TimelimitRaw declared limit ([D-]HH:MM:SS; raw: minutes); UNLIMITED,
//                            Partition_Limit: none declared (--limit-factor applies)
//   AllocTRES, ReqTRES       GPUs: gres/gpu=N (else the sum of gres/gpu:TYPE=N); AllocTRES when
//                            it has a value (what the job got), else ReqTRES. No GPU: skipped, counted
//   NNodes (AllocNodes, ReqNodes)  the gang: N GPUs on k nodes are k members of N/k GPUs when k
//                            divides N and N/k fits a node; else the shape of N total GPUs
//   Account, else Partition  the queue (normalised as every trace's queue names)
//   State                    PENDING: never started (skipped, counted); without an End column,
//                            RUNNING, SUSPENDED, REQUEUED, RESIZING: not ended (skipped, counted)
// A repeated JobID (sacct -D lists a requeued job's earlier runs) is another run of the job, its
// id suffixed "#2", "#3": each run held its GPUs.
// Threading: a Reader method (trace_reader.h).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/trace_fields.h"
#include "sim/trace_reader.h"

namespace tidal::sim {
namespace {

using namespace trace_fields;  // NOLINT: the field helpers are this file's vocabulary

// sacct's words for a time or a limit that is not there.
bool Absent(const std::string& v) {
  const std::string l = AsciiLower(Trim(v));
  return l.empty() || l == "unknown" || l == "none" || l == "n/a";
}

bool NoLimit(const std::string& v) {
  const std::string l = AsciiLower(Trim(v));
  return Absent(v) || l == "unlimited" || l == "partition_limit" || l == "invalid";
}

// GPUs in a TRES string ("billing=8,cpu=8,gres/gpu=8,gres/gpu:a100=8,mem=64G,node=1"): gres/gpu,
// else the sum of its typed counts. -1 when a GPU count is not a whole number.
int64_t TresGpus(const std::string& tres) {
  int64_t total = -2, typed = 0;
  size_t pos = 0;
  while (pos <= tres.size()) {
    size_t comma = tres.find(',', pos);
    if (comma == std::string::npos) comma = tres.size();
    const std::string item = Trim(tres.substr(pos, comma - pos));
    pos = comma + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = AsciiLower(item.substr(0, eq));
    if (key != "gres/gpu" && key.rfind("gres/gpu:", 0) != 0) continue;
    int64_t n = 0;
    if (!ParseInt(item.substr(eq + 1), &n) || n < 0) return -1;
    if (key == "gres/gpu") {
      total = n;
    } else {
      typed += n;
    }
  }
  return total >= 0 ? total : typed;
}

// "2", or the first of a requested range "2-4".
bool ParseNodes(const std::string& s, int64_t* out) {
  const std::string t = Trim(s);
  const size_t dash = t.find('-');
  return ParseInt(dash == std::string::npos ? t : t.substr(0, dash), out) && *out >= 1;
}

struct Columns {
  std::map<std::string, size_t> at;  // lower-cased name -> index
  const std::string* Get(const std::vector<std::string>& f, const char* name) const {
    auto it = at.find(name);
    return it != at.end() && it->second < f.size() ? &f[it->second] : nullptr;
  }
  bool Has(const char* name) const { return at.count(name) > 0; }
};

}  // namespace

Status trace_reader::Reader::Sacct(const std::string& text, std::vector<Row>* rows) {
  Columns col;
  size_t ncols = 0;
  bool trailing = false;  // sacct -p: every line ends with the separator
  Status header_error;
  bool stop = false, have_header = false;
  std::map<std::string, int> runs;  // job id -> runs seen
  std::set<std::string> listed;     // JobID, Submit, Start, End, Elapsed of each run read
  std::string header_line;
  std::vector<std::string> f;
  auto skip = [&](const char* why) { ++trace_->skipped[why]; };
  ForEachLine(text, [&](int64_t line, const std::string& l) {
    if (stop || !header_error.ok()) return;
    if (BlankRecord(l, have_header ? sep_ : DetectSeparator(l))) return;  // "|||" too
    if (!have_header) {
      have_header = true;
      header_line = l;
      sep_ = DetectSeparator(l);
      quoted_ = sep_ != '|';  // sacct -P never quotes
      if (quoted_) {
        SplitCsv(l, &f, sep_);
      } else {
        SplitPlain(l, &f, sep_);
      }
      if (f.size() == 1 && Trim(f[0]).find_first_of(" \t") != std::string::npos) {
        header_error = Status::Error(file_ + ":" + std::to_string(line) +
                                     ": header: fixed-width sacct output; run sacct with -P (parsable: fields separated by |)");
        return;
      }
      trailing = f.size() > 1 && Trim(f.back()).empty();
      if (trailing) f.pop_back();
      ncols = f.size();
      for (size_t i = 0; i < f.size(); ++i) {
        if (!col.at.emplace(AsciiLower(Trim(f[i])), i).second && header_error.ok()) {
          header_error = Status::Error(file_ + ":" + std::to_string(line) + ": header: column \"" + f[i] + "\" given twice");
        }
      }
      auto need = [&](bool ok, const std::string& what) {
        if (!ok && header_error.ok()) {
          header_error = Status::Error(file_ + ":" + std::to_string(line) + ": header: needs " + what +
                                       " (sacct -X -P --format=JobID,Submit,Start,End,Elapsed,Timelimit,AllocTRES,"
                                       "ReqTRES,NNodes,Account,Partition,State)");
        }
      };
      need(col.Has("jobid") || col.Has("jobidraw"), "a JobID column");
      need(col.Has("submit"), "a Submit column");
      need(col.Has("elapsed") || col.Has("elapsedraw") || (col.Has("start") && col.Has("end")),
           "an Elapsed column (or Start and End)");
      need(col.Has("alloctres") || col.Has("reqtres"), "an AllocTRES or ReqTRES column (the GPUs)");
      return;
    }
    ++trace_->rows;
    if (l == header_line) return skip("header lines repeated (exports joined)");
    std::string row = l;
    if (trailing && !row.empty() && row.back() == sep_) row.pop_back();
    if (!Fields(line, row, ncols, &f, &stop)) return;
    const std::string* id_field = col.Get(f, "jobid");
    if (id_field == nullptr) id_field = col.Get(f, "jobidraw");
    const std::string id = Trim(*id_field);
    if (id.empty()) {
      stop = !Bad(line, "JobID", "empty");
      return;
    }
    if (id.find('.') != std::string::npos) return skip("job steps (sacct -X leaves them out)");
    const std::string* state = col.Get(f, "state");
    const std::string st = state != nullptr ? AsciiLower(Trim(*state)) : "";
    const std::string* start = col.Get(f, "start");
    const std::string* end = col.Get(f, "end");
    if (st.rfind("pending", 0) == 0 || (start != nullptr && Absent(*start))) return skip("never started");
    // Ended: by its End when there is that column (a requeued run of sacct -D has one), else by
    // its State.
    const bool running_state = st.rfind("running", 0) == 0 || st.rfind("suspended", 0) == 0 ||
                               st.rfind("requeued", 0) == 0 || st.rfind("resizing", 0) == 0;
    if (end != nullptr ? Absent(*end) : running_state) return skip("not ended");
    const std::string& submit = *col.Get(f, "submit");
    auto t = ParseTimestamp(Trim(submit));
    if (!t.ok()) {
      stop = !Bad(line, "Submit", "invalid timestamp \"" + submit + "\" (expected YYYY-MM-DDTHH:MM:SS)");
      return;
    }
    // Run time: Elapsed, ElapsedRaw, else End - Start.
    int64_t dur = -1;
    if (const std::string* e = col.Get(f, "elapsed"); e != nullptr && !Absent(*e)) {
      if (!ParseSeconds(Trim(*e), &dur)) {
        stop = !Bad(line, "Elapsed", SecondsError(*e));
        return;
      }
    } else if (const std::string* er = col.Get(f, "elapsedraw"); er != nullptr && !Absent(*er)) {
      if (!ParseSeconds(Trim(*er), &dur)) {
        stop = !Bad(line, "ElapsedRaw", SecondsError(*er));
        return;
      }
    } else if (start != nullptr && end != nullptr) {
      auto s0 = ParseTimestamp(Trim(*start)), s1 = ParseTimestamp(Trim(*end));
      if (!s0.ok() || !s1.ok() || *s1 < *s0) {
        stop = !Bad(line, s0.ok() ? "End" : "Start", "invalid time \"" + (s0.ok() ? *end : *start) + "\" (expected YYYY-MM-DDTHH:MM:SS, End not before Start)");
        return;
      }
      dur = *s1 - *s0;
    }
    if (dur < 0) {
      stop = !Bad(line, "Elapsed", "no run time (Elapsed, or Start and End)");
      return;
    }
    // A job cancelled (or failed) while pending: Slurm sets its Start and End to that moment, so
    // it has a Start but no run time, and no allocation: AllocTRES empty (without that column:
    // State CANCELLED), or NodeList "None assigned".
    const std::string* alloc = col.Get(f, "alloctres");
    if (dur == 0) {
      const std::string* nodelist = col.Get(f, "nodelist");
      const bool none_assigned = nodelist != nullptr && AsciiLower(Trim(*nodelist)) == "none assigned";
      const bool no_alloc = alloc != nullptr ? Absent(*alloc) : st.rfind("cancelled", 0) == 0;
      if (none_assigned || no_alloc) return skip("never started");
    }
    // GPUs: what the job got, else what it asked for.
    const std::string* req = col.Get(f, "reqtres");
    const bool use_alloc = alloc != nullptr && !Absent(*alloc);
    const std::string* tres = use_alloc ? alloc : req;
    const int64_t gpus = tres != nullptr ? TresGpus(*tres) : 0;
    if (gpus < 0 || gpus > 1000000) {
      stop = !Bad(line, use_alloc ? "AllocTRES" : "ReqTRES", "a GPU count that is not a whole number from 0 to 1000000 in \"" + *tres + "\"");
      return;
    }
    if (gpus == 0) return skip("no GPUs (CPU-only jobs)");
    int64_t limit = 0;
    if (const std::string* tl = col.Get(f, "timelimit"); tl != nullptr && !NoLimit(*tl)) {
      if (!ParseSeconds(Trim(*tl), &limit) || limit <= 0) {
        stop = !Bad(line, "Timelimit", limit == 0 && ParseSeconds(Trim(*tl), &limit)
                                           ? "must be more than 0 s (or UNLIMITED), got \"" + *tl + "\""
                                           : SecondsError(*tl));
        return;
      }
    } else if (const std::string* raw = col.Get(f, "timelimitraw"); raw != nullptr && !NoLimit(*raw)) {
      int64_t minutes = 0;
      if (!ParseInt(Trim(*raw), &minutes) || minutes <= 0 || minutes > 1000000000) {
        stop = !Bad(line, "TimelimitRaw", "must be a whole number of minutes from 1 to 1000000000 or UNLIMITED, got \"" + *raw + "\"");
        return;
      }
      limit = minutes * 60;
    }
    std::string raw_queue = "default";
    const char* queue_col = "Account";
    if (const std::string* a = col.Get(f, "account"); a != nullptr && !Trim(*a).empty()) {
      raw_queue = Trim(*a);
    } else if (const std::string* p = col.Get(f, "partition"); p != nullptr && !Trim(*p).empty()) {
      raw_queue = Trim(*p);
      queue_col = "Partition";
    }
    const std::string queue = QueueName(raw_queue);
    if (queue.empty()) {
      stop = !Bad(line, queue_col, "\"" + raw_queue + "\" has no character of a queue name ([A-Za-z0-9])");
      return;
    }
    int64_t nodes = 0;
    for (const char* c : {"nnodes", "allocnodes", "reqnodes"}) {
      const std::string* n = col.Get(f, c);
      if (nodes == 0 && n != nullptr && !Absent(*n) && !ParseNodes(*n, &nodes)) nodes = 0;
    }
    // The same run listed again (exports of overlapping windows joined): one run.
    std::string key = id;
    for (const char* c : {"submit", "start", "end", "elapsed", "elapsedraw"}) {
      const std::string* v = col.Get(f, c);
      key += std::string(1, '\0') + (v != nullptr ? Trim(*v) : "");
    }
    if (!listed.insert(key).second) return skip("runs listed again (exports joined)");
    Row r;
    Workload& w = r.job.w;
    const int run = ++runs[id];
    w.id = run == 1 ? id : id + "#" + std::to_string(run);
    w.queue = queue;
    if (nodes >= 1 && gpus % nodes == 0 && gpus / nodes <= opts_.gpus_per_node) {
      w.members = static_cast<int32_t>(nodes);
      w.per_member.gpus = gpus / nodes;
    } else {
      ShapeFromTotal(gpus, opts_.gpus_per_node, &w.members, &w.per_member.gpus);
    }
    w.min_members = w.members;
    w.workload_class = WorkloadClass::kTraining;
    w.runtime_limit_s = limit;
    r.job.duration_s = dur;
    r.job.line = line;
    r.raw_submit = *t;
    rows->push_back(std::move(r));
  });
  if (!header_error.ok()) return header_error;
  if (!have_header) return Status::Error(file_ + ": no header line (sacct -P prints one; not -n)");
  if (stop) return Failed();
  return Status::Ok();
}

}  // namespace tidal::sim
