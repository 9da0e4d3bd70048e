#include "core/api/resources.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

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

StatusOr<int64_t> ParseQuantity(std::string_view text, bool milli, std::string_view field) {
  auto bad = [&](const std::string& why) {
    return Status::Error(std::string(field) + ": invalid quantity \"" + std::string(text) + "\": " + why);
  };
  if (text.empty()) return bad("empty");
  size_t i = 0;
  std::string number;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    number += text[i++];
  }
  if (number.empty() || number == ".") return bad("expected a non-negative number");
  if (number.find('.') != number.rfind('.')) return bad("more than one decimal point");
  std::string_view suffix = text.substr(i);
  double scale = 1;
  struct Suffix {
    std::string_view s;
    double m;
  };
  static constexpr Suffix kSuffixes[] = {
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
      {"Pi", 1125899906842624.0}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
      {"P", 1e15}, {"m", 1e-3}, {"", 1}};
  bool found = false;
  for (const auto& s : kSuffixes) {
    if (suffix == s.s) {
      scale = s.m;
      found = true;
      break;
    }
  }
  if (!found) return bad("unknown suffix \"" + std::string(suffix) + "\" (accepted: m, k, M, G, T, P, Ki, Mi, Gi, Ti, Pi)");
  // strtod, not stod: a digit string beyond double's range yields HUGE_VAL (reported below as
  // "too large") instead of throwing.
  double value = std::strtod(number.c_str(), nullptr) * scale * (milli ? 1000.0 : 1.0);
  if (!std::isfinite(value) || value > 9.0e18) return bad("too large");
  return static_cast<int64_t>(std::ceil(value - 1e-9));
}

}  // namespace tidal
