#include "core/api/duration.h"

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

}  // namespace tidal
