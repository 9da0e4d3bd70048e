// Durations in config and annotations: "90s", "30m", "12h", "1h30m", "2d" or plain seconds, each unit
// at most once and largest first ("30m30m" and "5s1h" are errors), at most limits::kMaxDurationS
// (365 days; core/api/limits.h): a longer one is an error naming the field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/api/status.h"

namespace tidal {

StatusOr<int64_t> ParseDurationSeconds(const std::string& text, const std::string& field);
// The inverse for people reading events: "1d2h29m59s", "5m", "0s" (negative spans read "0s").
std::string FormatDurationSeconds(int64_t seconds);
// A unix time as RFC 3339 UTC with seconds: "2026-12-02T10:00:00Z".
std::string FormatUnixTime(int64_t unix_s);
// RFC 3339 ("2026-12-02T10:00:00Z", offsets and fractions accepted) or decimal unix seconds; an
// error naming `field` and the value otherwise.
StatusOr<int64_t> ParseUnixTime(const std::string& value, std::string_view field);

}  // namespace tidal
