// Maintenance windows and node closes (see maintenance.h). Threading: pure functions.
#include "engine/maintenance.h"

#include "core/api/duration.h"
#include "core/api/limits.h"

namespace tidal {

namespace {

constexpr size_t kMaxWindows = 1000;
constexpr size_t kMaxNamesPerWindow = 100000;

// A time field: RFC 3339 or unix seconds, as a string or an integer.
Status TimeField(const nlohmann::json& v, const std::string& field, int64_t* out) {
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    if (*out <= 0) return Status::Error(field + ": must be a unix time after 1970");
    return Status::Ok();
  }
  if (!v.is_string()) return Status::Error(field + ": must be an RFC 3339 time or unix seconds");
  auto t = ParseUnixTime(v.get<std::string>(), field);
  if (!t.ok()) return t.status();
  *out = *t;
  return Status::Ok();
}

Status DecodeWindow(const nlohmann::json& w, const std::string& f, MaintenanceWindow* out) {
  if (!w.is_object()) return Status::Error(f + ": must be a mapping");
  for (const auto& [k, v] : w.items()) {
    if (k != "name" && k != "nodes" && k != "selector" && k != "start" && k != "end" && k != "duration") {
      return Status::Error(f + "." + k.substr(0, 64) + ": unknown field (accepted: name, nodes, selector, start, end, duration)");
    }
  }
  if (!w.contains("name") || !w.at("name").is_string() || w.at("name").get<std::string>().empty() ||
      w.at("name").get<std::string>().size() > 253) {
    return Status::Error(f + ".name: required, a string of 1..253 bytes");
  }
  out->name = w.at("name").get<std::string>();
  if (w.contains("nodes")) {
    const auto& n = w.at("nodes");
    if (!n.is_array() || n.size() > kMaxNamesPerWindow) return Status::Error(f + ".nodes: must be a list of node names");
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].is_string() || n[i].get<std::string>().empty() || n[i].get<std::string>().size() > 253) {
        return Status::Error(f + ".nodes[" + std::to_string(i) + "]: must be a node name (1..253 bytes)");
      }
      out->nodes.insert(n[i].get<std::string>());
    }
  }
  if (w.contains("selector")) {
    const auto& s = w.at("selector");
    if (!s.is_object() || s.empty()) return Status::Error(f + ".selector: must be a non-empty mapping of node label to value");
    for (const auto& [k, v] : s.items()) {
      if (!limits::IsLabelKey(k)) return Status::Error(f + ".selector: invalid label key \"" + k.substr(0, 100) + "\"");
      if (!v.is_string() || v.get<std::string>().size() > 63) {
        return Status::Error(f + ".selector." + k + ": must be a label value (a string of at most 63 bytes)");
      }
      out->selector[k] = v.get<std::string>();
    }
  }
  if (out->nodes.empty() && out->selector.empty()) return Status::Error(f + ": name nodes or a selector (a window covering no node)");
  if (!w.contains("start")) return Status::Error(f + ".start: required (RFC 3339 or unix seconds)");
  if (Status s = TimeField(w.at("start"), f + ".start", &out->start_s); !s.ok()) return s;
  if (w.contains("end") == w.contains("duration")) return Status::Error(f + ": give exactly one of end, duration");
  if (w.contains("end")) {
    if (Status s = TimeField(w.at("end"), f + ".end", &out->end_s); !s.ok()) return s;
  } else {
    const auto& d = w.at("duration");
    if (!d.is_string() && !d.is_number_integer()) return Status::Error(f + ".duration: must be a duration such as 4h or seconds");
    auto secs = ParseDurationSeconds(d.is_string() ? d.get<std::string>() : std::to_string(d.get<int64_t>()), f + ".duration");
    if (!secs.ok()) return secs.status();
    out->end_s = out->start_s + *secs;
  }
  if (out->end_s <= out->start_s) return Status::Error(f + ".end: must be after start");
  return Status::Ok();
}

}  // namespace

bool MaintenanceWindow::Covers(const std::string& node, const std::map<std::string, std::string>& labels) const {
  if (nodes.count(node) > 0) return true;
  if (selector.empty()) return false;
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

bool EarliestClose(const std::vector<NodeClose>& closes, int64_t now, NodeClose* out) {
  bool found = false;
  for (const auto& c : closes) {
    if (c.until <= now) continue;  // over
    const bool better = !found || (c.Closed(now) && !out->Closed(now)) ||
                        (c.Closed(now) == out->Closed(now) && (c.by < out->by || (c.by == out->by && c.until > out->until)));
    if (better) {
      *out = c;
      found = true;
    }
  }
  return found;
}

Status DecodeMaintenance(const nlohmann::json& j, std::vector<MaintenanceWindow>* out) {
  if (!j.is_object()) return Status::Error("maintenance: must be a mapping");
  for (const auto& [k, v] : j.items()) {
    if (k != "windows") return Status::Error("maintenance." + k.substr(0, 64) + ": unknown field (accepted: windows)");
  }
  if (!j.contains("windows")) return Status::Ok();
  const auto& ws = j.at("windows");
  if (!ws.is_array()) return Status::Error("maintenance.windows: must be a list");
  if (ws.size() > kMaxWindows) return Status::Error("maintenance.windows: at most " + std::to_string(kMaxWindows) + " windows");
  std::vector<MaintenanceWindow> decoded;
  std::set<std::string> names;
  for (size_t i = 0; i < ws.size(); ++i) {
    const std::string f = "maintenance.windows[" + std::to_string(i) + "]";
    MaintenanceWindow w;
    if (Status s = DecodeWindow(ws[i], f, &w); !s.ok()) return s;
    if (!names.insert(w.name).second) return Status::Error(f + ".name: \"" + w.name + "\" is used by an earlier window");
    decoded.push_back(std::move(w));
  }
  *out = std::move(decoded);
  return Status::Ok();
}

}  // namespace tidal
