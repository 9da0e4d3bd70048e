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
// Nothing of a pod's spec beyond that (no labels, annotations, env, images, constraints). `config`
// is {version: "", document: null}: the HTTP route puts the running config and its version there
// (server/endpoints.cc).
//
// Threading: takes mu_ like every public method, only to copy what it needs (plain rows); the JSON is
// built after releasing it. The result is a plain value.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "engine/engine.h"

namespace tidal {
namespace {

nlohmann::json Res(const Resources& r) {
  return {{"gpus", r.gpus}, {"cpu_milli", r.cpu_milli}, {"memory_bytes", r.memory_bytes}};
}

// "plan:ns/gang" -> "ns/gang": the snapshot names gangs by their key everywhere.
std::string GangOf(const std::string& id) { return id.rfind("plan:", 0) == 0 ? id.substr(5) : id; }

// A running workload while it is gathered under the lock (pointers into the engine's maps are
// used only there; Row keeps plain values).
struct RunningGroup {
  const PodInfo* first = nullptr;
  std::map<std::string, int32_t> on;  // node -> members
  Resources per_member;
  int64_t start = INT64_MAX, runtime = 0;
  bool ours = false;
};

// What the snapshot holds, copied out under the lock; turned into JSON after it is released.
struct Gathered {
  int64_t now = 0;
  std::string epoch, usage;
  TopologyLevels levels;
  std::string pool_label;
  std::vector<Node> nodes;
  struct Run {
    std::string id, queue;
    FrontDoor door = FrontDoor::kKubernetes;
    bool tidal = false, preemptible = false, on_notice = false;
    int32_t members = 0, min_members = 1, priority = 0;
    std::vector<std::pair<std::string, int32_t>> placement;
    Resources per_member;
    int64_t interval = 0, start = 0, runtime = 0;
    WorkloadClass cls = WorkloadClass::kBatch;
  };
  std::vector<Run> running;
  std::vector<Workload> pending;
  std::vector<bool> pending_on_notice;
  struct Book {
    std::string id;
    int64_t start = 0;
    std::vector<std::pair<std::string, int32_t>> placement;
    bool hold = false;
  };
  std::vector<Book> book;
};

nlohmann::json ToJson(Gathered& g) {
  nlohmann::json out{{"format", "tidal.dev/snapshot"}, {"version", 1}, {"taken_at", g.now}, {"epoch", g.epoch}};
  nlohmann::json levels = nlohmann::json::array();
  std::set<std::string> keep_labels{g.pool_label};
  for (const auto& l : g.levels.levels) {
    levels.push_back({{"name", l.name}, {"label", l.label_key}});
    keep_labels.insert(l.label_key);
  }
  out["topology"] = levels;
  auto placement = [](const std::vector<std::pair<std::string, int32_t>>& at) {
    nlohmann::json p = nlohmann::json::array();
    for (const auto& [node, m] : at) p.push_back({{"node", node}, {"members", m}});
    return p;
  };
  nlohmann::json nodes = nlohmann::json::array();
  for (const Node& n : g.nodes) {
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
  nlohmann::json run = nlohmann::json::array();
  for (const auto& r : g.running) {
    run.push_back({{"id", r.id},
                   {"queue", r.queue},
                   {"door", std::string(FrontDoorName(r.door))},
                   {"tidal", r.tidal},
                   {"members", r.members},
                   {"min_members", r.min_members},
                   {"placement", placement(r.placement)},
                   {"per_member", Res(r.per_member)},
                   {"priority", r.priority},
                   {"preemptible", r.preemptible},
                   {"checkpoint_on_notice", r.on_notice},
                   {"checkpoint_interval_s", r.interval},
                   {"class", std::string(WorkloadClassName(r.cls))},
                   {"start", r.start},
                   {"runtime_s", r.runtime}});
  }
  out["running"] = std::move(run);
  nlohmann::json pending = nlohmann::json::array();
  for (size_t i = 0; i < g.pending.size(); ++i) {
    const Workload& w = g.pending[i];
    pending.push_back({{"id", GangOf(w.id)},
                       {"queue", w.queue},
                       {"door", std::string(FrontDoorName(w.front_door))},
                       {"members", w.members},
                       {"min_members", w.min_members},
                       {"per_member", Res(w.per_member)},
                       {"priority", w.priority},
                       {"preemptible", w.preemptible},
                       {"checkpoint_on_notice", static_cast<bool>(g.pending_on_notice[i])},
                       {"checkpoint_interval_s", w.checkpoint_interval_s},
                       {"class", std::string(WorkloadClassName(w.workload_class))},
                       {"submit", w.submit_time_s},
                       {"runtime_s", w.runtime_limit_s},
                       {"required_level", w.required_level},
                       {"preferred_level", w.preferred_level},
                       {"gpu_model", w.gpu_model}});
  }
  out["pending"] = std::move(pending);
  nlohmann::json usage = nlohmann::json::parse(g.usage, nullptr, false);
  out["usage"] = usage.is_object() ? usage : nlohmann::json{{"time", g.now}, {"usage", nlohmann::json::object()}};
  nlohmann::json book = nlohmann::json::array();
  for (const auto& b : g.book) book.push_back({{"id", b.id}, {"start", b.start}, {"placement", placement(b.placement)}, {"hold", b.hold}});
  out["reservations"] = std::move(book);
  // The engine does not know the document its config came from: GET /snapshot fills this in from
  // the config watcher (server/endpoints.cc); a caller in the process (the rollout dry-run gate)
  // gets a complete snapshot that names no config.
  out["config"] = {{"version", ""}, {"document", nullptr}};
  return out;
}

}  // namespace

nlohmann::json Engine::Snapshot() {
  // Under the lock only copies (nodes, the pending workloads, plain rows); the JSON is built after
  // it is released (at 10,000 nodes and 100,000 pending the lock is held a fraction of the call:
  // docs/benchmarks-sim.md, "Policy dry-run").
  Gathered g;
  {
    std::lock_guard<std::mutex> lock(mu_);
    g.now = clock_();
    ledger_.Advance(g.now);
    EnsureStateLocked();
    g.epoch = epoch_;
    g.levels = cfg_.levels;
    g.pool_label = cfg_.pool_label;
    g.nodes = state_->nodes();
    // Running: bound pods by workload, then the planned members of gangs being bound.
    std::unordered_map<std::string, RunningGroup> running;
    running.reserve(charged_.size());
    for (const auto& [uid, charge] : charged_) {
      auto p = pods_.find(uid);
      if (p == pods_.end()) continue;
      RunningGroup& r = running[WorkloadIdLocked(p->second)];
      if (r.first == nullptr) r.first = &p->second;
      ++r.on[charge.first];
      r.per_member.gpus = std::max(r.per_member.gpus, charge.second.gpus);
      r.per_member.cpu_milli = std::max(r.per_member.cpu_milli, charge.second.cpu_milli);
      r.per_member.memory_bytes = std::max(r.per_member.memory_bytes, charge.second.memory_bytes);
      r.ours = r.ours || OursLocked(p->second);
      auto b = bound_since_.find(uid);
      r.start = std::min(r.start, b != bound_since_.end() ? b->second.since_s : g.now);
      if (b != bound_since_.end()) r.runtime = std::max(r.runtime, b->second.runtime_limit_s);
    }
    for (const auto& [key, gang] : gangs_) {
      if (!gang.plan) continue;
      for (const Slot& s : gang.plan->slots) {
        if (!s.pod_uid.empty() && charged_.count(s.pod_uid)) continue;  // bound: counted above
        RunningGroup& r = running[key];
        if (r.first == nullptr && !gang.pods.empty()) {
          auto p = pods_.find(*gang.pods.begin());
          if (p != pods_.end()) r.first = &p->second;
        }
        ++r.on[s.node];
        r.per_member = gang.plan->per_member;
        r.ours = true;
        r.start = std::min(r.start, gang.plan->created_s);
      }
    }
    g.running.reserve(running.size());
    for (const auto& [id, r] : running) {
      const StatusOr<PodSchedulingSpec>* spec = r.first != nullptr ? &SpecLocked(*r.first) : nullptr;
      const bool has_spec = spec != nullptr && (*spec).ok();
      // A pod of another scheduler that names no queue belongs to none ("").
      const bool queued = r.ours || (r.first != nullptr && (r.first->labels.count(kLabelQueue) || r.first->annotations.count(kLabelQueue)));
      Gathered::Run row;
      row.id = id;
      row.queue = has_spec && queued ? (*spec)->queue : std::string();
      row.door = r.first != nullptr ? r.first->door : FrontDoor::kKubernetes;
      row.tidal = r.ours;
      for (const auto& [node, m] : r.on) {
        row.placement.emplace_back(node, m);
        row.members += m;
      }
      row.min_members = has_spec ? std::clamp((*spec)->gang_min, 1, std::max(1, row.members)) : row.members;
      row.per_member = r.per_member;
      row.priority = r.first != nullptr ? r.first->priority : 0;
      row.preemptible = has_spec && (*spec)->preemptible;
      row.on_notice = has_spec && (*spec)->checkpoint_on_notice_s > 0;
      row.interval = has_spec ? (*spec)->checkpoint_interval_s : 0;
      row.cls = has_spec ? (*spec)->workload_class : WorkloadClass::kBatch;
      row.start = r.start == INT64_MAX ? g.now : r.start;
      row.runtime = r.runtime > 0 ? r.runtime : (has_spec ? (*spec)->runtime_limit_s : 0);
      g.running.push_back(std::move(row));
    }
    // Pending: every gang's workload as the planner sees it (a gang waiting for its victims too).
    g.pending.reserve(gangs_.size());
    g.pending_on_notice.reserve(gangs_.size());
    for (const auto& [key, gang] : gangs_) {
      std::optional<Workload> built;
      const Workload* w = nullptr;
      if (!PendingWorkloadRefLocked(gang, &built, &w)) continue;
      g.pending.push_back(built ? std::move(*built) : *w);
      g.pending_on_notice.push_back((*gang.summary.spec)->checkpoint_on_notice_s > 0);  // a valid spec (the ref's rule)
    }
    g.usage = ledger_.SaveState();
    for (const auto& [id, res] : *book_) {
      Gathered::Book b{GangOf(id), res.start_s, {}, HeldLocked(id)};
      for (const auto& a : res.assignments) {
        if (a.node >= 0 && a.node < state_->node_count()) b.placement.emplace_back(state_->node(a.node).name, a.members);
      }
      g.book.push_back(std::move(b));
    }
  }
  std::sort(g.running.begin(), g.running.end(), [](const Gathered::Run& a, const Gathered::Run& b) { return a.id < b.id; });
  return ToJson(g);
}


}  // namespace tidal
