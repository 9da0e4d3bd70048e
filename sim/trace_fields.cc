#include "sim/trace_fields.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/api/duration.h"
#include "sim/trace.h"

namespace tidal::sim {
namespace trace_fields {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string AsciiLower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

bool SplitCsv(const std::string& line, std::vector<std::string>* out, char sep) {
  out->clear();
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == sep) {
      out->push_back(Trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out->push_back(Trim(cur));
  return !quoted;
}

void SplitPlain(const std::string& line, std::vector<std::string>* out, char sep) {
  out->clear();
  size_t pos = 0;
  while (true) {
    const size_t next = line.find(sep, pos);
    out->push_back(Trim(line.substr(pos, next == std::string::npos ? std::string::npos : next - pos)));
    if (next == std::string::npos) break;
    pos = next + 1;
  }
}

bool BlankRecord(const std::string& line, char sep) {
  for (char c : line) {
    if (c != sep && c != '"' && !std::isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

char DetectSeparator(const std::string& header) {
  if (header.find(',') != std::string::npos) return ',';
  for (char c : {'\t', ';', '|'}) {
    if (header.find(c) != std::string::npos) return c;
  }
  return ',';
}

std::string_view WithoutBom(std::string_view text) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
  return text;
}

bool ParseNumber(const std::string& s, double* out) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = b + s.size();
  if (*b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, *out);
  return ec == std::errc() && p == e && std::isfinite(*out);
}

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = b + s.size();
  if (*b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, *out);
  return ec == std::errc() && p == e;
}

namespace {

// Whole digits of s[b, e), at most 15 of them (so that they fit any sum below); false otherwise.
bool Digits(const std::string& s, size_t b, size_t e, int64_t* out) {
  if (b >= e || e - b > 15) return false;
  *out = 0;
  for (size_t i = b; i < e; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    *out = *out * 10 + (s[i] - '0');
  }
  return true;
}

// "1h30m", "400d": digit runs each followed by s, m, h or d.
bool UnitDuration(const std::string& s, int64_t* out) {
  int64_t total = 0;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    int64_t v = 0;
    if (j == s.size() || !Digits(s, i, j, &v)) return false;
    const int64_t unit = s[j] == 's' ? 1 : s[j] == 'm' ? 60 : s[j] == 'h' ? 3600 : s[j] == 'd' ? 86400 : 0;
    if (unit == 0) return false;
    total += v * unit;
    if (static_cast<double>(total) > kMaxTraceSeconds) return false;
    i = j + 1;
  }
  *out = total;
  return !s.empty();
}

// Slurm's "[D-]HH:MM:SS" (hours any number of digits without a day part).
bool SlurmElapsed(const std::string& s, int64_t* out) {
  int64_t days = 0;
  size_t b = 0;
  if (const size_t dash = s.find('-'); dash != std::string::npos) {
    if (!Digits(s, 0, dash, &days)) return false;
    b = dash + 1;
  }
  const size_t c1 = s.find(':', b);
  const size_t c2 = c1 == std::string::npos ? c1 : s.find(':', c1 + 1);
  if (c2 == std::string::npos || s.find(':', c2 + 1) != std::string::npos) return false;
  int64_t h = 0, m = 0, sec = 0;
  if (!Digits(s, b, c1, &h) || !Digits(s, c1 + 1, c2, &m) || !Digits(s, c2 + 1, s.size(), &sec)) return false;
  if (m > 59 || sec > 59 || c2 - c1 != 3 || s.size() - c2 != 3 || (b > 0 && h > 23)) return false;
  const double total = static_cast<double>(days) * 86400 + static_cast<double>(h) * 3600 + static_cast<double>(m * 60 + sec);
  if (total > kMaxTraceSeconds) return false;
  *out = days * 86400 + h * 3600 + m * 60 + sec;
  return true;
}

}  // namespace

bool ParseSeconds(const std::string& s, int64_t* out) {
  double d = 0;
  if (ParseNumber(s, &d)) {
    if (d < 0 || d > kMaxTraceSeconds) return false;
    *out = static_cast<int64_t>(std::ceil(d));
    return true;
  }
  return UnitDuration(s, out) || SlurmElapsed(s, out);
}

std::string SecondsError(const std::string& s) {
  std::string hint;
  double d = 0;
  const bool unit_form = !s.empty() && std::isdigit(static_cast<unsigned char>(s.front())) &&
                         s.find_first_not_of("0123456789smhd") == std::string::npos;
  if (ParseNumber(s, &d)) {
    hint = d < 0 ? " (negative)" : " (more than 1e15 s)";
  } else if (unit_form) {
    hint = " (more than 1e15 s)";
  } else if (ParseTimestamp(s).ok() || (s.size() >= 10 && s[4] == '-' && s[7] == '-' && std::isdigit(static_cast<unsigned char>(s[0])))) {
    hint = " (a timestamp, not a length of time)";
  }
  return "must be seconds from 0 to 1e15, a duration (90s, 2h, 1h30m) or [D-]HH:MM:SS, got \"" + s + "\"" + hint;
}

bool ValidQueueName(const std::string& n) {
  if (n.empty() || n.size() > 63) return false;
  for (char c : n) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-')) {
      return false;
    }
  }
  return std::isalnum(static_cast<unsigned char>(n.front())) && std::isalnum(static_cast<unsigned char>(n.back()));
}

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

double LastDigitUnit(const std::string& number) {
  const size_t e = number.find_first_of("eE");
  const std::string mant = number.substr(0, e);
  int exp10 = 0;
  if (e != std::string::npos) exp10 = std::atoi(number.c_str() + e + 1);
  const size_t dot = mant.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(mant.size() - dot - 1);
  return std::pow(10.0, exp10 - decimals);
}

GpuTimeCheck CheckGpuTime(const std::string& gpu_time, double gt, const std::string& duration, double dur,
                          int64_t gpus, double relative) {
  const double want = dur * static_cast<double>(gpus);
  const double diff = std::abs(gt - want);
  if (diff <= 1e-6 * std::max(1.0, want) + 1e-3) return GpuTimeCheck::kExact;
  const double noise = 1e-9 * std::max(1.0, want);
  const double rounding = 0.5 * LastDigitUnit(gpu_time) + 0.5 * LastDigitUnit(duration) * static_cast<double>(gpus);
  if (diff <= rounding + noise || diff <= relative * want + noise) return GpuTimeCheck::kRounded;
  return GpuTimeCheck::kDisagrees;
}

}  // namespace trace_fields

using trace_fields::DaysFromCivil;
using trace_fields::ParseSeconds;
using trace_fields::Trim;

void ShapeFromTotal(int64_t gpus, int64_t gpus_per_node, int32_t* members, int64_t* per_member) {
  if (gpus_per_node <= 0 || gpus <= gpus_per_node) {
    *members = 1;
    *per_member = gpus;
    return;
  }
  int64_t d = gpus_per_node;
  while (d > 1 && gpus % d != 0) --d;
  *members = static_cast<int32_t>(gpus / d);
  *per_member = d;
}

StatusOr<int64_t> ParseTimestamp(const std::string& text) {
  const std::string s = Trim(text);
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  char sep = ' ';
  int n = 0;
  const int got = std::sscanf(s.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &se, &n);
  bool ok = false;
  if (got == 7 && static_cast<size_t>(n) == s.size() && (sep == ' ' || sep == 'T')) ok = true;
  if (!ok) {
    se = 0;
    n = 0;
    if (std::sscanf(s.c_str(), "%4d-%2d-%2d%c%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &n) == 6 &&
        static_cast<size_t>(n) == s.size() && (sep == ' ' || sep == 'T')) {
      ok = true;
    }
  }
  if (!ok) {
    h = mi = se = 0;
    n = 0;
    if (std::sscanf(s.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && static_cast<size_t>(n) == s.size()) ok = true;
  }
  if (!ok || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 || h < 0 || mi < 0 || se < 0) {
    return Status::Error("invalid timestamp \"" + text + "\"");
  }
  static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (d > kDays[mo - 1] || (mo == 2 && d == 29 && !leap)) return Status::Error("invalid date \"" + text + "\"");
  return DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 + mi * 60 + se;
}

StatusOr<int64_t> ParseWindowBound(const std::string& text, bool has_timestamps, int64_t origin_unix,
                                   const std::string& flag) {
  if (text.find('-') != std::string::npos && text.size() >= 10 && std::isdigit(static_cast<unsigned char>(text[0]))) {
    if (!has_timestamps) return Status::Error(flag + ": a timestamp needs a trace with timestamps (philly, sacct, csv with timestamped submits); give seconds or a duration from the start");
    auto t = ParseTimestamp(text);
    if (!t.ok()) return Status::Error(flag + ": " + t.status().Message());
    return *t - origin_unix;
  }
  int64_t s = 0;
  if (!ParseSeconds(text, &s)) {
    return Status::Error(flag + ": expected a timestamp (2017-10-01 or \"2017-10-01 12:00:00\") or a duration from the trace start (30d, 3600), got \"" + text + "\"");
  }
  return s;
}

}  // namespace tidal::sim

namespace tidal::sim {

std::string AsUtf8(std::string_view text) { return trace_fields::ToUtf8(text); }

std::string DescribeQueueNames(const Trace& t) {
  std::string out;
  for (const auto& [raw, q] : t.queue_renames) out += (out.empty() ? "" : ", ") + raw + " -> " + q;
  if (!t.queue_merges.empty()) {
    out += std::string(out.empty() ? "" : "; ") + "merged into one queue: ";
    for (size_t i = 0; i < t.queue_merges.size(); ++i) out += (i ? "; " : "") + t.queue_merges[i];
  }
  return out;
}

std::string DescribeSkipped(const Trace& t) {
  std::string out;
  for (const auto& [why, n] : t.skipped) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + why;
  return out;
}

}  // namespace tidal::sim

namespace tidal::sim {

StatusOr<double> ParseRelativeTolerance(const std::string& text, const std::string& flag) {
  std::string t = trace_fields::Trim(text);
  const bool pct = !t.empty() && t.back() == '%';
  if (pct) t.pop_back();
  double v = 0;
  if (!trace_fields::ParseNumber(t, &v) || v < 0 || (pct ? v > 100 : v > 1)) {
    return Status::Error(flag + ": expected a relative error such as 1% or 0.01 (0..100%), got \"" + text + "\"");
  }
  return pct ? v / 100 : v;
}

}  // namespace tidal::sim
