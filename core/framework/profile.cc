#include "core/framework/profile.h"

#include <limits>
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

StatusOr<ProfileSpec> ProfileSpec::FromJson(const nlohmann::json& j, const std::string& field) {
  if (!j.is_object()) return Status::Error(field + ": must be a mapping");
  ProfileSpec p;
  p.plugins.clear();
  for (const auto& [k, v] : j.items()) {
    if (k == "name") {
      if (!v.is_string() || v.get<std::string>().empty()) return Status::Error(field + ".name: must be a non-empty string");
      p.name = v.get<std::string>();
    } else if (k == "maxCandidates") {
      if (!v.is_number_integer()) return Status::Error(field + ".maxCandidates: must be an integer");
      // Read wide: get<int>() would silently wrap 4294967297 to 1. Build checks the 1..64 range.
      const int64_t m = v.get<int64_t>();
      if (m < std::numeric_limits<int>::min() || m > std::numeric_limits<int>::max()) {
        return Status::Error(field + ".maxCandidates: must be 1..64, got " + std::to_string(m));
      }
      p.max_candidates = static_cast<int>(m);
    } else if (k == "backfill") {
      if (!v.is_object()) return Status::Error(field + ".backfill: must be a mapping");
      for (const auto& [bk, bv] : v.items()) {
        if (bk == "depth") {
          if (!bv.is_number_integer() || bv.get<int64_t>() < -1 || bv.get<int64_t>() > 100000) {
            return Status::Error(field + ".backfill.depth: must be -1 (all), 0 (off) or 1..100000");
          }
          p.backfill.depth = bv.get<int>();
        } else if (bk == "minGpus") {
          if (!bv.is_number_integer() || bv.get<int64_t>() < 0) {
            return Status::Error(field + ".backfill.minGpus: must be a non-negative integer (0 = one node's GPUs)");
          }
          p.backfill.min_gpus = bv.get<int64_t>();
        } else if (bk == "agedAfter") {
          int64_t secs = -1;
          if (bv.is_number_integer()) {
            secs = bv.get<int64_t>();
          } else if (bv.is_string()) {
            auto d = ParseDurationSeconds(bv.get<std::string>(), field + ".backfill.agedAfter");
            if (!d.ok()) return d.status();
            secs = *d;
          }
          if (secs < 0 || secs > 365LL * 86400) {
            return Status::Error(field + ".backfill.agedAfter: must be a duration from 0 (off) to 365d");
          }
          p.backfill.aged_after_s = secs;
        } else if (bk == "defaultRuntime") {
          if (!bv.is_object()) return Status::Error(field + ".backfill.defaultRuntime: must be a mapping class: duration");
          for (const auto& [cls, dur] : bv.items()) {
            auto c = ParseWorkloadClass(cls, field + ".backfill.defaultRuntime." + cls);
            if (!c.ok()) return c.status();
            if (!dur.is_string() && !dur.is_number_integer()) {
              return Status::Error(field + ".backfill.defaultRuntime." + cls + ": must be a duration");
            }
            int64_t secs = 0;
            if (dur.is_number_integer()) {
              secs = dur.get<int64_t>();
              const std::string at = field + ".backfill.defaultRuntime." + cls;
              if (Status s = limits::CheckDuration(secs, at); !s.ok()) return s;
            } else {
              auto d = ParseDurationSeconds(dur.get<std::string>(), field + ".backfill.defaultRuntime." + cls);
              if (!d.ok()) return d.status();
              secs = *d;
            }
            if (secs <= 0) return Status::Error(field + ".backfill.defaultRuntime." + cls + ": must be positive");
            p.backfill.default_runtime_s[static_cast<int>(*c)] = secs;
          }
        } else {
          return Status::Error(field + ".backfill." + bk + ": unknown field (accepted: depth, minGpus, agedAfter, defaultRuntime)");
        }
      }
    } else if (k == "plugins") {
      if (!v.is_array()) return Status::Error(field + ".plugins: must be a list");
      for (size_t i = 0; i < v.size(); ++i) {
        const auto& e = v[i];
        const std::string f = field + ".plugins[" + std::to_string(i) + "]";
        PluginSpec ps;
        if (e.is_string()) {
          ps.name = e.get<std::string>();
        } else if (e.is_object()) {
          for (const auto& [pk, pv] : e.items()) {
            if (pk == "name") {
              if (!pv.is_string()) return Status::Error(f + ".name: must be a string");
              ps.name = pv.get<std::string>();
            } else if (pk == "weight") {
              if (!pv.is_number_integer()) return Status::Error(f + ".weight: must be an integer");
              ps.weight = pv.get<int64_t>();
            } else if (pk == "args") {
              if (!pv.is_object()) return Status::Error(f + ".args: must be a mapping");
              ps.args = pv;
            } else {
              return Status::Error(f + "." + pk + ": unknown field (accepted: name, weight, args)");
            }
          }
        } else {
          return Status::Error(f + ": must be a plugin name or a mapping");
        }
        if (ps.name.empty()) return Status::Error(f + ".name: must be set");
        p.plugins.push_back(std::move(ps));
      }
    } else {
      return Status::Error(field + "." + k + ": unknown field (accepted: name, maxCandidates, plugins, backfill)");
    }
  }
  return p;
}

StatusOr<std::unique_ptr<Profile>> Profile::Build(const ProfileSpec& spec, const Registry& registry,
                                                  const PluginContext& ctx) {
  auto p = std::make_unique<Profile>();
  p->name_ = spec.name;
  if (spec.max_candidates < 1 || spec.max_candidates > 64) {
    return Status::Error("profile " + spec.name + ": maxCandidates: must be 1..64, got " +
                         std::to_string(spec.max_candidates));
  }
  p->max_candidates_ = spec.max_candidates;
  p->backfill_ = spec.backfill;
  std::set<std::string> seen;
  for (size_t i = 0; i < spec.plugins.size(); ++i) {
    const auto& ps = spec.plugins[i];
    const std::string f = "profile " + spec.name + ": plugins[" + std::to_string(i) + "] (" + ps.name + ")";
    if (!seen.insert(ps.name).second) return Status::Error(f + ": listed twice");
    const PluginFactory* factory = registry.Find(ps.name);
    if (factory == nullptr) {
      std::string known;
      for (const auto& n : registry.Names()) known += (known.empty() ? "" : ", ") + n;
      return Status::Error(f + ": unknown plugin (registered: " + known + ")");
    }
    auto made = (*factory)(ps.args, ctx);
    if (!made.ok()) return Status::Error(f + ": args: " + made.status().Message());
    Plugin* raw = made.value().get();
    p->owned_.push_back(std::move(made).value());
    bool any = false;
    if (auto* q = dynamic_cast<QueueSortPlugin*>(raw)) {
      if (p->queue_sort_ != nullptr) {
        return Status::Error(f + ": a second QueueSort plugin (" + std::string(p->queue_sort_->Name()) +
                             " is already enabled); a profile has exactly one");
      }
      p->queue_sort_ = q;
      any = true;
    }
    if (auto* x = dynamic_cast<AdmitPlugin*>(raw)) p->admit_.push_back(x), any = true;
    if (auto* x = dynamic_cast<PreFilterPlugin*>(raw)) p->prefilter_.push_back(x), any = true;
    if (auto* x = dynamic_cast<const FilterPlugin*>(raw)) p->filter_.push_back(x), any = true;
    if (auto* x = dynamic_cast<const ScorePlugin*>(raw)) {
      const int64_t w = ps.weight == 0 ? 1 : ps.weight;
      if (w < 1 || w > 100) return Status::Error(f + ": weight: must be 1..100, got " + std::to_string(ps.weight));
      p->score_.emplace_back(x, w);
      any = true;
    } else if (ps.weight != 0) {
      return Status::Error(f + ": weight: only Score plugins take a weight");
    }
    if (auto* x = dynamic_cast<ReservePlugin*>(raw)) p->reserve_.push_back(x), any = true;
    if (auto* x = dynamic_cast<PermitPlugin*>(raw)) p->permit_.push_back(x), any = true;
    if (auto* x = dynamic_cast<PostFilterPlugin*>(raw)) p->postfilter_.push_back(x), any = true;
    if (!any) return Status::Error(f + ": implements no extension point");
  }
  if (p->queue_sort_ == nullptr) {
    return Status::Error("profile " + spec.name + ": plugins: no QueueSort plugin enabled (exactly one is required)");
  }
  return p;
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
