// Config versions and document diffs (see document_diff.h). Threading: pure functions.
#include "core/io/document_diff.h"

#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <set>

namespace tidal {

std::string BytesVersion(const std::string& bytes) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a 64
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string DocumentVersion(const nlohmann::json& doc) { return BytesVersion(doc.dump()); }  // keys sorted

namespace {

void Diff(const nlohmann::json& l, const nlohmann::json& r, const std::string& path, std::vector<FieldDiff>* out) {
  if (l == r) return;
  auto join = [&](const std::string& k) { return path.empty() ? k : path + "." + k; };
  if (l.is_object() && r.is_object()) {
    std::set<std::string> keys;  // both sides' keys, in order
    for (const auto& [k, v] : l.items()) keys.insert(k);
    for (const auto& [k, v] : r.items()) keys.insert(k);
    for (const auto& k : keys) {
      if (!r.contains(k)) {
        out->push_back({join(k), l.at(k), nullptr, false, true});
      } else if (!l.contains(k)) {
        out->push_back({join(k), nullptr, r.at(k), true, false});
      } else {
        Diff(l.at(k), r.at(k), join(k), out);
      }
    }
    return;
  }
  if (l.is_array() && r.is_array()) {
    const size_t n = std::max(l.size(), r.size());
    for (size_t i = 0; i < n; ++i) {
      const std::string p = path + "[" + std::to_string(i) + "]";
      if (i >= r.size()) {
        out->push_back({p, l[i], nullptr, false, true});
      } else if (i >= l.size()) {
        out->push_back({p, nullptr, r[i], true, false});
      } else {
        Diff(l[i], r[i], p, out);
      }
    }
    return;
  }
  out->push_back({path, l, r, false, false});
}

}  // namespace

std::vector<FieldDiff> DiffDocuments(const nlohmann::json& left, const nlohmann::json& right) {
  std::vector<FieldDiff> out;
  Diff(left, right, "", &out);
  return out;
}

}  // namespace tidal
