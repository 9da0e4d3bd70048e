#include "core/metrics/text_format.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <system_error>

namespace tidal::metrics {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at s[i], or 0 when the bytes there are not one
// (overlong forms, surrogates and code points above U+10FFFF are invalid, as in Go's utf8 package).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  }
  return len;
}

// Appends s with invalid UTF-8 replaced, escaping '\\', '\n' and (when quote) '"'.
void AppendEscaped(std::string& out, std::string_view s, bool quote) {
  out.reserve(out.size() + s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t len = Utf8SequenceLength(s, i);
    if (len == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    if (len == 1) {
      const char c = s[i];
      if (c == '\\') {
        out += "\\\\";
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '"' && quote) {
        out += "\\\"";
      } else {
        out += c;
      }
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
}

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

bool IsSimpleName(std::string_view name) {
  if (name.empty() || !IsNameStart(name[0])) return false;
  for (char c : name) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::trunc(v) && std::fabs(v) < 9e18) return std::to_string(static_cast<int64_t>(v));
  // Shortest round-trip digits; exponent form below 1e-4 (as Go's strconv) and for the integers
  // too large for the branch above (every double from 2^53 up is an integer, so any non-integer
  // here is below 1e16 and prints fixed).
  char buf[128];
  const double mag = std::fabs(v);
  const auto fmt = mag < 1e-4 || mag >= 1e16 ? std::chars_format::scientific : std::chars_format::fixed;
  const auto res = std::to_chars(buf, buf + sizeof buf, v, fmt);
  if (res.ec != std::errc()) return "NaN";  // cannot happen with this buffer; keeps the output parseable
  return std::string(buf, res.ptr);
}

void AppendEscapedLabelValue(std::string& out, std::string_view s) { AppendEscaped(out, s, /*quote=*/true); }

std::string EscapeLabelValue(std::string_view s) {
  std::string out;
  AppendEscapedLabelValue(out, s);
  return out;
}

void AppendEscapedHelp(std::string& out, std::string_view s) { AppendEscaped(out, s, /*quote=*/false); }

std::string EscapeHelp(std::string_view s) {
  std::string out;
  AppendEscapedHelp(out, s);
  return out;
}

std::string SanitizeUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t len = Utf8SequenceLength(s, i);
    if (len == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = Utf8SequenceLength(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

bool IsValidMetricName(std::string_view name) { return IsSimpleName(name); }

bool IsValidLabelName(std::string_view name) { return IsSimpleName(name) && name.rfind("__", 0) != 0; }

}  // namespace tidal::metrics
