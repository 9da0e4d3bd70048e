// Prometheus text exposition format 0.0.4: the low-level pieces the metrics registry renders with
// (value formatting, escaping, name validation). Kept separate so each rule is testable on its own.
//
// Format reference: https://prometheus.io/docs/instrumenting/exposition_formats/
//   - label values escape backslash, double quote and line feed (\\ \" \n);
//   - HELP text escapes backslash and line feed only;
//   - values are Go ParseFloat-compatible: "NaN", "+Inf", "-Inf", decimals or exponent notation.
// Both escapers also replace invalid UTF-8 with U+FFFD: Prometheus rejects a scrape whose label
// value is not valid UTF-8, and one bad queue name must not take the whole /metrics page down.
//
// Threading: pure functions, no shared state.
#pragma once

#include <string>
#include <string_view>

namespace tidal::metrics {

// The Content-Type header a /metrics response must carry.
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

// NaN -> "NaN", +inf -> "+Inf", -inf -> "-Inf"; integral values (|v| < 9e18) print as integers
// ("1000000", never "1e+06"; -0 prints "0"); anything else is the shortest string that parses back
// to the same double, in exponent form only below 1e-4 as Go's strconv does ("0.1", "0.0001",
// "1234567.5", "2.5e-07", "1e+20").
std::string FormatValue(double v);

// Appends `s` escaped for a label value (\\, \", \n) with invalid UTF-8 replaced by U+FFFD.
void AppendEscapedLabelValue(std::string& out, std::string_view s);
std::string EscapeLabelValue(std::string_view s);

// Appends `s` escaped for a HELP line (\\, \n) with invalid UTF-8 replaced by U+FFFD.
void AppendEscapedHelp(std::string& out, std::string_view s);
std::string EscapeHelp(std::string_view s);

// Returns `s` with every invalid UTF-8 sequence replaced by U+FFFD (valid input is unchanged).
std::string SanitizeUtf8(std::string_view s);
bool IsValidUtf8(std::string_view s);

// Metric names: [a-zA-Z_][a-zA-Z0-9_]* (colons are legal in the format but reserved for recording
// rules, so the registry refuses them).
bool IsValidMetricName(std::string_view name);
// Label names: [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved for Prometheus itself).
bool IsValidLabelName(std::string_view name);

}  // namespace tidal::metrics
