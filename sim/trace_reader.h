// The trace readers' shared parts (internal to sim/, trace.h is the API): a parsed row and the
// Reader that reports bad rows and normalises queue names. Each format's reader is a Reader method:
// Philly and Json in trace.cc, Csv in trace_csv.cc, Sacct in trace_sacct.cc.
// Threading: a Reader is a plain value owned by one ParseTrace call.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/api/status.h"
#include "sim/trace.h"
#include "sim/trace_fields.h"

namespace tidal::sim::trace_reader {

// The generic csv format's column names (trace_csv.cc).
const std::set<std::string>& CsvColumns();

struct Row {
  SimJob job;
  int64_t raw_submit = 0;  // trace time before windowing (philly: unix seconds)
};

class Reader {
 public:
  Reader(const std::string& file, const TraceOptions& o, Trace* t) : file_(file), opts_(o), trace_(t) {}

  // Splits a data row into exactly `ncols` fields; false (reported, `*stop` set by the bad-row
  // policy) when it cannot.
  bool Fields(int64_t line, const std::string& l, size_t ncols, std::vector<std::string>* f, bool* stop) {
    if (!quoted_) {
      trace_fields::SplitPlain(l, f, sep_);
    } else if (!trace_fields::SplitCsv(l, f, sep_)) {
      *stop = !Bad(line, "", "unterminated quote");
      return false;
    }
    if (f->size() != ncols) {
      *stop = !Bad(line, "", "expected " + std::to_string(ncols) + " fields, got " + std::to_string(f->size()));
      return false;
    }
    return true;
  }
  // Records a bad row; false when the read must stop (OnBadRow::kFail).
  bool Bad(int64_t line, const std::string& column, const std::string& why) {
    BadRow b;
    b.line = line;
    b.message = file_ + ":" + std::to_string(line) + ": " + (column.empty() ? "" : column + ": ") + why;
    trace_->bad_rows.push_back(std::move(b));
    return opts_.on_bad_row == TraceOptions::OnBadRow::kSkip;
  }
  Status Failed() const { return Status::Error(trace_->bad_rows.back().message); }
  // A trace's queue name normalised (trace_fields.h); "" when nothing valid is left.
  std::string QueueName(const std::string& raw) { return namer_.Map(raw); }
  // Copies the names the reader changed or merged into the trace.
  void Finish() {
    trace_->queue_renames = namer_.renames();
    trace_->queue_merges = namer_.Merges();
  }

  Status Philly(const std::string& text, std::vector<Row>* rows);
  // The generic csv table (trace_csv.cc).
  Status Csv(const std::string& text, std::vector<Row>* rows);
  Status Json(const std::string& text, std::vector<Row>* rows);
  // csv: a row's submit time, seconds or a timestamp as the file's first readable submit says;
  // false when malformed (reported, `*stop` set by the bad-row policy).
  bool SubmitTime(int64_t line, const std::string& submit, int64_t* out, bool* stop);
  // sacct -P output (trace_sacct.cc).
  Status Sacct(const std::string& text, std::vector<Row>* rows);
  // Whether the csv table's submit times were timestamps (the first row's whose submit reads).
  bool csv_timestamps() const { return timestamps_; }

 private:
  const std::string& file_;
  const TraceOptions& opts_;
  Trace* trace_;
  trace_fields::QueueNamer namer_;
  char sep_ = ',';  // the table's field separator, from its header line
  bool quoted_ = true;  // fields may be RFC 4180 quoted; false: sacct -P's '|' rows, never quoted
  bool timestamps_ = false;  // csv: submit times are timestamps
  int64_t submit_form_line_ = 0;  // csv: the line whose submit decided timestamps_ (0: none yet)
};

}  // namespace tidal::sim::trace_reader
