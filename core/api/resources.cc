#include "core/api/resources.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace tidal {

int64_t Resources::CopiesOf(const Resources& req) const {
  constexpr int64_t kMany = std::numeric_limits<int32_t>::max();
  int64_t n = kMany;
  auto limit = [&n](int64_t have, int64_t want) {
    if (want > 0) n = std::min(n, have < 0 ? 0 : have / want);
  };
  limit(gpus, req.gpus);
  limit(cpu_milli, req.cpu_milli);
  limit(memory_bytes, req.memory_bytes);
  return n;
}

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  int u = 0;
  int64_t v = bytes;
  while (u < 5 && v != 0 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + kUnits[u];
}

std::string FormatMilli(int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  return std::to_string(milli) + "m";
}

std::string Resources::ToString() const {
  return std::to_string(gpus) + " GPU, " + FormatMilli(cpu_milli) + " CPU, " + FormatBytes(memory_bytes);
}

namespace {

Status BadQuantity(std::string_view text, std::string_view field, const std::string& why) {
  return Status::Error(std::string(field) + ": invalid quantity \"" + std::string(text) + "\": " + why);
}

// The quantity's value in whole units (a fraction allowed): "500m" -> 0.5, "2Ki" -> 2048.
StatusOr<double> ParseScaled(std::string_view text, std::string_view field) {
  if (text.empty()) return BadQuantity(text, field, "empty");
  size_t i = 0;
  std::string number;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    number += text[i++];
  }
  if (number.empty() || number == ".") return BadQuantity(text, field, "expected a non-negative number");
  if (number.find('.') != number.rfind('.')) return BadQuantity(text, field, "more than one decimal point");
  std::string_view suffix = text.substr(i);
  struct Suffix {
    std::string_view s;
    double m;
  };
  static constexpr Suffix kSuffixes[] = {
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
      {"Pi", 1125899906842624.0}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
      {"P", 1e15}, {"m", 1e-3}, {"", 1}};
  for (const auto& s : kSuffixes) {
    // strtod, not stod: a digit string beyond double's range yields HUGE_VAL (reported by the
    // callers as "too large") instead of throwing.
    if (suffix == s.s) return std::strtod(number.c_str(), nullptr) * s.m;
  }
  return BadQuantity(text, field, "unknown suffix \"" + std::string(suffix) +
                                      "\" (accepted: m, k, M, G, T, P, Ki, Mi, Gi, Ti, Pi)");
}

constexpr double kMaxQuantity = 9.0e18;

// `value` (whole units) in the result's unit, rounded up; "too large" past kMaxQuantity.
StatusOr<int64_t> ToUnits(double value, bool milli, std::string_view text, std::string_view field) {
  const double v = value * (milli ? 1000.0 : 1.0);
  if (!std::isfinite(v) || v > kMaxQuantity) return BadQuantity(text, field, "too large");
  return static_cast<int64_t>(std::ceil(v - 1e-9));
}

// GPUs are whole devices: `value` must be a whole number.
StatusOr<int64_t> ToGpus(double value, std::string_view text, std::string_view field) {
  if (!std::isfinite(value) || value > kMaxQuantity) return BadQuantity(text, field, "too large");
  if (std::fabs(value - std::round(value)) > 1e-9) {
    return Status::Error(std::string(field) + ": " + std::string(text) +
                         " is not a whole number of GPUs (GPUs are whole devices)");
  }
  return static_cast<int64_t>(std::llround(value));
}

}  // namespace

StatusOr<int64_t> ParseQuantity(std::string_view text, bool milli, std::string_view field) {
  auto v = ParseScaled(text, field);
  if (!v.ok()) return v.status();
  return ToUnits(*v, milli, text, field);
}

StatusOr<int64_t> ParseGpuQuantity(std::string_view text, std::string_view field) {
  auto v = ParseScaled(text, field);
  if (!v.ok()) return v.status();
  return ToGpus(*v, text, field);
}

StatusOr<int64_t> QuantityFromNumber(double value, bool milli, bool gpus, std::string_view field) {
  std::ostringstream text;
  text << value;
  if (std::isnan(value) || value < 0) return BadQuantity(text.str(), field, "expected a non-negative number");
  return gpus ? ToGpus(value, text.str(), field) : ToUnits(value, milli, text.str(), field);
}

}  // namespace tidal
