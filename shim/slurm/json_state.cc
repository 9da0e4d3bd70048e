// `squeue --json` / `sinfo --json` (Slurm 22.05, openapi/v0.0.38) into records (see json_state.h).
// v0.0.38 prints null for a number Slurm holds as NO_VAL / INFINITE (time_limit of an UNLIMITED
// job, array_task_id of a job that is not an array task, memory_per_cpu when memory is per node):
// null reads as "not stated".
//
// Threading: pure functions; no shared state.
#include <nlohmann/json.hpp>

#include <limits>

#include "shim/slurm/job_fields.h"
#include "shim/slurm/json_state.h"
#include "shim/slurm/tres.h"

namespace tidal::slurm {
namespace {

using nlohmann::json;

constexpr const char* kDataFormat = "openapi/v0.0.38";

const char* TypeName(const json& v) { return v.type_name(); }

// Reads typed fields of one record; the first problem of each field goes to *errors.
class FieldReader {
 public:
  FieldReader(const json& obj, std::string* errors) : obj_(obj), errors_(errors) {}

  // Missing or null -> *out = "" (required: missing is an error).
  void Str(const char* key, std::string* out, bool required = false) {
    const json* v = Find(key, required);
    if (v == nullptr || v->is_null()) return;
    if (!v->is_string()) return Wrong(key, "a string", *v);
    *out = v->get<std::string>();
  }
  // Missing or null -> *out unchanged (required: missing is an error, null is "not stated").
  template <typename T>
  void Int(const char* key, T* out, bool required = false, int64_t max = std::numeric_limits<T>::max()) {
    const json* v = Find(key, required);
    if (v == nullptr || v->is_null()) return;
    if (!v->is_number_integer()) return Wrong(key, "an integer", *v);
    if (v->is_number_unsigned()) {
      uint64_t u = v->get<uint64_t>();
      if (u > static_cast<uint64_t>(max)) return Range(key, v->dump(), max);
      *out = static_cast<T>(u);
      return;
    }
    int64_t i = v->get<int64_t>();
    if (i < 0) return Bad(key, "is negative: " + v->dump());
    if (i > max) return Range(key, v->dump(), max);
    *out = static_cast<T>(i);
  }
  // A signed integer in [min, max]; missing or null -> *out unchanged.
  void Signed(const char* key, int32_t* out, int64_t min, int64_t max) {
    const json* v = Find(key, false);
    if (v == nullptr || v->is_null()) return;
    if (!v->is_number_integer()) return Wrong(key, "an integer", *v);
    if (v->is_number_unsigned() ? v->get<uint64_t>() > static_cast<uint64_t>(max)
                                : (v->get<int64_t>() < min || v->get<int64_t>() > max)) {
      return Bad(key, "= " + v->dump() + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    *out = static_cast<int32_t>(v->get<int64_t>());
  }
  // An array of strings; missing -> empty.
  void StrList(const char* key, std::vector<std::string>* out) {
    const json* v = Find(key, false);
    if (v == nullptr || v->is_null()) return;
    if (!v->is_array()) return Wrong(key, "an array", *v);
    out->clear();
    for (const json& e : *v) {
      if (!e.is_string()) return Wrong(key, "an array of strings", *v);
      out->push_back(e.get<std::string>());
    }
  }
  // true/false (or 0/1); missing or null -> *out unchanged.
  void Bool(const char* key, bool* out) {
    const json* v = Find(key, false);
    if (v == nullptr || v->is_null()) return;
    if (v->is_boolean()) {
      *out = v->get<bool>();
    } else if (v->is_number_integer() && (v->get<int64_t>() == 0 || v->get<int64_t>() == 1)) {
      *out = v->get<int64_t>() == 1;
    } else {
      Wrong(key, "a boolean", *v);
    }
  }
  // Present and not null?
  bool Has(const char* key) const {
    auto it = obj_.find(key);
    return it != obj_.end() && !it->is_null();
  }
  const json* Raw(const char* key) const {
    auto it = obj_.find(key);
    return it == obj_.end() ? nullptr : &*it;
  }
  void Bad(const char* key, const std::string& what) {
    AddParseError(errors_, std::string("field '") + key + "' " + what);
  }

 private:
  const json* Find(const char* key, bool required) {
    auto it = obj_.find(key);
    if (it == obj_.end()) {
      if (required) Bad(key, "is missing");
      return nullptr;
    }
    return &*it;
  }
  void Wrong(const char* key, const char* want, const json& v) {
    Bad(key, std::string("should be ") + want + ", is " + TypeName(v));
  }
  void Range(const char* key, const std::string& v, int64_t max) {
    Bad(key, "= " + v + " is over the limit of " + std::to_string(max));
  }

  const json& obj_;
  std::string* errors_;
};

// Parses `text`, checks the data format and the errors array, returns the array under `key`.
Status OpenDocument(const std::string& what, const std::string& text, const char* key, json* doc,
                    const json** records) {
  try {
    *doc = json::parse(text);
  } catch (const json::exception& e) {
    return Status::Error(what + ": not JSON: " + e.what());
  }
  if (!doc->is_object()) return Status::Error(what + ": the document is not an object");
  if (auto meta = doc->find("meta"); meta != doc->end() && meta->is_object()) {
    auto plugin = meta->find("plugin");
    if (plugin != meta->end() && plugin->is_object()) {
      auto type = plugin->find("type");
      if (type != plugin->end() && type->is_string() && type->get<std::string>() != kDataFormat) {
        return Status::Error(what + ": data format '" + type->get<std::string>() + "' is not " + kDataFormat +
                             " (Slurm 22.05), the only one this reader knows");
      }
    }
  }
  if (auto errors = doc->find("errors"); errors != doc->end()) {
    if (!errors->is_array()) return Status::Error(what + ": 'errors' is not an array");
    if (!errors->empty()) {
      std::string msg = what + ": Slurm reported " + std::to_string(errors->size()) + " error(s):";
      for (const json& e : *errors) {
        std::string one;
        if (e.is_object()) {
          for (const char* k : {"source", "description", "error"}) {
            auto it = e.find(k);
            if (it != e.end() && it->is_string() && !it->get<std::string>().empty()) {
              one += (one.empty() ? " " : ", ") + it->get<std::string>();
            }
          }
          for (const char* k : {"error_number", "errno"}) {
            auto it = e.find(k);
            if (it != e.end() && it->is_number_integer()) one += " (" + std::string(k) + " " + it->dump() + ")";
          }
        }
        msg += one.empty() ? " " + e.dump() : one;
        msg += ";";
      }
      msg.pop_back();
      return Status::Error(msg);
    }
  }
  auto it = doc->find(key);
  if (it == doc->end()) return Status::Error(what + ": no '" + key + "' array (state unknown)");
  if (!it->is_array()) return Status::Error(what + ": '" + key + "' is not an array");
  *records = &*it;
  return Status::Ok();
}

JobRecord ReadJob(const json& j, uint32_t job_id) {
  JobRecord r;
  r.job_id = job_id;
  FieldReader f(j, &r.parse_error);
  f.Int("array_job_id", &r.array_job_id);
  uint32_t task = 0;
  if (f.Has("array_task_id")) {
    f.Int("array_task_id", &task);
    r.array_task_id = task;
  }
  RawJob raw;
  f.Str("array_task_string", &raw.array_task_str);
  if (r.array_job_id != 0 && r.array_task_id) {
    r.id = std::to_string(r.array_job_id) + "_" + std::to_string(*r.array_task_id);
  } else {
    r.id = std::to_string(job_id);
  }
  f.Str("name", &r.name);
  f.Str("user_name", &r.user);
  f.Str("account", &r.account);
  f.Str("partition", &r.partition);
  f.Str("qos", &r.qos);
  std::string state;
  f.Str("job_state", &state, /*required=*/true);
  if (!state.empty() && !JobStateFromName(state, &r.state, &r.completing)) {
    f.Bad("job_state", "'" + state + "' is not a job state this reader knows");
  }
  f.Str("state_reason", &r.state_reason);
  f.Int("priority", &r.priority, /*required=*/true);
  f.Signed("nice", &r.nice, -2147483645, 2147483645);  // null = 0 (v0.0.38 prints no nice as null)
  f.Str("dependency", &r.dependency);
  f.Int("node_count", &r.node_count, /*required=*/true, kMaxCount);
  if (r.state == JobState::kPending) f.Int("max_nodes", &r.max_node_count, false, kMaxCount);  // a range: pending only
  f.Int("restart_cnt", &r.restart_cnt);
  bool requeue = true, batch = true;
  f.Bool("requeue", &requeue);
  f.Bool("batch_flag", &batch);
  r.requeueable = requeue && batch;
  f.Int("time_limit", &r.time_limit_min, false, kMaxCount);
  f.Int("submit_time", &r.submit_time);
  f.Int("start_time", &r.start_time);
  f.Int("end_time", &r.end_time);
  f.Int("eligible_time", &r.eligible_time);
  if (r.state == JobState::kRunning || r.state == JobState::kSuspended) f.Str("batch_host", &r.batch_host);
  f.Str("features", &r.features);
  f.Str("comment", &r.comment);
  f.Str("admin_comment", &r.admin_comment);
  f.Str("tres_per_node", &raw.tres_per_node);
  f.Str("tres_per_job", &raw.tres_per_job);
  f.Str("tres_per_task", &raw.tres_per_task);
  f.Str("tres_per_socket", &raw.tres_per_socket);
  f.Str("tres_req_str", &raw.tres_req_str);
  f.Str("tres_alloc_str", &raw.tres_alloc_str);
  f.Str("nodes", &raw.nodes);
  f.StrList("gres_detail", &raw.gres_detail);  // one entry per node of `nodes`, in its order
  f.Str("required_nodes", &raw.required_nodes);
  f.Str("excluded_nodes", &raw.excluded_nodes);
  f.Int("tasks", &raw.num_tasks, false, kMaxCount);
  f.Int("minimum_cpus_per_node", &raw.pn_min_cpus, false, kMaxCount);
  f.Int("memory_per_node", &raw.pn_min_memory_mb, false, kMaxMemoryMb);
  f.Int("memory_per_cpu", &raw.mem_per_cpu_mb, false, kMaxMemoryMb);
  uint32_t het_job_id = 0;
  f.Int("het_job_id", &het_job_id);
  if (het_job_id != 0) {
    AddParseError(&r.parse_error, "heterogeneous job (het_job_id " + std::to_string(het_job_id) + ") is not supported");
  }
  DeriveJobFields(raw, &r);
  // Every task's record carries its array's %K (the array_task_string only the pending record's).
  uint32_t max_tasks = 0;
  f.Int("array_max_tasks", &max_tasks);
  if (max_tasks != 0) r.array_max_tasks = max_tasks;
  if (!r.parse_error.empty()) r.parse_error = "job " + r.id + ": " + r.parse_error;
  return r;
}

NodeRecord ReadNode(const json& n, std::string name) {
  NodeRecord r;
  r.name = std::move(name);
  FieldReader f(n, &r.parse_error);
  std::string state;
  f.Str("state", &state, /*required=*/true);
  if (!state.empty() && !NodeStateFromName(state, &r.state)) {
    f.Bad("state", "'" + state + "' is not a node state this reader knows");
  }
  std::vector<std::string> flags;
  f.StrList("state_flags", &flags);
  for (const std::string& flag : flags) ApplyNodeFlag(flag, &r);
  std::string gres, gres_used;
  f.Str("gres", &gres);
  f.Str("gres_used", &gres_used);
  f.Int("cpus", &r.cpus, false, kMaxCount);
  f.Int("real_memory", &r.real_memory_mb, false, kMaxMemoryMb);
  f.Str("reason", &r.reason);
  f.StrList("partitions", &r.partitions);
  if (const json* feat = f.Raw("features"); feat != nullptr && feat->is_array()) {
    f.StrList("features", &r.features);
  } else {
    std::string features;
    f.Str("features", &features);
    r.features = SplitCommaList(features);
  }
  DeriveNodeGpus(gres, gres_used, &r);
  if (!r.parse_error.empty()) r.parse_error = "node " + r.name + ": " + r.parse_error;
  return r;
}

}  // namespace

Status ParseSqueueJson(const std::string& text, std::vector<JobRecord>* out) {
  json doc;
  const json* jobs = nullptr;
  Status st = OpenDocument("squeue --json", text, "jobs", &doc, &jobs);
  if (!st.ok()) return st;
  std::vector<JobRecord> result;
  result.reserve(jobs->size());
  for (size_t i = 0; i < jobs->size(); ++i) {
    const json& j = (*jobs)[i];
    // Without its id a job cannot be told apart or acted on: the read as a whole is unknown.
    std::string where = "squeue --json: jobs[" + std::to_string(i) + "]";
    if (!j.is_object()) return Status::Error(where + " is not an object");
    auto id = j.find("job_id");
    if (id == j.end()) return Status::Error(where + ": no 'job_id'");
    if (!id->is_number_unsigned() || id->get<uint64_t>() == 0 || id->get<uint64_t>() > 0xffffffffu) {
      return Status::Error(where + ": 'job_id' " + id->dump() + " is not a job id");
    }
    result.push_back(ReadJob(j, id->get<uint32_t>()));
  }
  *out = std::move(result);
  return Status::Ok();
}

Status ParseSinfoJson(const std::string& text, std::vector<NodeRecord>* out) {
  json doc;
  const json* nodes = nullptr;
  Status st = OpenDocument("sinfo --json", text, "nodes", &doc, &nodes);
  if (!st.ok()) return st;
  std::vector<NodeRecord> result;
  result.reserve(nodes->size());
  for (size_t i = 0; i < nodes->size(); ++i) {
    const json& n = (*nodes)[i];
    std::string where = "sinfo --json: nodes[" + std::to_string(i) + "]";
    if (!n.is_object()) return Status::Error(where + " is not an object");
    auto name = n.find("name");
    if (name == n.end() || !name->is_string() || name->get<std::string>().empty()) {
      return Status::Error(where + ": no 'name' string");
    }
    result.push_back(ReadNode(n, name->get<std::string>()));
  }
  *out = std::move(result);
  return Status::Ok();
}

}  // namespace tidal::slurm
