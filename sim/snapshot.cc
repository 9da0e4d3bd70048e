#include "sim/snapshot.h"

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "core/io/cluster_file.h"
#include "core/io/document_diff.h"

namespace tidal::sim {
namespace {

// Reads fields of one JSON object, collecting "snapshot.<path>.<field>: reason" for each problem.
class Reader {
 public:
  std::vector<std::string> errors;

  void Fail(const std::string& path, const std::string& why) { errors.push_back(path + ": " + why); }

  const nlohmann::json* Get(const nlohmann::json& o, const std::string& path, const char* key, bool required) {
    if (!o.is_object()) return nullptr;
    auto it = o.find(key);
    if (it == o.end()) {
      if (required) Fail(path + "." + key, "missing");
      return nullptr;
    }
    return &*it;
  }
  bool Int(const nlohmann::json& o, const std::string& path, const char* key, int64_t* out, bool required = true,
           int64_t min = INT64_MIN) {
    const nlohmann::json* v = Get(o, path, key, required);
    if (v == nullptr) return false;
    if (!v->is_number_integer()) return Fail(path + "." + key, "must be a whole number"), false;
    const int64_t x = v->get<int64_t>();
    if (x < min) return Fail(path + "." + key, "must be >= " + std::to_string(min)), false;
    *out = x;
    return true;
  }
  bool Int32(const nlohmann::json& o, const std::string& path, const char* key, int32_t* out, bool required, int64_t min) {
    int64_t x = 0;
    if (!Int(o, path, key, &x, required, min)) return false;
    if (x > INT32_MAX) return Fail(path + "." + key, "too large"), false;
    *out = static_cast<int32_t>(x);
    return true;
  }
  bool Str(const nlohmann::json& o, const std::string& path, const char* key, std::string* out, bool required = true) {
    const nlohmann::json* v = Get(o, path, key, required);
    if (v == nullptr) return false;
    if (!v->is_string()) return Fail(path + "." + key, "must be a string"), false;
    *out = v->get<std::string>();
    return true;
  }
  bool Bool(const nlohmann::json& o, const std::string& path, const char* key, bool* out, bool required = true) {
    const nlohmann::json* v = Get(o, path, key, required);
    if (v == nullptr) return false;
    if (!v->is_boolean()) return Fail(path + "." + key, "must be true or false"), false;
    *out = v->get<bool>();
    return true;
  }
  bool Res(const nlohmann::json& o, const std::string& path, const char* key, Resources* out) {
    const nlohmann::json* v = Get(o, path, key, true);
    if (v == nullptr) return false;
    if (!v->is_object()) return Fail(path + "." + key, "must be an object {gpus, cpu_milli, memory_bytes}"), false;
    const std::string p = path + "." + key;
    bool ok = Int(*v, p, "gpus", &out->gpus, true, 0);
    ok = Int(*v, p, "cpu_milli", &out->cpu_milli, false, 0) && ok;
    ok = Int(*v, p, "memory_bytes", &out->memory_bytes, false, 0) && ok;
    return ok;
  }
  const nlohmann::json* Array(const nlohmann::json& o, const std::string& path, const char* key) {
    const nlohmann::json* v = Get(o, path, key, true);
    if (v != nullptr && !v->is_array()) return Fail(path + "." + key, "must be a list"), nullptr;
    return v;
  }
  // [{node, members}, ...]: every node known, members >= 1; returns the members' sum.
  int64_t Placement(const nlohmann::json& o, const std::string& path, const std::set<std::string>& nodes,
                    std::vector<std::pair<std::string, int32_t>>* out) {
    const nlohmann::json* a = Array(o, path, "placement");
    if (a == nullptr) return -1;
    int64_t sum = 0;
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string p = path + ".placement[" + std::to_string(i) + "]";
      std::string node;
      int32_t m = 0;
      if (!Str((*a)[i], p, "node", &node) || !Int32((*a)[i], p, "members", &m, true, 1)) continue;
      if (!nodes.count(node)) Fail(p + ".node", "\"" + node + "\" is not among snapshot.nodes");
      out->emplace_back(node, m);
      sum += m;
    }
    return sum;
  }
};

void ReadWorkload(Reader& r, const nlohmann::json& o, const std::string& path, bool running, const Snapshot& s,
                  const std::set<std::string>& node_names, SnapshotWorkload* out) {
  Workload& w = out->w;
  if (!o.is_object()) return r.Fail(path, "must be an object");
  if (r.Str(o, path, "id", &w.id) && w.id.empty()) r.Fail(path + ".id", "must not be empty");
  r.Bool(o, path, "tidal", &out->tidal, false);
  r.Str(o, path, "queue", &w.queue);
  if (w.queue.empty() && (!running || out->tidal)) r.Fail(path + ".queue", "must not be empty");
  std::string door;
  if (r.Str(o, path, "door", &door)) {
    if (door == "kubernetes") {
      w.front_door = FrontDoor::kKubernetes;
    } else if (door == "slurm") {
      w.front_door = FrontDoor::kSlurm;
    } else {
      r.Fail(path + ".door", "must be kubernetes or slurm, got \"" + door + "\"");
    }
  }
  r.Int32(o, path, "members", &w.members, true, 1);
  w.min_members = w.members;
  if (r.Int32(o, path, "min_members", &w.min_members, false, 1) && w.min_members > w.members) {
    r.Fail(path + ".min_members", "must be <= members (" + std::to_string(w.members) + ")");
  }
  r.Res(o, path, "per_member", &w.per_member);
  int64_t prio = 0;
  if (r.Int(o, path, "priority", &prio, true, INT32_MIN)) w.priority = static_cast<int32_t>(std::min<int64_t>(prio, INT32_MAX));
  r.Bool(o, path, "preemptible", &w.preemptible);
  r.Bool(o, path, "checkpoint_on_notice", &w.checkpoints_on_notice, false);
  r.Int(o, path, "checkpoint_interval_s", &w.checkpoint_interval_s, false, 0);
  r.Int(o, path, "runtime_s", &w.runtime_limit_s, true, 0);
  std::string cls;
  if (r.Str(o, path, "class", &cls, false)) {
    auto c = ParseWorkloadClass(cls, path + ".class");
    if (c.ok()) {
      w.workload_class = *c;
    } else {
      r.Fail(path + ".class", c.status().Message());
    }
  }
  if (running) {
    r.Int(o, path, "start", &out->start_s);
    const int64_t placed = r.Placement(o, path, node_names, &out->placement);
    if (placed >= 0 && placed != w.members) {
      r.Fail(path + ".placement", "holds " + std::to_string(placed) + " member(s), members says " + std::to_string(w.members));
    }
    w.submit_time_s = out->start_s;
    return;
  }
  r.Int(o, path, "submit", &w.submit_time_s);
  r.Str(o, path, "gpu_model", &w.gpu_model, false);
  for (auto [key, field] : {std::pair{"required_level", &w.required_level}, std::pair{"preferred_level", &w.preferred_level}}) {
    if (!r.Str(o, path, key, field, false) || field->empty()) continue;
    bool known = *field == "node";
    for (const auto& l : s.levels.levels) known = known || l.name == *field;
    if (!known) r.Fail(path + "." + key, "\"" + *field + "\" is not a level of snapshot.topology");
  }
}

}  // namespace

StatusOr<Snapshot> ParseSnapshot(const std::string& text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return Status::Error(source + ": not a complete JSON document (" + std::to_string(text.size()) +
                         " bytes read; truncated?): " + e.what());
  }
  return ReadSnapshot(doc, source);
}

StatusOr<Snapshot> ReadSnapshot(const nlohmann::json& doc, const std::string& source) {
  if (!doc.is_object()) return Status::Error(source + ": snapshot: must be a JSON object");
  Reader r;
  Snapshot s;
  std::string format;
  if (!r.Str(doc, "snapshot", "format", &format)) {
  } else if (format != kSnapshotFormat) {
    r.Fail("snapshot.format", "expected \"" + std::string(kSnapshotFormat) + "\", got \"" + format + "\"");
  }
  int64_t version = 0;
  if (r.Int(doc, "snapshot", "version", &version, true, 1) && version > kSnapshotVersion) {
    return Status::Error("snapshot: version " + std::to_string(version) + " is newer than this tidalctl reads (" +
                         std::to_string(kSnapshotVersion) + "); use a newer tidalctl");
  }
  auto fail = [&]() -> Status {
    Status st = Status::Error(source + ": " + r.errors.front());
    for (size_t i = 1; i < r.errors.size(); ++i) st.AddReason(source + ": " + r.errors[i]);
    return st;
  };
  if (!r.errors.empty()) return fail();
  s.version = static_cast<int>(version);
  r.Int(doc, "snapshot", "taken_at", &s.taken_at);
  r.Str(doc, "snapshot", "epoch", &s.epoch, false);
  if (const nlohmann::json* t = r.Get(doc, "snapshot", "topology", true)) {
    if (Status st = DecodeLevels(*t, "snapshot.topology", &s.levels); !st.ok()) {
      for (const auto& m : st.reasons()) r.errors.push_back(m);
    }
  }
  std::set<std::string> node_names;
  if (const nlohmann::json* a = r.Array(doc, "snapshot", "nodes")) {
    for (size_t i = 0; i < a->size(); ++i) {
      const nlohmann::json& o = (*a)[i];
      const std::string p = "snapshot.nodes[" + std::to_string(i) + "]";
      Node n;
      if (r.Str(o, p, "name", &n.name) && (n.name.empty() || !node_names.insert(n.name).second)) {
        r.Fail(p + ".name", n.name.empty() ? "must not be empty" : "\"" + n.name + "\" appears twice");
      }
      if (const nlohmann::json* l = r.Get(o, p, "labels", false)) {
        if (!l->is_object()) r.Fail(p + ".labels", "must be an object of strings");
        for (const auto& [k, v] : l->items()) {
          if (!v.is_string()) r.Fail(p + ".labels." + k, "must be a string");
          if (v.is_string()) n.labels[k] = v.get<std::string>();
        }
      }
      r.Res(o, p, "capacity", &n.capacity);
      r.Str(o, p, "gpu_model", &n.gpu_model, false);
      r.Str(o, p, "named_pool", &n.named_pool, false);
      std::string word;
      if (r.Str(o, p, "health", &word)) {
        auto h = ParseNodeHealth(word, p + ".health");
        if (h.ok()) n.health = *h;
        if (!h.ok()) r.Fail(p + ".health", h.status().Message());
      }
      if (r.Str(o, p, "pool", &word, false)) {
        auto pool = ParsePool(word, p + ".pool");
        if (pool.ok()) n.pool = *pool;
        if (!pool.ok()) r.Fail(p + ".pool", pool.status().Message());
      }
      s.nodes.push_back(std::move(n));
    }
  }
  std::set<std::string> ids[2];
  for (int running = 1; running >= 0; --running) {
    const char* key = running ? "running" : "pending";
    const nlohmann::json* a = r.Array(doc, "snapshot", key);
    if (a == nullptr) continue;
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string p = std::string("snapshot.") + key + "[" + std::to_string(i) + "]";
      SnapshotWorkload w;
      ReadWorkload(r, (*a)[i], p, running == 1, s, node_names, &w);
      if (!w.w.id.empty() && !ids[running].insert(w.w.id).second) r.Fail(p + ".id", "\"" + w.w.id + "\" appears twice");
      (running ? s.running : s.pending).push_back(std::move(w));
    }
  }
  if (const nlohmann::json* u = r.Get(doc, "snapshot", "usage", true)) {
    int64_t t = 0;
    const bool time_ok = r.Int(*u, "snapshot.usage", "time", &t);
    const nlohmann::json* per = r.Get(*u, "snapshot.usage", "usage", true);
    if (per != nullptr && !per->is_object()) r.Fail("snapshot.usage.usage", "must be an object {queue: {resource: number}}");
    if (!u->is_object()) r.Fail("snapshot.usage", "must be an object {time, usage}");
    if (time_ok && per != nullptr && per->is_object()) s.usage = *u;
  }
  if (const nlohmann::json* a = r.Array(doc, "snapshot", "reservations")) {
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string p = "snapshot.reservations[" + std::to_string(i) + "]";
      SnapshotReservation res;
      r.Str((*a)[i], p, "id", &res.id);
      r.Int((*a)[i], p, "start", &res.start_s);
      r.Bool((*a)[i], p, "hold", &res.hold, false);
      r.Placement((*a)[i], p, node_names, &res.placement);
      s.reservations.push_back(std::move(res));
    }
  }
  if (const nlohmann::json* c = r.Get(doc, "snapshot", "config", true)) {
    r.Str(*c, "snapshot.config", "version", &s.config_version);
    if (const nlohmann::json* d = r.Get(*c, "snapshot.config", "document", true)) {
      if (!d->is_null() && !d->is_object()) r.Fail("snapshot.config.document", "must be an object or null");
      s.config = *d;
    }
  }
  if (!r.errors.empty()) return fail();
  return s;
}

StatusOr<Snapshot> LoadSnapshot(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(path + ": cannot read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseSnapshot(ss.str(), path);
}

std::string AnonymousName(const std::string& prefix, const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return prefix + std::string(buf, 12);
}

Status AnonymiseSnapshot(nlohmann::json& doc, bool queues) {
  if (!doc.is_object() || doc.value("format", "") != kSnapshotFormat) return Status::Error("anonymise: not a snapshot");
  auto node = [](nlohmann::json& v) {
    if (v.is_string()) v = AnonymousName("n-", v.get<std::string>());
  };
  auto id = [](nlohmann::json& v) {
    if (v.is_string()) v = AnonymousName("w-", v.get<std::string>());
  };
  std::map<std::string, std::string> queue_names;
  auto queue = [&](nlohmann::json& v) {
    if (!queues || !v.is_string() || v.get<std::string>().empty()) return;
    const std::string q = v.get<std::string>();
    v = queue_names.emplace(q, AnonymousName("q-", q)).first->second;
  };
  auto placement = [&](nlohmann::json& o) {
    if (!o.is_object() || !o.contains("placement") || !o["placement"].is_array()) return;
    for (auto& p : o["placement"]) {
      if (p.is_object() && p.contains("node")) node(p["node"]);
    }
  };
  if (doc.contains("nodes") && doc["nodes"].is_array()) {
    for (auto& n : doc["nodes"]) {
      if (!n.is_object()) continue;
      if (n.contains("name")) node(n["name"]);
      if (n.contains("labels") && n["labels"].is_object()) {
        for (auto& [k, v] : n["labels"].items()) {
          if (v.is_string()) v = AnonymousName("d-", v.get<std::string>());
        }
      }
    }
  }
  for (const char* key : {"running", "pending", "reservations"}) {
    if (!doc.contains(key) || !doc[key].is_array()) continue;
    for (auto& w : doc[key]) {
      if (!w.is_object()) continue;
      if (w.contains("id")) id(w["id"]);
      if (w.contains("queue")) queue(w["queue"]);
      placement(w);
    }
  }
  if (!queues) return Status::Ok();
  if (doc.contains("usage") && doc["usage"].is_object() && doc["usage"].contains("usage") && doc["usage"]["usage"].is_object()) {
    nlohmann::json renamed = nlohmann::json::object();
    for (auto& [q, v] : doc["usage"]["usage"].items()) {
      nlohmann::json name = q;
      queue(name);
      renamed[name.get<std::string>()] = v;
    }
    doc["usage"]["usage"] = renamed;
  }
  // The config names queues (queues[].name, parents, pools' owners): every string equal to a
  // queue name anywhere in it.
  if (doc.contains("config") && doc["config"].is_object() && doc["config"].contains("document")) {
    std::set<std::string> names;
    std::function<void(const nlohmann::json&)> collect = [&](const nlohmann::json& j) {
      if (j.is_object() && j.contains("queues") && j["queues"].is_array()) {
        for (const auto& q : j["queues"]) {
          if (q.is_object() && q.contains("name") && q["name"].is_string()) names.insert(q["name"].get<std::string>());
        }
      }
    };
    collect(doc["config"]["document"]);
    for (const auto& [q, _] : queue_names) names.insert(q);
    std::function<void(nlohmann::json&)> walk = [&](nlohmann::json& j) {
      if (j.is_string()) {
        if (names.count(j.get<std::string>())) queue(j);
      } else if (j.is_array() || j.is_object()) {
        for (auto& x : j) walk(x);
      }
    };
    walk(doc["config"]["document"]);
    doc["config"]["version"] = DocumentVersion(doc["config"]["document"]);
  }
  return Status::Ok();
}

}  // namespace tidal::sim
