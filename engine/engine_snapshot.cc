// Engine::Snapshot: the live state a policy dry-run starts from (`tidalctl snapshot`, GET /snapshot;
// the reader is sim/snapshot.h, the format docs/simulator.md "Snapshots"): format
// "tidal.dev/snapshot" version 1 with
//   nodes        name, topology labels (the configured levels' and the pool label only), capacity,
//                GPU model, health, door pool, named pool;
//   running      every workload using capacity (a Tidal gang by its key, any other pod as
//                "pod:<ns>/<name>"): queue, door, members per node, per-member request, priority,
//                preemptible, checkpointing, start (earliest member), declared runtime (0 unknown),
//                whether Tidal schedules it; a gang's planned members not yet bound count as running
//                (they are being bound);
//   pending      every pending gang as the planner sees it (its workload): members still to place;
//   usage        the ledger's decayed usage ({time, usage}: QuotaLedger::SaveState);
//   reservations the backfill book (and preemption holds): gang, start, nodes.
// Nothing of a pod's spec beyond that (no labels, annotations, env, images, constraints). The HTTP
// route adds the config the engine runs and its version (server/endpoints.cc).
//
// Threading: under mu_, like every public method; the result is a plain value.
#include <algorithm>
#include <map>
#include <set>

#include "engine/engine.h"

namespace tidal {
namespace {

nlohmann::json Res(const Resources& r) {
  return {{"gpus", r.gpus}, {"cpu_milli", r.cpu_milli}, {"memory_bytes", r.memory_bytes}};
}

// "plan:ns/gang" -> "ns/gang": the snapshot names gangs by their key everywhere.
std::string GangOf(const std::string& id) { return id.rfind("plan:", 0) == 0 ? id.substr(5) : id; }

struct RunningGroup {
  const PodInfo* first = nullptr;
  std::map<std::string, int32_t> on;  // node -> members
  Resources per_member;
  int64_t start = INT64_MAX, runtime = 0;
  bool ours = false;
};

}  // namespace

nlohmann::json Engine::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = clock_();
  ledger_.Advance(now);
  EnsureStateLocked();
  nlohmann::json out{{"format", "tidal.dev/snapshot"}, {"version", 1}, {"taken_at", now}, {"epoch", epoch_}};
  nlohmann::json levels = nlohmann::json::array();
  std::set<std::string> keep_labels{cfg_.pool_label};
  for (const auto& l : cfg_.levels.levels) {
    levels.push_back({{"name", l.name}, {"label", l.label_key}});
    keep_labels.insert(l.label_key);
  }
  out["topology"] = levels;

  nlohmann::json nodes = nlohmann::json::array();
  for (const Node& n : state_->nodes()) {
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [k, v] : n.labels) {
      if (keep_labels.count(k)) labels[k] = v;
    }
    nodes.push_back({{"name", n.name},
                     {"labels", labels},
                     {"capacity", Res(n.capacity)},
                     {"gpu_model", n.gpu_model},
                     {"health", std::string(NodeHealthName(n.health))},
                     {"pool", std::string(PoolName(n.pool))},
                     {"named_pool", n.named_pool}});
  }
  out["nodes"] = std::move(nodes);

  // Running: bound pods by workload, then the planned members of gangs being bound.
  std::map<std::string, RunningGroup> running;
  for (const auto& [uid, charge] : charged_) {
    auto p = pods_.find(uid);
    if (p == pods_.end()) continue;
    RunningGroup& g = running[WorkloadIdLocked(p->second)];
    if (g.first == nullptr) g.first = &p->second;
    ++g.on[charge.first];
    g.per_member.gpus = std::max(g.per_member.gpus, charge.second.gpus);
    g.per_member.cpu_milli = std::max(g.per_member.cpu_milli, charge.second.cpu_milli);
    g.per_member.memory_bytes = std::max(g.per_member.memory_bytes, charge.second.memory_bytes);
    g.ours = g.ours || OursLocked(p->second);
    auto b = bound_since_.find(uid);
    g.start = std::min(g.start, b != bound_since_.end() ? b->second.since_s : now);
    if (b != bound_since_.end()) g.runtime = std::max(g.runtime, b->second.runtime_limit_s);
  }
  for (const auto& [key, gang] : gangs_) {
    if (!gang.plan) continue;
    for (const Slot& s : gang.plan->slots) {
      if (!s.pod_uid.empty() && charged_.count(s.pod_uid)) continue;  // bound: counted above
      RunningGroup& g = running[key];
      if (g.first == nullptr && !gang.pods.empty()) {
        auto p = pods_.find(*gang.pods.begin());
        if (p != pods_.end()) g.first = &p->second;
      }
      ++g.on[s.node];
      g.per_member = gang.plan->per_member;
      g.ours = true;
      g.start = std::min(g.start, gang.plan->created_s);
    }
  }
  nlohmann::json run = nlohmann::json::array();
  for (const auto& [id, g] : running) {
    const StatusOr<PodSchedulingSpec>* spec = g.first != nullptr ? &SpecLocked(*g.first) : nullptr;
    const bool has_spec = spec != nullptr && (*spec).ok();
    // A pod of another scheduler that names no queue belongs to none ("").
    const bool queued = g.ours || (g.first != nullptr && (g.first->labels.count(kLabelQueue) || g.first->annotations.count(kLabelQueue)));
    nlohmann::json placement = nlohmann::json::array();
    int32_t members = 0;
    for (const auto& [node, m] : g.on) {
      placement.push_back({{"node", node}, {"members", m}});
      members += m;
    }
    run.push_back({{"id", id},
                   {"queue", has_spec && queued ? (*spec)->queue : std::string()},
                   {"door", std::string(FrontDoorName(g.first != nullptr ? g.first->door : FrontDoor::kKubernetes))},
                   {"tidal", g.ours},
                   {"members", members},
                   {"min_members", has_spec ? std::clamp((*spec)->gang_min, 1, std::max(1, members)) : members},
                   {"placement", placement},
                   {"per_member", Res(g.per_member)},
                   {"priority", g.first != nullptr ? g.first->priority : 0},
                   {"preemptible", has_spec && (*spec)->preemptible},
                   {"checkpoint_on_notice", has_spec && (*spec)->checkpoint_on_notice_s > 0},
                   {"checkpoint_interval_s", has_spec ? (*spec)->checkpoint_interval_s : 0},
                   {"class", std::string(WorkloadClassName(has_spec ? (*spec)->workload_class : WorkloadClass::kBatch))},
                   {"start", g.start == INT64_MAX ? now : g.start},
                   {"runtime_s", g.runtime > 0 ? g.runtime : (has_spec ? (*spec)->runtime_limit_s : 0)}});
  }
  out["running"] = std::move(run);

  nlohmann::json pending = nlohmann::json::array();
  for (const Workload& w : PendingGangWorkloadsLocked()) {
    const std::string key = GangOf(w.id);
    bool on_notice = false;
    if (auto g = gangs_.find(key); g != gangs_.end() && g->second.summary.spec && g->second.summary.spec->ok()) {
      on_notice = (*g->second.summary.spec)->checkpoint_on_notice_s > 0;
    }
    pending.push_back({{"id", key},
                       {"queue", w.queue},
                       {"door", std::string(FrontDoorName(w.front_door))},
                       {"members", w.members},
                       {"min_members", w.min_members},
                       {"per_member", Res(w.per_member)},
                       {"priority", w.priority},
                       {"preemptible", w.preemptible},
                       {"checkpoint_on_notice", on_notice},
                       {"checkpoint_interval_s", w.checkpoint_interval_s},
                       {"class", std::string(WorkloadClassName(w.workload_class))},
                       {"submit", w.submit_time_s},
                       {"runtime_s", w.runtime_limit_s},
                       {"required_level", w.required_level},
                       {"preferred_level", w.preferred_level},
                       {"gpu_model", w.gpu_model}});
  }
  out["pending"] = std::move(pending);

  nlohmann::json usage = nlohmann::json::parse(ledger_.SaveState(), nullptr, false);
  out["usage"] = usage.is_object() ? usage : nlohmann::json{{"time", now}, {"usage", nlohmann::json::object()}};

  nlohmann::json book = nlohmann::json::array();
  for (const auto& [id, res] : *book_) {
    nlohmann::json at = nlohmann::json::array();
    for (const auto& a : res.assignments) {
      if (a.node >= 0 && a.node < state_->node_count()) at.push_back({{"node", state_->node(a.node).name}, {"members", a.members}});
    }
    book.push_back({{"id", GangOf(id)}, {"start", res.start_s}, {"placement", at}, {"hold", HeldLocked(id)}});
  }
  out["reservations"] = std::move(book);
  return out;
}

}  // namespace tidal
