#include "core/api/duration.h"

#include <algorithm>
#include <ctime>

#include "core/api/limits.h"

#include <cctype>
#include <charconv>
#include <system_error>
#include <limits>
#include <utility>

namespace tidal {
namespace {

constexpr int64_t kUnitSeconds[] = {86400, 3600, 60, 1};

// A duration unit's place in "d, h, m, s" (0..3); -1 for anything else.
int UnitRank(char unit) {
  switch (unit) {
    case 'd': return 0;
    case 'h': return 1;
    case 'm': return 2;
    case 's': return 3;
    default: return -1;
  }
}

// The n decimal digits of s at pos as *out; false when one is anything else (a sign, a space).
bool Digits(const std::string& s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  *out = 0;
  for (size_t k = pos; k < pos + n; ++k) {
    if (s[k] < '0' || s[k] > '9') return false;
    *out = *out * 10 + (s[k] - '0');
  }
  return true;
}

// Days of month mo (1..12) of year y, Gregorian leap years.
int DaysInMonth(int y, int mo) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return mo == 2 && leap ? 29 : kDays[mo - 1];
}

// Days since 1970-01-01 of a civil date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int y, int mo, int d) {
  const int yy = y - (mo <= 2 ? 1 : 0);
  const int era = yy / 400;
  const int yoe = yy - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return static_cast<int64_t>(era) * 146097 + doe - 719468;
}

}  // namespace

StatusOr<int64_t> ParseDurationSeconds(const std::string& text, const std::string& field) {
  auto bad = [&](const std::string& why) {
    return Status::Error(field + ": invalid duration \"" + text + "\": " + why +
                         " (examples: 90s, 30m, 12h, 1h30m, 2d, or seconds as a number)");
  };
  if (text.empty()) return bad("empty");
  int64_t total = 0;
  size_t i = 0;
  bool any = false;
  int last_rank = -1;  // the rank of the last unit read (UnitRank)
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i) return bad("expected a number at position " + std::to_string(i));
    // from_chars, not stoll: too many digits is an error to report, not an exception.
    int64_t v = 0;
    if (std::from_chars(text.data() + i, text.data() + j, v).ec != std::errc()) return bad("too large");
    if (j == text.size()) {
      if (any) return bad("missing unit after the last number");
      if (v > limits::kMaxDurationS) return bad("too large: over the limit of " + limits::DurationCapText());
      return v;
    }
    const int rank = UnitRank(text[j]);
    if (rank < 0) return bad(std::string("unknown unit '") + text[j] + "'");
    // "30m30m", "5s1h": each unit once, largest first (as FormatDurationSeconds writes them).
    if (rank <= last_rank) return bad(std::string("unit '") + text[j] + "' repeated or out of order (units go d, h, m, s, each at most once)");
    last_rank = rank;
    const int64_t unit = kUnitSeconds[rank];
    if (v > (std::numeric_limits<int64_t>::max() - total) / unit) return bad("too large");
    total += v * unit;
    // Checked at each step: the running total stays far from int64's end.
    if (total > limits::kMaxDurationS) return bad("too large: over the limit of " + limits::DurationCapText());
    any = true;
    i = j + 1;
  }
  return total;
}

std::string FormatDurationSeconds(int64_t left) {
  if (left < 0) left = 0;
  std::string out;
  for (auto [unit, secs] : {std::pair<const char*, int64_t>{"d", 86400}, {"h", 3600}, {"m", 60}}) {
    if (left >= secs) out += std::to_string(left / secs) + unit;
    left %= secs;
  }
  if (left > 0 || out.empty()) out += std::to_string(left) + "s";
  return out;
}

std::string FormatUnixTime(int64_t unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  char iso[32] = "";
  if (gmtime_r(&t, &tm) != nullptr) std::strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return iso;
}

StatusOr<int64_t> ParseUnixTime(const std::string& value, std::string_view field) {
  const std::string accepted = "an RFC 3339 time such as 2026-12-02T10:00:00Z, or unix seconds";
  auto bad = [&] { return Status::Error(std::string(field) + ": invalid value \"" + value.substr(0, 100) + "\" (accepted: " + accepted + ")"); };
  if (value.empty() || value.size() > 64) return bad();
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (value.size() > 12) return bad();  // past year 33658
    return static_cast<int64_t>(std::stoll(value));
  }
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM), every field its exact count of digits.
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (value.size() < 20 || !Digits(value, 0, 4, &y) || value[4] != '-' || !Digits(value, 5, 2, &mo) || value[7] != '-' ||
      !Digits(value, 8, 2, &d) || (value[10] != 'T' && value[10] != 't' && value[10] != ' ') || !Digits(value, 11, 2, &h) ||
      value[13] != ':' || !Digits(value, 14, 2, &mi) || value[16] != ':' || !Digits(value, 17, 2, &sec)) {
    return bad();
  }
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo) || h > 23 || mi > 59 || sec > 60) return bad();
  size_t i = 19;
  if (value[i] == '.') {
    ++i;
    const size_t digits = i;
    while (i < value.size() && value[i] >= '0' && value[i] <= '9') ++i;
    if (i == digits) return bad();
  }
  int64_t offset = 0;
  if (i < value.size() && (value[i] == 'Z' || value[i] == 'z')) {
    ++i;
  } else if (i + 6 == value.size() && (value[i] == '+' || value[i] == '-') && value[i + 3] == ':') {
    int oh = 0, om = 0;
    if (!Digits(value, i + 1, 2, &oh) || !Digits(value, i + 4, 2, &om) || oh > 23 || om > 59) return bad();
    offset = (value[i] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    i += 6;
  } else {
    return bad();
  }
  if (i != value.size()) return bad();
  return DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset;
}

}  // namespace tidal
