#include "core/framework/profile.h"

#include <limits>
#include <optional>
#include <set>

#include "core/api/duration.h"
#include "core/api/limits.h"

namespace tidal {

ProfileSpec ProfileSpec::Default() {
  ProfileSpec p;
  p.plugins = {PluginSpec{"fairshare", 0, nlohmann::json::object()}, PluginSpec{"quota", 0, nlohmann::json::object()},
               PluginSpec{"gang", 0, nlohmann::json::object()}, PluginSpec{"topology", 1, nlohmann::json::object()},
               PluginSpec{"preemption", 0, nlohmann::json::object()}};
  return p;
}

namespace {

void AddReasonTo(Status* s, const std::string& reason) {
  if (s->ok()) *s = Status::Error(reason); else s->AddReason(reason);
}

// Collects every problem of a profile's decoding, each a reason "field: why".
struct Problems {
  Status status;
  void Add(const std::string& field, const std::string& why) {
    const std::string r = field + ": " + why;
    if (status.ok()) status = Status::Error(r); else status.AddReason(r);
  }
  void Add(const Status& s) {
    for (const auto& r : s.reasons()) {
      if (status.ok()) status = Status::Error(r); else status.AddReason(r);
    }
  }
};

// "prefix.key", or "key" under an empty prefix (a bare profile file: "plugins[2]", not ".plugins[2]").
std::string Join(const std::string& prefix, const std::string& key) { return prefix.empty() ? key : prefix + "." + key; }

// A duration field: an integer of seconds or a string such as 90s, 30m, 12h; nullopt (reported)
// when it is neither.
std::optional<int64_t> DurationSeconds(const nlohmann::json& v, const std::string& f, Problems* out) {
  if (v.is_number_integer()) {
    if (Status s = limits::CheckDuration(v.get<int64_t>(), f); !s.ok()) return out->Add(s), std::nullopt;
    return v.get<int64_t>();
  }
  if (!v.is_string()) return out->Add(f, "must be a duration"), std::nullopt;
  auto d = ParseDurationSeconds(v.get<std::string>(), f);
  if (!d.ok()) return out->Add(d.status()), std::nullopt;
  return *d;
}

void DecodeDefaultRuntime(const nlohmann::json& v, const std::string& f, BackfillSpec* b, Problems* out) {
  if (!v.is_object()) return out->Add(f, "must be a mapping class: duration");
  for (const auto& [cls, dur] : v.items()) {
    const std::string at = f + "." + cls;
    auto c = ParseWorkloadClass(cls, at);
    if (!c.ok()) {
      out->Add(c.status());
      continue;
    }
    const auto secs = DurationSeconds(dur, at, out);
    if (secs && *secs <= 0) out->Add(at, "must be positive");
    if (secs && *secs > 0) b->default_runtime_s[static_cast<int>(*c)] = *secs;
  }
}

void DecodeBackfill(const nlohmann::json& v, const std::string& f, BackfillSpec* b, Problems* out) {
  if (!v.is_object()) return out->Add(f, "must be a mapping");
  for (const auto& [k, x] : v.items()) {
    const std::string at = f + "." + k;
    if (k == "depth") {
      if (!x.is_number_integer() || x.get<int64_t>() < -1 || x.get<int64_t>() > 100000) {
        out->Add(at, "must be -1 (all), 0 (off) or 1..100000");
      } else {
        b->depth = x.get<int>();
      }
    } else if (k == "minGpus") {
      if (!x.is_number_integer() || x.get<int64_t>() < 0) {
        out->Add(at, "must be a non-negative integer (0 = one node's GPUs)");
      } else {
        b->min_gpus = x.get<int64_t>();
      }
    } else if (k == "agedAfter") {
      std::optional<int64_t> secs = x.is_number_integer() ? std::optional<int64_t>(x.get<int64_t>()) : std::nullopt;
      if (x.is_string()) {
        secs = DurationSeconds(x, at, out);
        if (!secs) continue;  // reported
      }
      if (!secs || *secs < 0 || *secs > 365LL * 86400) out->Add(at, "must be a duration from 0 (off) to 365d");
      else b->aged_after_s = *secs;
    } else if (k == "defaultRuntime") {
      DecodeDefaultRuntime(x, at, b, out);
    } else {
      out->Add(at, "unknown field (accepted: depth, minGpus, agedAfter, defaultRuntime)");
    }
  }
}

// One entry of plugins: a name, or {name, weight, args}. An explicit weight is 1..100 (0 is no
// "off": leave a plugin out to switch it off); an absent one stays 0, the default (1).
void DecodePluginEntry(const nlohmann::json& e, const std::string& f, std::vector<PluginSpec>* plugins, Problems* out) {
  PluginSpec ps;
  if (e.is_string()) {
    ps.name = e.get<std::string>();
  } else if (!e.is_object()) {
    return out->Add(f, "must be a plugin name or a mapping");
  } else {
    for (const auto& [k, v] : e.items()) {
      if (k == "name") {
        if (!v.is_string()) out->Add(f + ".name", "must be a string");
        else ps.name = v.get<std::string>();
      } else if (k == "weight") {
        if (!v.is_number_integer()) out->Add(f + ".weight", "must be an integer");
        else if (v.get<int64_t>() < 1 || v.get<int64_t>() > 100) out->Add(f + ".weight", "must be 1..100, got " + std::to_string(v.get<int64_t>()));
        else ps.weight = v.get<int64_t>();
      } else if (k == "args") {
        if (!v.is_object()) out->Add(f + ".args", "must be a mapping");
        else ps.args = v;
      } else {
        out->Add(f + "." + k, "unknown field (accepted: name, weight, args)");
      }
    }
    if (e.contains("name") && !e.at("name").is_string()) return;  // reported above
  }
  if (ps.name.empty()) return out->Add(f + ".name", "must be set");
  plugins->push_back(std::move(ps));
}

}  // namespace

StatusOr<ProfileSpec> ProfileSpec::FromJson(const nlohmann::json& j, const std::string& field) {
  if (!j.is_object()) return Status::Error((field.empty() ? "profile" : field) + ": must be a mapping");
  ProfileSpec p;
  p.plugins.clear();
  Problems out;
  for (const auto& [k, v] : j.items()) {
    const std::string at = Join(field, k);
    if (k == "name") {
      if (!v.is_string() || v.get<std::string>().empty()) out.Add(at, "must be a non-empty string");
      else p.name = v.get<std::string>();
    } else if (k == "maxCandidates") {
      // Read wide: get<int>() would silently wrap 4294967297 to 1. Build checks the 1..64 range.
      if (!v.is_number_integer()) out.Add(at, "must be an integer");
      else if (v.get<int64_t>() < std::numeric_limits<int>::min() || v.get<int64_t>() > std::numeric_limits<int>::max()) out.Add(at, "must be 1..64, got " + std::to_string(v.get<int64_t>()));
      else p.max_candidates = static_cast<int>(v.get<int64_t>());
    } else if (k == "backfill") {
      DecodeBackfill(v, at, &p.backfill, &out);
    } else if (k == "plugins") {
      if (!v.is_array()) out.Add(at, "must be a list");
      for (size_t i = 0; v.is_array() && i < v.size(); ++i) {
        DecodePluginEntry(v[i], at + "[" + std::to_string(i) + "]", &p.plugins, &out);
      }
    } else {
      out.Add(at, "unknown field (accepted: name, maxCandidates, plugins, backfill)");
    }
  }
  if (!out.status.ok()) return out.status;
  return p;
}

std::string ProfileErrorField(const std::string& reason) {
  const size_t at = reason.find(": plugins[");
  if (at != std::string::npos && reason.rfind("profile ", 0) == 0) {
    const size_t close = reason.find(']', at);
    if (close != std::string::npos) return reason.substr(at + 2, close - at - 1);
  }
  if (reason.rfind("profile ", 0) == 0 && reason.find(": maxCandidates:") != std::string::npos) return "maxCandidates";
  if (reason.rfind("profile ", 0) == 0 && reason.find(": plugins:") != std::string::npos) return "plugins";
  return "";
}

StatusOr<std::unique_ptr<Profile>> Profile::Build(const ProfileSpec& spec, const Registry& registry,
                                                  const PluginContext& ctx) {
  auto p = std::make_unique<Profile>();
  p->name_ = spec.name;
  Status errors;  // every problem, one reason each
  if (spec.max_candidates < 1 || spec.max_candidates > 64) {
    AddReasonTo(&errors, "profile " + spec.name + ": maxCandidates: must be 1..64, got " + std::to_string(spec.max_candidates));
  }
  p->max_candidates_ = spec.max_candidates;
  p->backfill_ = spec.backfill;
  std::set<std::string> seen;
  for (size_t i = 0; i < spec.plugins.size(); ++i) {
    const auto& ps = spec.plugins[i];
    const std::string f = "profile " + spec.name + ": plugins[" + std::to_string(i) + "] (" + ps.name + ")";
    if (!seen.insert(ps.name).second) {
      AddReasonTo(&errors, f + ": listed twice");
      continue;
    }
    const PluginFactory* factory = registry.Find(ps.name);
    if (factory == nullptr) {
      std::string known;
      for (const auto& n : registry.Names()) known += (known.empty() ? "" : ", ") + n;
      AddReasonTo(&errors, f + ": unknown plugin (registered: " + known + ")");
      continue;
    }
    auto made = (*factory)(ps.args, ctx);
    if (!made.ok()) {
      AddReasonTo(&errors, f + ": args: " + made.status().Message());
      continue;
    }
    if (Status s = p->Enable(ps, f, std::move(made).value()); !s.ok()) AddReasonTo(&errors, s.Message());
  }
  if (p->queue_sort_ == nullptr) {
    AddReasonTo(&errors, "profile " + spec.name + ": plugins: no QueueSort plugin enabled (exactly one is required)");
  }
  if (!errors.ok()) return errors;
  return p;
}

Status Profile::Enable(const PluginSpec& ps, const std::string& f, std::unique_ptr<Plugin> plugin) {
  Plugin* raw = plugin.get();
  owned_.push_back(std::move(plugin));
  bool any = false;
  if (auto* q = dynamic_cast<QueueSortPlugin*>(raw)) {
    if (queue_sort_ != nullptr) {
      return Status::Error(f + ": a second QueueSort plugin (" + std::string(queue_sort_->Name()) +
                           " is already enabled); a profile has exactly one");
    }
    queue_sort_ = q;
    any = true;
  }
  if (auto* x = dynamic_cast<AdmitPlugin*>(raw)) admit_.push_back(x), any = true;
  if (auto* x = dynamic_cast<PreFilterPlugin*>(raw)) prefilter_.push_back(x), any = true;
  if (auto* x = dynamic_cast<const FilterPlugin*>(raw)) filter_.push_back(x), any = true;
  if (auto* x = dynamic_cast<const ScorePlugin*>(raw)) {
    const int64_t w = ps.weight == 0 ? 1 : ps.weight;  // 0: no weight given, the default
    if (w < 1 || w > 100) return Status::Error(f + ": weight: must be 1..100, got " + std::to_string(ps.weight));
    score_.emplace_back(x, w);
    any = true;
  } else if (ps.weight != 0) {
    return Status::Error(f + ": weight: only Score plugins take a weight");
  }
  if (auto* x = dynamic_cast<ReservePlugin*>(raw)) reserve_.push_back(x), any = true;
  if (auto* x = dynamic_cast<PermitPlugin*>(raw)) permit_.push_back(x), any = true;
  if (auto* x = dynamic_cast<PostFilterPlugin*>(raw)) postfilter_.push_back(x), any = true;
  if (!any) return Status::Error(f + ": implements no extension point");
  return Status::Ok();
}

Status Profile::RunAdmit(CycleState& s, const Workload& w) const {
  for (auto* p : admit_) {
    Status st = p->Admit(s, w);
    if (!st.ok()) return st.WithPlugin(std::string(p->Name()));
  }
  return Status::Ok();
}

Status Profile::RunPreFilter(CycleState& s, const Workload& w, const TopologyLevels& levels,
                             PlacementConstraints& c) const {
  for (auto* p : prefilter_) {
    Status st = p->PreFilter(s, w, levels, c);
    if (!st.ok()) return st.WithPlugin(std::string(p->Name()));
  }
  return Status::Ok();
}

Status Profile::RunFilter(const CycleState& s, const Workload& w, const Node& n) const {
  for (const auto* p : filter_) {
    Status st = p->Filter(s, w, n);
    if (!st.ok()) return st.WithPlugin(std::string(p->Name()));
  }
  return Status::Ok();
}

void Profile::RunScore(const CycleState& s, const Workload& w, Candidate& c) const {
  int64_t total = 0;
  for (const auto& [p, weight] : score_) {
    total += std::clamp<int64_t>(p->Score(s, w, c), 0, ScorePlugin::kMaxScore) * weight;
  }
  c.score = total;
}

Status Profile::RunReserve(CycleState& s, const ClusterState& cluster, const Workload& w, const Candidate& c) const {
  for (size_t i = 0; i < reserve_.size(); ++i) {
    Status st = reserve_[i]->Reserve(s, cluster, w, c);
    if (!st.ok()) {
      for (size_t j = i; j-- > 0;) reserve_[j]->Unreserve(s, cluster, w, c);
      return st.WithPlugin(std::string(reserve_[i]->Name()));
    }
  }
  return Status::Ok();
}

void Profile::RunUnreserve(CycleState& s, const ClusterState& cluster, const Workload& w, const Candidate& c) const {
  for (auto it = reserve_.rbegin(); it != reserve_.rend(); ++it) (*it)->Unreserve(s, cluster, w, c);
}

Status Profile::RunPermit(CycleState& s, const Workload& w, const Candidate& c) const {
  Status wait;
  for (auto* p : permit_) {
    Status st = p->Permit(s, w, c);
    if (st.code() == StatusCode::kWait) {
      if (wait.ok()) wait = st.WithPlugin(std::string(p->Name()));
    } else if (!st.ok()) {
      return st.WithPlugin(std::string(p->Name()));
    }
  }
  return wait;
}

Status Profile::RunPostFilter(CycleState& s, const Workload& w, const Status& failure, PostFilterContext& ctx,
                              const PlacementConstraints& c, PostFilterResult& r) const {
  Status last = Status::Unschedulable("no PostFilter plugin could help");
  for (auto* p : postfilter_) {
    r = PostFilterResult{};
    Status st = p->PostFilter(s, w, failure, ctx, c, r);
    if (st.ok()) return st;
    last = st.WithPlugin(std::string(p->Name()));
  }
  return last;
}

std::vector<std::string> Profile::PluginNames() const {
  std::vector<std::string> out;
  for (const auto& p : owned_) out.emplace_back(p->Name());
  return out;
}

}  // namespace tidal
