#include "core/api/duration.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "core/api/limits.h"

#include <cctype>
#include <charconv>
#include <system_error>
#include <limits>
#include <utility>

namespace tidal {

StatusOr<int64_t> ParseDurationSeconds(const std::string& text, const std::string& field) {
  auto bad = [&](const std::string& why) {
    return Status::Error(field + ": invalid duration \"" + text + "\": " + why +
                         " (examples: 90s, 30m, 12h, 1h30m, 2d, or seconds as a number)");
  };
  if (text.empty()) return bad("empty");
  int64_t total = 0;
  size_t i = 0;
  bool any = false;
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
    int64_t unit = 0;
    switch (text[j]) {
      case 's': unit = 1; break;
      case 'm': unit = 60; break;
      case 'h': unit = 3600; break;
      case 'd': unit = 86400; break;
      default: return bad(std::string("unknown unit '") + text[j] + "'");
    }
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
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, n = 0;
  if (std::sscanf(value.c_str(), "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19) return bad();
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return bad();
  size_t i = 19;
  if (i < value.size() && value[i] == '.') {
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
    if (std::sscanf(value.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2 || oh > 23 || om > 59) return bad();
    offset = (value[i] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    i += 6;
  } else {
    return bad();
  }
  if (i != value.size()) return bad();
  // Days since 1970-01-01 (civil calendar, H. Hinnant's days_from_civil).
  const int yy = y - (mo <= 2 ? 1 : 0);
  const int era = yy / 400;
  const int yoe = yy - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = static_cast<int64_t>(era) * 146097 + doe - 719468;
  return days * 86400 + h * 3600 + mi * 60 + sec - offset;
}

}  // namespace tidal
