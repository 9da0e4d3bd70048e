// Tidal's recorded-state format: ClusterRecords 1:1 as JSON, one record per line, fields at their
// default value left out (see json_state.h). Reading is strict: this is our own format, so an
// unknown key or a mistyped value is a bug in whoever wrote the file, and fails the read.
//
// Threading: pure functions; no shared state.
#include <nlohmann/json.hpp>

#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <type_traits>

#include "shim/slurm/json_state.h"

namespace tidal::slurm {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr const char* kFormat = "tidal-slurm-state/1";

// Field lists: one place that names every field of a record, for the writer and the reader.
template <typename J, typename V>
void VisitJob(J& a, const JobRecord& d, V& v) {
  v("id", a.id, d.id);
  v("job_id", a.job_id, d.job_id);
  v("array_job_id", a.array_job_id, d.array_job_id);
  v("array_task_id", a.array_task_id, d.array_task_id);
  v("pending_array_tasks", a.pending_array_tasks, d.pending_array_tasks);
  v("array_max_tasks", a.array_max_tasks, d.array_max_tasks);
  v("name", a.name, d.name);
  v("user", a.user, d.user);
  v("account", a.account, d.account);
  v("partition", a.partition, d.partition);
  v("qos", a.qos, d.qos);
  v("state", a.state, d.state);
  v("completing", a.completing, d.completing);
  v("state_reason", a.state_reason, d.state_reason);
  v("priority", a.priority, d.priority);
  v("nice", a.nice, d.nice);
  v("dependency", a.dependency, d.dependency);
  v("node_count", a.node_count, d.node_count);
  v("max_node_count", a.max_node_count, d.max_node_count);
  v("gpus_per_node", a.gpus_per_node, d.gpus_per_node);
  v("gpus_total", a.gpus_total, d.gpus_total);
  v("gpu_model", a.gpu_model, d.gpu_model);
  v("cpus_per_node", a.cpus_per_node, d.cpus_per_node);
  v("memory_mb_per_node", a.memory_mb_per_node, d.memory_mb_per_node);
  v("time_limit_min", a.time_limit_min, d.time_limit_min);
  v("time_unlimited", a.time_unlimited, d.time_unlimited);
  v("exclusive", a.exclusive, d.exclusive);
  v("submit_time", a.submit_time, d.submit_time);
  v("start_time", a.start_time, d.start_time);
  v("end_time", a.end_time, d.end_time);
  v("eligible_time", a.eligible_time, d.eligible_time);
  v("restart_cnt", a.restart_cnt, d.restart_cnt);
  v("requeueable", a.requeueable, d.requeueable);
  v("nodes", a.nodes, d.nodes);
  v("node_gpus", a.node_gpus, d.node_gpus);
  v("batch_host", a.batch_host, d.batch_host);
  v("required_nodes", a.required_nodes, d.required_nodes);
  v("excluded_nodes", a.excluded_nodes, d.excluded_nodes);
  v("features", a.features, d.features);
  v("req_switch", a.req_switch, d.req_switch);
  v("comment", a.comment, d.comment);
  v("admin_comment", a.admin_comment, d.admin_comment);
  v("warn_signal", a.warn_signal, d.warn_signal);
  v("warn_time_s", a.warn_time_s, d.warn_time_s);
  v("warn_batch_only", a.warn_batch_only, d.warn_batch_only);
  v("parse_error", a.parse_error, d.parse_error);
}

template <typename N, typename V>
void VisitNode(N& a, const NodeRecord& d, V& v) {
  v("name", a.name, d.name);
  v("state", a.state, d.state);
  v("drain", a.drain, d.drain);
  v("completing", a.completing, d.completing);
  v("not_responding", a.not_responding, d.not_responding);
  v("maint", a.maint, d.maint);
  v("reserved", a.reserved, d.reserved);
  v("gpus", a.gpus, d.gpus);
  v("gpu_model", a.gpu_model, d.gpu_model);
  v("gpu_types", a.gpu_types, d.gpu_types);
  v("gpus_used", a.gpus_used, d.gpus_used);
  v("cpus", a.cpus, d.cpus);
  v("real_memory_mb", a.real_memory_mb, d.real_memory_mb);
  v("reason", a.reason, d.reason);
  v("partitions", a.partitions, d.partitions);
  v("features", a.features, d.features);
  v("parse_error", a.parse_error, d.parse_error);
}

template <typename P, typename V>
void VisitPartition(P& a, const PartitionRecord& d, V& v) {
  v("name", a.name, d.name);
  v("schedules", a.schedules, d.schedules);
  v("state", a.state, d.state);
  v("max_time_min", a.max_time_min, d.max_time_min);
  v("min_nodes", a.min_nodes, d.min_nodes);
  v("max_nodes", a.max_nodes, d.max_nodes);
}

ordered_json ToJson(const std::string& v) { return v; }
ordered_json ToJson(bool v) { return v; }
template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
ordered_json ToJson(T v) { return v; }
ordered_json ToJson(JobState v) { return JobStateName(v); }
ordered_json ToJson(NodeState v) { return NodeStateName(v); }
ordered_json ToJson(const std::optional<uint32_t>& v) { return v ? ordered_json(*v) : ordered_json(); }
ordered_json ToJson(const NodeRecord::GpuType& t) { return ordered_json{{"model", t.model}, {"count", t.count}}; }
template <typename T>
ordered_json ToJson(const std::vector<T>& v) {
  ordered_json a = ordered_json::array();
  for (const T& e : v) a.push_back(ToJson(e));
  return a;
}

struct Writer {
  ordered_json out = ordered_json::object();
  template <typename T>
  void operator()(const char* key, const T& a, const T& d) {
    if (!(a == d)) out[key] = ToJson(a);
  }
};

// Readers return the expected type's name on a mismatch, nullptr when read.
const char* FromJson(const json& j, std::string* v) {
  if (!j.is_string()) return "a string";
  *v = j.get<std::string>();
  return nullptr;
}
const char* FromJson(const json& j, bool* v) {
  if (!j.is_boolean()) return "a boolean";
  *v = j.get<bool>();
  return nullptr;
}
template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
const char* FromJson(const json& j, T* v) {
  if (!j.is_number_integer()) return "an integer";
  if (j.is_number_unsigned()) {
    if (j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<T>::max())) return "an integer in range";
  } else if (j.get<int64_t>() < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
             (std::is_unsigned_v<T> && j.get<int64_t>() < 0)) {
    return "an integer in range";
  }
  *v = j.get<T>();
  return nullptr;
}
const char* FromJson(const json& j, JobState* v) {
  for (int s = 0; s <= static_cast<int>(JobState::kUnknown); ++s) {
    if (j.is_string() && j.get<std::string>() == JobStateName(static_cast<JobState>(s))) {
      *v = static_cast<JobState>(s);
      return nullptr;
    }
  }
  return "a job state name";
}
const char* FromJson(const json& j, NodeState* v) {
  for (int s = 0; s <= static_cast<int>(NodeState::kUnknown); ++s) {
    if (j.is_string() && j.get<std::string>() == NodeStateName(static_cast<NodeState>(s))) {
      *v = static_cast<NodeState>(s);
      return nullptr;
    }
  }
  return "a node state name";
}
const char* FromJson(const json& j, std::optional<uint32_t>* v) {
  if (j.is_null()) {
    v->reset();
    return nullptr;
  }
  uint32_t x = 0;
  if (const char* err = FromJson(j, &x)) return err;
  *v = x;
  return nullptr;
}
const char* FromJson(const json& j, NodeRecord::GpuType* v) {
  if (!j.is_object() || j.size() != 2 || !j.contains("model") || !j.contains("count")) {
    return "an object {model, count}";
  }
  if (FromJson(j["model"], &v->model) || FromJson(j["count"], &v->count)) return "an object {model, count}";
  return nullptr;
}
template <typename T>
const char* FromJson(const json& j, std::vector<T>* v) {
  if (!j.is_array()) return "an array";
  v->clear();
  for (const json& e : j) {
    v->emplace_back();
    if (const char* err = FromJson(e, &v->back())) return err;
  }
  return nullptr;
}

struct Reader {
  const json& obj;
  std::string error;
  std::set<std::string> seen;
  template <typename T>
  void operator()(const char* key, T& a, const T&) {
    auto it = obj.find(key);
    if (it == obj.end()) return;
    seen.insert(key);
    const char* want = FromJson(*it, &a);
    if (want != nullptr && error.empty()) {
      error = std::string("field '") + key + "' should be " + want + ", is " + it->dump();
    }
  }
  void CheckUnknown() {
    for (auto it = obj.begin(); it != obj.end() && error.empty(); ++it) {
      if (!seen.count(it.key())) error = "unknown field '" + it.key() + "'";
    }
  }
};

template <typename R, typename Visit>
Status ReadRecords(const json& doc, const char* key, Visit visit, std::vector<R>* out) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_array()) return Status::Error(std::string("state: no '") + key + "' array");
  const R defaults;
  out->clear();
  out->reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const json& j = (*it)[i];
    std::string where = std::string("state: ") + key + "[" + std::to_string(i) + "]";
    if (!j.is_object()) return Status::Error(where + " is not an object");
    Reader reader{j, {}, {}};
    out->emplace_back();
    visit(out->back(), defaults, reader);
    reader.CheckUnknown();
    if (!reader.error.empty()) return Status::Error(where + ": " + reader.error);
  }
  return Status::Ok();
}

}  // namespace

std::string WriteStateJson(const ClusterRecords& records) {
  std::string out = "{\"format\":\"" + std::string(kFormat) + "\",\"read_unix\":" +
                    std::to_string(records.read_unix) + ",\n\"jobs\":[";
  const JobRecord job_defaults;
  for (size_t i = 0; i < records.jobs.size(); ++i) {
    Writer w;
    VisitJob(records.jobs[i], job_defaults, w);
    out += (i == 0 ? "\n" : ",\n") + w.out.dump();
  }
  out += "],\n\"nodes\":[";
  const NodeRecord node_defaults;
  for (size_t i = 0; i < records.nodes.size(); ++i) {
    Writer w;
    VisitNode(records.nodes[i], node_defaults, w);
    out += (i == 0 ? "\n" : ",\n") + w.out.dump();
  }
  out += "]";
  if (!records.partitions.empty()) {  // optional: files written before partitions were read lack it
    out += ",\n\"partitions\":[";
    const PartitionRecord part_defaults;
    for (size_t i = 0; i < records.partitions.size(); ++i) {
      Writer w;
      VisitPartition(records.partitions[i], part_defaults, w);
      out += (i == 0 ? "\n" : ",\n") + w.out.dump();
    }
    out += "]";
  }
  out += "}\n";
  return out;
}

Status ReadStateJson(const std::string& text, ClusterRecords* out) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    return Status::Error(std::string("state: not JSON: ") + e.what());
  }
  if (!doc.is_object()) return Status::Error("state: the document is not an object");
  auto format = doc.find("format");
  if (format == doc.end() || !format->is_string() || format->get<std::string>() != kFormat) {
    return Status::Error(std::string("state: 'format' is not \"") + kFormat + "\"");
  }
  ClusterRecords r;
  auto read_unix = doc.find("read_unix");
  if (read_unix == doc.end() || FromJson(*read_unix, &r.read_unix) != nullptr) {
    return Status::Error("state: 'read_unix' is not an integer");
  }
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() != "format" && it.key() != "read_unix" && it.key() != "jobs" && it.key() != "nodes" &&
        it.key() != "partitions") {
      return Status::Error("state: unknown key '" + it.key() + "'");
    }
  }
  Status st = ReadRecords(doc, "jobs", [](auto& a, const auto& d, auto& v) { VisitJob(a, d, v); }, &r.jobs);
  if (st.ok()) st = ReadRecords(doc, "nodes", [](auto& a, const auto& d, auto& v) { VisitNode(a, d, v); }, &r.nodes);
  if (st.ok() && doc.contains("partitions")) {
    st = ReadRecords(doc, "partitions", [](auto& a, const auto& d, auto& v) { VisitPartition(a, d, v); }, &r.partitions);
  }
  if (!st.ok()) return st;
  *out = std::move(r);
  return Status::Ok();
}

Status ReadTextFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::Error("cannot read '" + path + "'");
  *out = ss.str();
  return Status::Ok();
}

}  // namespace tidal::slurm
