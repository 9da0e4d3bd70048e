// The generic csv reader (sim/trace.h, format "csv"): a header naming its columns (CsvColumns), in
// any order, or naming them its own way with TraceOptions::columns (--columns); submit times in
// seconds or, when the first row whose submit reads is one, timestamps. docs/simulator.md has the reference.
// Threading: a Reader method (trace_reader.h).
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/io/workload_file.h"
#include "sim/trace_fields.h"
#include "sim/trace_reader.h"

namespace tidal::sim {

using namespace trace_fields;  // NOLINT: the field helpers are this file's vocabulary

// The generic csv format's columns.
const std::set<std::string>& trace_reader::CsvColumns() {
  static const std::set<std::string> kColumns = {"id",       "submit",   "duration", "gpus",        "members",
                                                 "gpus_per_member", "min_members", "queue", "priority", "limit",
                                                 "required", "preferred", "preemptible", "class"};
  return kColumns;
}

namespace {
// "class, duration, gpus, ...": the csv columns, for errors.
std::string AcceptedColumns() {
  std::string known;
  for (const auto& k : trace_reader::CsvColumns()) known += (known.empty() ? "" : ", ") + k;
  return known;
}
}  // namespace

Status CheckColumns(const std::map<std::string, std::string>& columns) {
  for (const auto& [name, header] : columns) {
    if (!trace_reader::CsvColumns().count(name)) {
      return Status::Error("--columns " + name + "=" + header + ": \"" + name + "\" is not a csv column (accepted: " +
                           AcceptedColumns() + ")");
    }
    if (header.empty()) return Status::Error("--columns " + name + "=: the header name is empty");
    for (const auto& [other, h2] : columns) {
      if (other < name && h2 == header) return Status::Error("--columns: " + other + " and " + name + " both read column \"" + header + "\"");
    }
  }
  return Status::Ok();
}

StatusOr<std::map<std::string, std::string>> ParseColumns(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = Trim(text.substr(pos, comma - pos));
    pos = comma + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::Error("--columns: expected NAME=HEADER[,NAME=HEADER...] (submit=submit_time), got \"" + item + "\"");
    }
    const std::string name = Trim(item.substr(0, eq));
    if (!out.emplace(name, Trim(item.substr(eq + 1))).second) return Status::Error("--columns: " + name + " given twice");
  }
  if (Status s = CheckColumns(out); !s.ok()) return s;
  return out;
}

namespace {

// Why a submit that is neither seconds nor a timestamp is malformed: an impossible date, a time zone
// suffix, or neither form.
std::string SubmitError(const std::string& submit) {
  const std::string s = Trim(submit);
  if (s.size() >= 10 && s[4] == '-' && s[7] == '-' && std::isdigit(static_cast<unsigned char>(s[0]))) {
    for (size_t zone = s.size(); zone-- > 10;) {  // "...00Z", "...00+02:00": a timestamp, then a zone
      if ((s[zone] == 'Z' || s[zone] == 'z' || s[zone] == '+' || s[zone] == '-') && ParseTimestamp(s.substr(0, zone)).ok()) {
        return "\"" + submit + "\": a time zone suffix (\"" + s.substr(zone) +
               "\") is not read: timestamps are UTC, YYYY-MM-DD HH:MM:SS";
      }
    }
    auto t = ParseTimestamp(s);
    return t.status().Message() + " (expected YYYY-MM-DD HH:MM:SS)";
  }
  return SecondsError(submit) + ", or a timestamp (YYYY-MM-DD HH:MM:SS)";
}

}  // namespace

bool trace_reader::Reader::SubmitTime(int64_t line, const std::string& submit, int64_t* out, bool* stop) {
  int64_t secs = 0;
  const bool is_secs = ParseSeconds(submit, &secs);
  auto ts = is_secs ? StatusOr<int64_t>(Status::Error("")) : ParseTimestamp(Trim(submit));
  if (!is_secs && !ts.ok()) {
    *stop = !Bad(line, "submit", SubmitError(submit));
    return false;
  }
  if (is_secs && secs > kMaxSubmitSeconds) {
    *stop = !Bad(line, "submit", "\"" + Trim(submit) + "\" seconds is after the year 5000 as a Unix time: milliseconds? " +
                                     "Give seconds (" + std::to_string(secs / 1000) + ") or a timestamp");
    return false;
  }
  if (submit_form_line_ == 0) {  // the first submit that reads decides
    submit_form_line_ = line;
    timestamps_ = !is_secs;
  }
  if (timestamps_ != !is_secs) {
    const std::string form = timestamps_ ? "a timestamp" : "seconds";
    *stop = !Bad(line, "submit", "\"" + submit + "\" is " + (is_secs ? "seconds" : "a timestamp") + ", but line " +
                                     std::to_string(submit_form_line_) + "'s submit, the first read, is " + form +
                                     ": a file's submit times are all seconds on the replay clock or all timestamps");
    return false;
  }
  *out = is_secs ? secs : *ts;
  return true;
}

Status trace_reader::Reader::Csv(const std::string& text, std::vector<Row>* rows) {
  const std::set<std::string>& kColumns = CsvColumns();
  std::map<std::string, size_t> col;
  size_t ncols = 0;
  Status header_error;
  bool stop = false;
  std::set<std::string> ids;
  std::vector<std::string> f;
  bool have_header = false;
  ForEachLine(text, [&](int64_t line, const std::string& l) {
    if (stop || !header_error.ok()) return;
    // Blank lines (",,," too: a spreadsheet's empty row) and comments.
    if (BlankRecord(l, have_header ? sep_ : DetectSeparator(l)) || Trim(l)[0] == '#') return;
    if (!have_header) {
      have_header = true;
      sep_ = DetectSeparator(l);
      SplitCsv(l, &f, sep_);
      ncols = f.size();
      // --columns (TraceOptions::columns): the file's own names for csv columns; with it, the
      // header's other columns are ignored (and listed), else an unknown one refuses the file.
      std::map<std::string, std::string> named;  // the file's header name -> csv column
      for (const auto& [name, header] : opts_.columns) named[header] = name;
      std::set<std::string> found;
      for (size_t i = 0; i < f.size(); ++i) {
        std::string name = f[i];
        if (auto m = named.find(f[i]); m != named.end()) {
          name = m->second;
          found.insert(f[i]);
        } else if (!opts_.columns.empty() && (!kColumns.count(name) || opts_.columns.count(name))) {
          trace_->ignored_columns.push_back(f[i]);
          continue;
        } else if (!kColumns.count(name)) {
          header_error = Status::Error(file_ + ":" + std::to_string(line) + ": header: unknown column \"" + f[i] + "\" (accepted: " +
                                       AcceptedColumns() + "; --columns NAME=HEADER reads a column by another name)");
          return;
        }
        if (!col.emplace(name, i).second) {
          header_error = Status::Error(file_ + ":" + std::to_string(line) + ": header: column \"" + name + "\" given twice");
          return;
        }
      }
      for (const auto& [name, header] : opts_.columns) {
        if (!found.count(header)) {
          header_error = Status::Error(file_ + ":" + std::to_string(line) + ": header: --columns " + name + "=" + header +
                                       ": no column \"" + header + "\" in the header");
          return;
        }
      }
      for (const char* need : {"submit", "duration"}) {
        if (!col.count(need)) {
          header_error = Status::Error(file_ + ":" + std::to_string(line) + ": header: missing column \"" + std::string(need) + "\"");
        }
      }
      if (!col.count("gpus") && !col.count("gpus_per_member")) {
        header_error = Status::Error(file_ + ":" + std::to_string(line) +
                                     ": header: needs a \"gpus\" column or \"members\" and \"gpus_per_member\"");
      }
      return;
    }
    ++trace_->rows;
    if (!Fields(line, l, ncols, &f, &stop)) return;
    auto get = [&](const char* c) -> std::string { return col.count(c) ? f[col[c]] : std::string(); };
    Row r;
    Workload& w = r.job.w;
    int64_t v = 0;
    // Submit times are seconds on the replay clock, or timestamps: the first row whose submit reads
    // as either says which, for the whole file (timestamps are then rebased to the earliest, as
    // philly's). Rows before it are malformed whatever the form.
    if (!SubmitTime(line, get("submit"), &r.raw_submit, &stop)) return;
    if (!ParseSeconds(get("duration"), &r.job.duration_s)) {
      stop = !Bad(line, "duration", SecondsError(get("duration")));
      return;
    }
    const std::string gs = get("gpus"), ms = get("members"), gps = get("gpus_per_member");
    int64_t gpus = -1, members = -1, per = -1;
    if (!gs.empty() && (!ParseInt(gs, &gpus) || gpus < 0 || gpus > 1000000)) {
      stop = !Bad(line, "gpus", "must be a whole number from 0 to 1000000, got \"" + gs + "\"");
      return;
    }
    if (!ms.empty() && (!ParseInt(ms, &members) || members < 1 || members > 1000000)) {
      stop = !Bad(line, "members", "must be a whole number from 1 to 1000000, got \"" + ms + "\"");
      return;
    }
    if (!gps.empty() && (!ParseInt(gps, &per) || per < 1 || per > 1000000)) {
      // >= 1: a csv row carries GPUs only, so a member of 0 GPUs would ask for nothing at all.
      stop = !Bad(line, "gpus_per_member", "must be a whole number from 1 to 1000000, got \"" + gps + "\"");
      return;
    }
    if (per >= 0) {
      w.per_member.gpus = per;
      w.members = static_cast<int32_t>(members > 0 ? members : 1);
      if (gpus >= 0 && gpus != per * w.members) {
        stop = !Bad(line, "gpus", gs + " is not members x gpus_per_member (" + std::to_string(w.members) + " x " + gps + ")");
        return;
      }
    } else if (gpus >= 1) {
      if (members > 0) {
        if (gpus % members != 0) {
          stop = !Bad(line, "gpus", gs + " is not a multiple of members (" + ms + ")");
          return;
        }
        w.members = static_cast<int32_t>(members);
        w.per_member.gpus = gpus / members;
      } else {
        ShapeFromTotal(gpus, opts_.gpus_per_node, &w.members, &w.per_member.gpus);
      }
    } else {
      stop = !Bad(line, "gpus", "needs gpus >= 1, or members and gpus_per_member");
      return;
    }
    w.min_members = w.members;
    if (const std::string s = get("min_members"); !s.empty()) {
      if (!ParseInt(s, &v) || v < 1 || v > w.members) {
        stop = !Bad(line, "min_members", "must be 1.." + std::to_string(w.members) + ", got \"" + s + "\"");
        return;
      }
      w.min_members = static_cast<int32_t>(v);
    }
    w.id = get("id");
    if (w.id.empty()) w.id = "job-" + std::to_string(line);
    if (!ids.insert(w.id).second) {
      stop = !Bad(line, "id", "duplicate job id \"" + w.id + "\"");
      return;
    }
    const std::string qs = get("queue");
    w.queue = qs.empty() ? "default" : QueueName(qs);
    if (w.queue.empty()) {
      stop = !Bad(line, "queue", "\"" + qs + "\" has no character of a queue name ([A-Za-z0-9])");
      return;
    }
    if (const std::string s = get("priority"); !s.empty()) {
      if (!ParseInt(s, &v) || v < -1000000000 || v > 1000000000) {
        stop = !Bad(line, "priority", "must be a whole number from -1000000000 to 1000000000, got \"" + s + "\"");
        return;
      }
      w.priority = static_cast<int32_t>(v);
    }
    if (const std::string s = get("limit"); !s.empty()) {
      if (!ParseSeconds(s, &w.runtime_limit_s) || w.runtime_limit_s <= 0) {
        stop = !Bad(line, "limit", ParseSeconds(s, &v) ? "must be more than 0 s, got \"" + s + "\"" : SecondsError(s));
        return;
      }
    }
    w.required_level = get("required");
    w.preferred_level = get("preferred");
    if (const std::string s = get("preemptible"); !s.empty()) {
      if (s != "true" && s != "false") {
        stop = !Bad(line, "preemptible", "must be true or false, got \"" + s + "\"");
        return;
      }
      w.preemptible = s == "true";
    }
    w.workload_class = WorkloadClass::kTraining;
    if (const std::string s = get("class"); !s.empty()) {
      auto c = ParseWorkloadClass(s, "class");
      if (!c.ok()) {
        stop = !Bad(line, "", c.status().Message());
        return;
      }
      w.workload_class = *c;
    }
    r.job.line = line;
    rows->push_back(std::move(r));
  });
  if (!header_error.ok()) return header_error;
  if (!have_header) return Status::Error(file_ + ": no header line (csv format: submit,duration,gpus,...)");
  if (stop) return Failed();
  return Status::Ok();
}

}  // namespace tidal::sim
