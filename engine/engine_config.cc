// The engine's config file (YAML/JSON) into an EngineConfig, every problem reported as
// "file:line: field: reason" (see core/io/queue_config.h). Pure functions: no state, no threads.
#include <algorithm>
#include <optional>

#include "engine/engine.h"
#include "core/api/limits.h"
#include "core/io/cluster_file.h"
#include "core/io/document.h"
#include "core/io/fields.h"
#include "core/io/queue_config.h"
#include "plugins/registry.h"

namespace tidal {

namespace {

// frontDoors: [kubernetes, slurm], the doors expected to connect (engine_doors.cc); each at most once.
Status DecodeFrontDoors(const nlohmann::json& j, std::vector<FrontDoor>* out) {
  if (!j.is_array()) return Status::Error("frontDoors: expected a list of front doors (kubernetes, slurm)");
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = "frontDoors[" + std::to_string(i) + "]";
    if (!j[i].is_string()) return Status::Error(at + ": expected a front door name (kubernetes, slurm)");
    const std::string name = j[i].get<std::string>();
    std::optional<FrontDoor> door;
    for (FrontDoor d : {FrontDoor::kKubernetes, FrontDoor::kSlurm}) {
      if (FrontDoorName(d) == name) door = d;
    }
    if (!door) {
      return Status::Error(at + ": unknown front door \"" + name.substr(0, 64) + "\" (accepted: kubernetes, slurm)");
    }
    if (std::find(out->begin(), out->end(), *door) != out->end()) {
      return Status::Error(at + ": " + name + " is listed twice");
    }
    out->push_back(*door);
  }
  return Status::Ok();
}

// Appends each reason of `s`, located in the file, to `errors` (one problem per line).
void AddLocated(const Document& doc, const Status& s, std::vector<std::string>* errors) {
  const Status located = doc.Locate(s);  // kept: reasons() refers into it
  for (const auto& r : located.reasons()) errors->push_back(r);
}

// Profile::Build's errors name the plugin as "profile NAME: plugins[I] (PLUGIN): reason" (or
// "profile NAME: maxCandidates: ..."), not as a field path of the file: the line is that of
// profile.plugins[I] (else of the profile's field the error names, else of profile itself).
void AddProfileErrors(const Document& doc, const Status& s, std::vector<std::string>* errors) {
  for (const auto& r : s.reasons()) {
    const std::string field = ProfileErrorField(r);
    const int line = doc.LineOf(field.empty() ? "profile" : "profile." + field);
    errors->push_back(doc.file + (line > 0 ? ":" + std::to_string(line) : "") + ": " + r);
  }
}

}  // namespace

StatusOr<EngineConfig> ParseEngineConfig(const std::string& text, const std::string& file) {
  auto doc = ParseDocument(text, file);
  if (!doc.ok()) return doc.status();
  EngineConfig cfg;
  std::vector<std::string> errors;
  Fields f(doc->root, "");
  f.Str("schedulerName", &cfg.scheduler_name);
  int64_t permit_s = cfg.permit_timeout_ms / 1000;
  f.Int("permitTimeoutSeconds", &permit_s, 1, 3600);
  cfg.permit_timeout_ms = permit_s * 1000;
  f.Int("planTtlSeconds", &cfg.plan_ttl_s, 1, 86400);
  f.Str("poolLabel", &cfg.pool_label);
  // Required keys present but empty (or not a label key) are errors naming the field, not defaults.
  // (A key of the wrong type keeps its valid default: no second error for it.)
  if (cfg.scheduler_name.empty()) f.FailField("schedulerName", "must not be empty");
  if (!limits::IsLabelKey(cfg.pool_label)) {
    f.FailField("poolLabel", "invalid node label key \"" + cfg.pool_label.substr(0, 100) + "\"");
  }
  f.Int("exclusionTtlSeconds", &cfg.exclusion_ttl_s, 1, 86400);
  if (const auto* e = f.Get("explain")) {
    Fields ef(*e, "explain");
    int64_t max_ahead = cfg.explain_max_ahead;
    ef.Int("maxAhead", &max_ahead, 1, 10000000);
    cfg.explain_max_ahead = static_cast<int32_t>(max_ahead);
    if (Status s = ef.Done(); !s.ok()) AddLocated(*doc, s, &errors);
  }
  if (const auto* r = f.Get("reservations")) {
    Fields rf(*r, "reservations");
    rf.Bool("refreshInBackground", &cfg.refresh_in_background);
    if (Status s = rf.Done(); !s.ok()) AddLocated(*doc, s, &errors);
  }
  if (const auto* r = f.Get("runtimeLimit")) {
    Fields rf(*r, "runtimeLimit");
    rf.Bool("enforce", &cfg.enforce_runtime_limit);
    rf.Int("graceSeconds", &cfg.runtime_limit_grace_s, 0, 7 * 86400);
    if (Status s = rf.Done(); !s.ok()) AddLocated(*doc, s, &errors);
  }
  if (const auto* d = f.Get("disruption")) {
    Fields df(*d, "disruption");
    df.Int("maxNoticeSeconds", &cfg.max_notice_s, 0, 86400);
    df.Bool("preemptSlurmJobs", &cfg.preempt_slurm_jobs);
    if (Status s = df.Done(); !s.ok()) AddLocated(*doc, s, &errors);
  }
  if (const auto* pe = f.Get("perishable")) {
    Fields pf(*pe, "perishable");
    std::string fill;
    pf.Str("fill", &fill);
    if (fill == "checkpointing") {
      cfg.perishable_fill = EngineConfig::PerishableFill::kCheckpointing;
    } else if (fill == "preemptible") {
      cfg.perishable_fill = EngineConfig::PerishableFill::kPreemptible;
    } else if (fill == "none") {
      cfg.perishable_fill = EngineConfig::PerishableFill::kNone;
    } else if (!fill.empty()) {
      pf.FailField("fill", "unknown value \"" + fill.substr(0, 100) + "\" (accepted: checkpointing, preemptible, none)");
    }
    pf.Int("minSeconds", &cfg.perishable_min_s, 0, 7 * 86400);
    if (const auto* rc = pf.Get("runtimeCorrection")) {
      if (Status s = DecodeRuntimeCorrection(*rc, pf.Sub("runtimeCorrection"), &cfg.runtime_correction); !s.ok()) pf.Fail(s);
    }
    if (Status s = pf.Done(); !s.ok()) AddLocated(*doc, s, &errors);
  }
  if (const auto* e = f.Get("elastic")) {
    Fields ef(*e, "elastic");
    ef.Int("growAfterSeconds", &cfg.elastic_grow_after_s, 0, 86400);
    int64_t min_members = cfg.elastic_grow_min_members;
    ef.Int("growMinMembers", &min_members, 1, 100000);
    cfg.elastic_grow_min_members = static_cast<int32_t>(min_members);
    if (Status s = ef.Done(); !s.ok()) AddLocated(*doc, s, &errors);
  }
  if (const auto* t = f.Get("topology")) {
    Fields tf(*t, "topology");
    if (const auto* l = tf.Get("levels")) {
      if (Status s = DecodeLevels(*l, "topology.levels", &cfg.levels); !s.ok()) tf.Fail(s);
    }
    if (Status s = tf.Done(); !s.ok()) AddLocated(*doc, s, &errors);
  }
  if (const auto* p = f.Get("profile")) {
    auto ps = ProfileSpec::FromJson(*p, "profile");
    if (!ps.ok()) {
      AddLocated(*doc, ps.status(), &errors);
    } else {
      cfg.profile = *ps;
    }
  }
  if (const auto* h = f.Get("nodeHealth")) {
    if (Status s = DecodeNodeHealth(*h, &cfg.node_health); !s.ok()) AddLocated(*doc, s, &errors);
  }
  if (const auto* m = f.Get("maintenance")) {
    if (Status s = DecodeMaintenance(*m, &cfg.maintenance); !s.ok()) AddLocated(*doc, s, &errors);
  }
  if (const auto* r = f.Get("rollout")) {
    if (Status s = DecodeRollout(*r, "rollout", &cfg.rollout); !s.ok()) AddLocated(*doc, s, &errors);
  }
  if (const auto* p = f.Get("pools")) {
    if (Status s = DecodeLending(*p, &cfg.pools); !s.ok()) AddLocated(*doc, s, &errors);
  }
  if (const auto* d = f.Get("frontDoors")) {
    if (Status s = DecodeFrontDoors(*d, &cfg.front_doors); !s.ok()) AddLocated(*doc, s, &errors);
  }
  f.Get("resources");
  f.Get("usageHalfLife");
  f.Get("queues");
  if (doc->root.is_object()) cfg.queues = DecodeQueueConfig(*doc, doc->root, &errors);
  if (Status s = f.Done(); !s.ok()) {
    std::vector<std::string> top;
    AddLocated(*doc, s, &top);
    errors.insert(errors.begin(), top.begin(), top.end());
  }
  if (!errors.empty()) {
    // The queue tree is needed for the checks below; the profile is checked anyway, against no
    // queues (no plugin's arguments depend on them), so its problems are reported with the rest.
    auto none = QueueTree::Build(QueueConfig{});
    if (none.ok()) {
      QuotaLedger ledger(*none);
      auto profile = Profile::Build(cfg.profile, plugins::DefaultRegistry(), PluginContext{cfg.levels, &ledger});
      if (!profile.ok()) AddProfileErrors(*doc, profile.status(), &errors);
    }
  } else {
    auto tree = QueueTree::Build(cfg.queues);
    if (!tree.ok()) {
      errors.push_back(file + ": " + tree.status().Message());
    } else {
      for (const auto& pol : cfg.pools) {  // a named pool's owners are configured queues
        for (size_t i = 0; i < pol.queues.size(); ++i) {
          const int q = (*tree)->Find(pol.queues[i]);
          if (q >= 0 && (*tree)->Name(q) == pol.queues[i]) continue;
          const std::string at = "pools." + pol.pool + ".queues[" + std::to_string(i) + "]";
          errors.push_back(doc->Locate(Status::Error(at + (q < 0 ? ": unknown queue " + pol.queues[i]
                                                                  : ": " + pol.queues[i] + " is a former name of queue " +
                                                                        (*tree)->Name(q) + ": name the queue"))).Message());
        }
      }
      QuotaLedger ledger(*tree);
      const Registry registry = plugins::DefaultRegistry();
      auto profile = Profile::Build(cfg.profile, registry, PluginContext{cfg.levels, &ledger});
      if (!profile.ok()) AddProfileErrors(*doc, profile.status(), &errors);
    }
  }
  if (!errors.empty()) {
    Status st(StatusCode::kError, errors.front());
    for (size_t i = 1; i < errors.size(); ++i) st.AddReason(errors[i]);
    return st;
  }
  return cfg;
}

StatusOr<EngineConfig> LoadEngineConfig(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseEngineConfig(*text, path);
}

}  // namespace tidal
