#include "core/io/workload_file.h"

#include <set>

#include "core/api/limits.h"
#include "core/io/fields.h"

namespace tidal {

StatusOr<Workload> DecodeWorkload(const nlohmann::json& j, const std::string& path) {
  Workload w;
  Fields f(j, path);
  f.Str("name", &w.id, true);
  f.Str("queue", &w.queue);
  std::string cls = "batch", door = "kubernetes";
  f.Str("class", &cls);
  f.Int("members", &w.members, 1, static_cast<int32_t>(limits::kMaxGangMembers));
  w.min_members = w.members;
  f.Int("minMembers", &w.min_members, 1, static_cast<int32_t>(limits::kMaxGangMembers));
  f.ResourcesField("request", &w.per_member, true);
  f.Int("priority", &w.priority, -1000000000, 1000000000);
  f.Bool("preemptible", &w.preemptible);
  f.Duration("runtimeLimit", &w.runtime_limit_s);
  f.Duration("submitTime", &w.submit_time_s);
  f.Duration("checkpointInterval", &w.checkpoint_interval_s);
  f.Str("gpuModel", &w.gpu_model);
  f.Str("frontDoor", &door);
  if (const auto* t = f.Get("topology")) {
    Fields tf(*t, f.Sub("topology"));
    tf.Str("required", &w.required_level);
    tf.Str("preferred", &w.preferred_level);
    if (Status s = tf.Done(); !s.ok()) f.Fail(s);
  }
  if (Status s = f.Done(); !s.ok()) return s;
  if (w.id.empty()) return Status::Error(f.Sub("name") + ": must not be empty");
  if (w.min_members > w.members) {
    return Status::Error(f.Sub("minMembers") + ": must be at most members (" + std::to_string(w.members) + "), got " +
                         std::to_string(w.min_members));
  }
  if (w.per_member.IsZero()) return Status::Error(f.Sub("request") + ": must ask for at least one resource");
  if (Status s = limits::CheckResources(w.per_member, f.Sub("request")); !s.ok()) return s;
  if (Status s = limits::CheckWorkloadTotal(w.per_member, w.members, f.Sub("members")); !s.ok()) return s;
  if (Status s = limits::CheckSize(w.id, limits::kMaxNameBytes, f.Sub("name")); !s.ok()) return s;
  auto c = ParseWorkloadClass(cls, f.Sub("class"));
  if (!c.ok()) return c.status();
  w.workload_class = *c;
  if (door == "kubernetes") {
    w.front_door = FrontDoor::kKubernetes;
  } else if (door == "slurm") {
    w.front_door = FrontDoor::kSlurm;
  } else {
    return Status::Error(f.Sub("frontDoor") + ": unknown front door \"" + door + "\" (accepted: kubernetes, slurm)");
  }
  return w;
}

StatusOr<std::vector<Workload>> DecodeWorkloads(const Document& doc, const std::string& field) {
  const nlohmann::json* list = &doc.root;
  std::string prefix;
  if (doc.root.is_object()) {
    if (!doc.root.contains(field)) return doc.Locate(Status::Error(field + ": required"));
    list = &doc.root.at(field);
    prefix = field;
  }
  if (!list->is_array()) return doc.Locate(Status::Error((prefix.empty() ? "document" : prefix) + ": must be a list of workloads"));
  std::vector<Workload> out;
  std::set<std::string> ids;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string p = prefix + "[" + std::to_string(i) + "]";
    auto w = DecodeWorkload((*list)[i], p);
    if (!w.ok()) return doc.Locate(w.status());
    if (!ids.insert(w->id).second) return doc.Locate(Status::Error(p + ".name: duplicate workload \"" + w->id + "\""));
    out.push_back(std::move(w).value());
  }
  return out;
}

StatusOr<std::vector<Workload>> LoadWorkloadsFile(const std::string& path) {
  auto doc = LoadDocument(path);
  if (!doc.ok()) return doc.status();
  return DecodeWorkloads(*doc);
}

}  // namespace tidal
