// Field parsing and row validation for the trace readers (sim/trace.cc): CSV records, numbers,
// seconds, the gpu_time consistency check with its rounding tolerance, and queue-name
// normalisation with the mapping kept for the report. Internal to sim/ (trace.h is the API).
//
// gpu_time check (philly): a row's gpu_time agrees with duration x num_gpus when they differ by
// at most the rounding the columns allow, 0.5 unit of gpu_time's last written decimal plus
// num_gpus x 0.5 unit of duration's, or by at most `relative` x duration x num_gpus. A row that
// agrees only thanks to that allowance (not within float noise) is "corrected": the replay uses
// duration, as for every row, and the trace counts it (Trace::gpu_time_corrected).
//
// Queue names (sim/queue_names.cc): lower-cased; `_`, `.`, `/`, `:`, spaces and non-ASCII
// punctuation become `-`; Latin letters with diacritics become their ASCII letters ("Équipe" ->
// "equipe"); other non-ASCII characters become "u<hex>" ("日本" -> "u65e5-u672c"); other ASCII
// characters are dropped; runs of `-` collapse; `-` is trimmed from both ends; at most 63
// characters. Text is UTF-8, a byte that is not valid UTF-8 is read as Latin-1. A name left empty
// is malformed. Distinct trace names that normalise to the same name ("LS" and
// "ls") are one queue: normalisation says case and separators carry no meaning; each such merge is
// listed (Trace::queue_merges) so that it is never silent.
// Threading: plain functions; QueueNamer is a plain value owned by one reader.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tidal::sim::trace_fields {

std::string Trim(const std::string& s);
// `s` with ASCII letters lower-cased (column names, sacct's words).
std::string AsciiLower(std::string s);
// One CSV record (RFC 4180 quoting; no newlines inside quotes) with fields separated by `sep`.
// False on an unterminated quote.
bool SplitCsv(const std::string& line, std::vector<std::string>* out, char sep = ',');
// One record split at every `sep`, a '"' being text like any other character (sacct -P, which
// never quotes: a JobName may hold a '"'). Fields are trimmed.
void SplitPlain(const std::string& line, std::vector<std::string>* out, char sep);
// Whether a line is a blank row: nothing but whitespace, `sep` and '"' (",,,", a spreadsheet's
// empty row; an empty line). The table readers skip it like a blank line.
bool BlankRecord(const std::string& line, char sep);
// A table's field separator, from its header line: ',' when the line has a comma, else a tab,
// ';' or '|', the first of them it has (tab-separated exports, `sacct -P`), else ','.
char DetectSeparator(const std::string& header);
// `text` without a leading UTF-8 byte order mark (spreadsheet exports write one).
std::string_view WithoutBom(std::string_view text);
// `text` as valid UTF-8: UTF-8 sequences kept, every byte that is not part of one read as Latin-1
// (0xE9 -> "é"), as the queue names are (sim/queue_names.cc). The readers convert a whole trace
// so that every name they keep (ids, queues, file names) is valid in the JSON outputs.
std::string ToUtf8(std::string_view text);
// A finite decimal number, the whole field.
bool ParseNumber(const std::string& s, double* out);
bool ParseInt(const std::string& s, int64_t* out);
// The most seconds a trace's times and durations may give (about 31.7 million years): any more
// would not fit the simulator's int64 seconds once added to a submit time.
inline constexpr double kMaxTraceSeconds = 1e15;
// A csv submit in seconds past this (the year 5138 as a Unix time, or 3,000 years on the replay
// clock) is milliseconds or microseconds from an exporter: malformed, not a trace spread 1000 x.
inline constexpr int64_t kMaxSubmitSeconds = 100000000000;
// Seconds, 0..kMaxTraceSeconds: a number (rounded up), a duration ("90s", "2h", "1h30m", "400d";
// not capped at the config's 365 days: a trace's job may run longer) or Slurm's elapsed form
// "[D-]HH:MM:SS" (sacct's Elapsed and Timelimit). False when it is none of them or out of range;
// SecondsError says which, for the row's message.
bool ParseSeconds(const std::string& s, int64_t* out);
// "must be seconds from 0 to 1e15, a duration (90s, 2h, 1h30m) or [D-]HH:MM:SS, got \"x\"", with a
// hint when `s` is a number out of range or a timestamp (csv times are seconds on the replay clock).
std::string SecondsError(const std::string& s);
// 1-63 of [a-z0-9-], alphanumeric at both ends.
bool ValidQueueName(const std::string& n);
// The normalised form of a trace's queue name (header comment); "" when nothing valid is left.
std::string NormaliseQueueName(const std::string& raw);
// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d);

// The unit of a number's last written decimal: "66" -> 1, "66.1" -> 0.1, "1e3" -> 1.
double LastDigitUnit(const std::string& number);
enum class GpuTimeCheck { kExact, kRounded, kDisagrees };
// gpu_time against duration x gpus (header comment). `relative` >= 0 (0.01 = 1%).
GpuTimeCheck CheckGpuTime(const std::string& gpu_time, double gt, const std::string& duration, double dur,
                          int64_t gpus, double relative);

// Maps a trace's queue names to valid ones and remembers what it changed.
class QueueNamer {
 public:
  // The queue for `raw`; "" when nothing valid is left of it.
  std::string Map(const std::string& raw);
  const std::map<std::string, std::string>& renames() const { return renames_; }  // raw -> queue, changed only
  // "ls <- LS, ls" for each queue fed by more than one distinct trace name.
  std::vector<std::string> Merges() const;

 private:
  std::map<std::string, std::string> renames_;
  std::map<std::string, std::set<std::string>> sources_;  // queue -> raw names seen
};

// Reads lines; `fn(line_no, text)`; CRLF tolerated.
template <typename F>
void ForEachLine(const std::string& text, F fn) {
  size_t pos = 0;
  int64_t line = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string l = text.substr(pos, nl - pos);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    ++line;
    if (!(nl == text.size() && l.empty())) fn(line, l);
    if (nl == text.size()) break;
    pos = nl + 1;
  }
}

}  // namespace tidal::sim::trace_fields
