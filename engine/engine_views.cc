// Engine's read-mostly views: Explain, ExplainJson (the /explain API), Gauges (metrics). Same
// class as engine.cc. (Preempt lives in engine_preempt.cc; explain's stateless words in explain_text.cc.)
//
// Threading: Explain and Gauges hold Engine::mu_ for their whole run. ExplainJson takes
// explain_mu_ (one dry run at a time), then mu_ only while it reads the gang and copies what its
// dry run needs (the timeline, the ledger, the book, and the workloads of at most max_ahead gangs
// ahead of the asked one: ExplainBatchLocked); the dry cycle itself runs on those copies with mu_
// released, so other RPCs wait for the copying only, never for the cycle. The copies share
// nothing mutable with the live state (Workload::constraints are immutable and shared).
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "core/state/headroom.h"
#include "engine/engine.h"
#include "engine/explain_text.h"
#include "engine/pending_merge.h"
#include "plugins/registry.h"

namespace tidal {

namespace {
using SteadyClock = std::chrono::steady_clock;
int64_t NanosSince(SteadyClock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - t0).count();
}
// Adds the time from its construction to its destruction to *ns.
struct ScopedTimer {
  int64_t* ns;
  SteadyClock::time_point t0 = SteadyClock::now();
  ~ScopedTimer() { *ns += NanosSince(t0); }
};
std::string QueueOf(const EngineGang& g) { return g.summary.spec != nullptr && g.summary.spec->ok() ? (*g.summary.spec)->queue : ""; }
// Explain's "disruption" (the open disruption of a member of g: who takes it off GPUs, when) and
// "preempting" (g's preemption hold: its victims, what it waits for), as JSON fields.
nlohmann::json DisruptionFields(const EngineGang& g, const DisruptionBook& book, const std::map<std::string, PreemptHold>& holds,
                                const std::map<std::string, EngineGang>& gangs, const std::string& waiting, int64_t now) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& u : g.pods) {
    const DisruptionRecord* r = book.ForPod(u);
    if (r == nullptr) continue;
    std::string preemptor_queue;  // the gang whose hold names this victim
    for (const auto& [plan_id, h] : holds) {
      if (std::none_of(h.victims.begin(), h.victims.end(), [&](const PreemptHold::Victim& v) { return v.id == r->id; })) continue;
      if (auto p = gangs.find(plan_id.substr(5)); p != gangs.end()) preemptor_queue = QueueOf(p->second);
    }
    out["disruption"] = DisruptionExplain(*r, preemptor_queue, QueueOf(g), now);
    break;
  }
  if (auto h = holds.find("plan:" + g.key); h != holds.end()) out["preempting"] = PreemptingExplain(h->second, waiting, now);
  return out;
}
}  // namespace

// What one ExplainJson's dry run is given (filled under mu_ by ExplainBatchLocked).
struct Engine::ExplainBatch {
  std::vector<Workload> workloads;
  bool full = false;         // every pending gang: the queue is no longer than max_ahead
  bool cut = false;          // gangs were left out: position and ETA are estimates
  int64_t ahead = 0;         // pending gangs ahead of the asked one (bounded path)
  int64_t queue_length = 0;  // pending gangs in all (bounded path: from the pending index)
  int64_t walked = 0, ahead_indexed = 0;  // gangs ahead looked at / in the pending index
  int64_t book_left_out = 0;              // gangs holding a reservation left out (over max_ahead)
};

std::string Engine::GangKeyForLocked(const std::string& name, const PodInfo** lone_pod) const {
  if (gangs_.count(name)) return name;
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return name;
  const std::string_view ns(name.data(), slash), pod(name.data() + slash + 1, name.size() - slash - 1);
  for (const auto& [uid, p] : pods_) {
    if (p.ns != ns || p.name != pod) continue;  // no Key() string per pod: 100k pods are scanned
    auto g = pod_gang_.find(uid);
    if (g != pod_gang_.end()) return g->second;
    if (lone_pod != nullptr) *lone_pod = &p;  // a pod Tidal does not schedule
    return "";
  }
  return name;
}

void Engine::SetExplainOptions(const ExplainOptions& o) {
  std::lock_guard<std::mutex> serial(explain_mu_);
  explain_opts_ = o;
  explain_opts_.max_ahead = std::max<int32_t>(1, o.max_ahead);
}

Engine::ExplainStats Engine::LastExplainStats() {
  std::lock_guard<std::mutex> serial(explain_mu_);
  return explain_stats_;
}

void Engine::ExplainBatchLocked(const std::string& key, ExplainBatch& out) const {
  const Gang& target = gangs_.at(key);
  const size_t max_ahead = static_cast<size_t>(explain_opts_.max_ahead);  // explain_mu_ is held
  int64_t total = 0;
  for (const auto& [q, gangs] : pending_by_queue_) total += static_cast<int64_t>(gangs.size());
  // The pending index orders a queue's gangs as both QueueSorts do (priority, submit time, key;
  // the workload id is "plan:" + key); fairshare puts the queues' fair-share ranks first.
  const std::string_view sort = sched_->profile().queue_sort().Name();
  const bool index_order = sort == "fairshare" || sort == "priority";
  if (static_cast<size_t>(total) <= max_ahead || !index_order || !target.head) {
    out.workloads = PendingGangWorkloadsLocked();
    out.full = true;
    return;
  }
  // As PendingGangWorkloadsLocked, for one gang.
  auto workload_of = [&](const std::string& k) -> std::optional<Workload> {
    auto it = gangs_.find(k);
    if (it == gangs_.end()) return std::nullopt;
    if (HeldLocked(PlanId(it->second))) return std::nullopt;
    return PendingWorkloadLocked(it->second);
  };
  const QueueRanks ranks(ledger_, sort == "fairshare");
  const int32_t own_rank = ranks.Of(target.head_queue);
  PendingMerge merge;
  int64_t ahead = 0;  // index entries ahead of the target: a walk of pointers, no workload built
  for (const auto& [q, gangs] : pending_by_queue_) {
    const int32_t r = ranks.Of(q);
    if (r > own_rank) continue;
    if (r < own_rank) {
      ahead += static_cast<int64_t>(gangs.size());
    } else {
      for (auto it = gangs.begin(); it != gangs.end() && *it < *target.head; ++it) ++ahead;
    }
    merge.Add(r, gangs);
  }
  // The first max_ahead gangs in queue order (a merge of the queues' indexes), up to the target.
  int64_t walked = 0, skipped = 0;
  while (static_cast<size_t>(walked) < max_ahead) {
    const GangHeadKey* next = merge.Peek();
    if (next == nullptr || next->gang == key) break;
    const std::string& k = merge.Next()->gang;
    ++walked;
    if (auto w = workload_of(k)) {
      out.workloads.push_back(std::move(*w));
    } else {
      ++skipped;  // planned, holding a preemption, or nothing left to place: not in the dry run
    }
  }
  out.cut = walked < ahead;
  if (auto w = workload_of(key)) out.workloads.push_back(std::move(*w));
  // Gangs holding a reservation in the book, wherever they are in the queue: their kept
  // reservations are commitments the asked gang may not delay (at most max_ahead of them).
  std::unordered_set<std::string> ids;
  for (const auto& w : out.workloads) ids.insert(w.id);
  size_t added = 0;
  for (const auto& [id, res] : *book_) {
    if (ids.count(id) || id.rfind("plan:", 0) != 0) continue;
    if (added == max_ahead) {
      ++out.book_left_out;
      out.cut = true;
      continue;
    }
    if (auto w = workload_of(id.substr(5))) {
      out.workloads.push_back(std::move(*w));
      ++added;
    }
  }
  out.ahead = ahead - skipped;
  out.queue_length = total - skipped;
  out.walked = walked;
  out.ahead_indexed = ahead;
}

StatusOr<nlohmann::json> Engine::ExplainJson(const std::string& name) {
  std::lock_guard<std::mutex> serial(explain_mu_);
  // The call's account, recorded however it returns.
  struct Account {
    ExplainStats* out;
    ExplainStats s;
    SteadyClock::time_point t0 = SteadyClock::now();
    ~Account() {
      s.total_ns = NanosSince(t0);
      *out = s;
    }
  } acct{&explain_stats_, {}};
  nlohmann::json j;
  ExplainBatch batch;
  std::optional<ClusterState> dry;
  std::optional<QuotaLedger> dry_ledger;
  std::shared_ptr<std::map<std::string, Reservation>> book;
  ProfileSpec ps;
  TopologyLevels levels;
  int64_t now = 0, closing = 0;
  std::string plan_id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ScopedTimer held{&acct.s.lock_held_ns};
    const PodInfo* lone = nullptr;
    const std::string key = GangKeyForLocked(name, &lone);  // one scan of the pods, here only
    if (lone != nullptr) {  // in no gang: its spec refused or held, or another scheduler's pod
      PodSchedulingSpec unused;
      Status refusal;
      (void)GangKeyLocked(*lone, &unused, &refusal);
      j = LonePodExplain(name, *lone, OursLocked(*lone), refusal, cfg_.scheduler_name);
      j["now_unix"] = clock_();
      return j;
    }
    std::string text;
    if (Status s = ExplainTextLocked(key, &text); !s.ok()) return Status::Error("no gang or pod named " + name, "engine");
    j = nlohmann::json{{"workload", key}, {"text", text}, {"now_unix", clock_()}};
    auto git = gangs_.find(key);
    if (git == gangs_.end()) return j;
    const Gang& gang = git->second;
    if (!gang.summary.conflict.empty()) {  // never planned until its members agree: no ETA (CheckPod's words)
      j["state"] = "invalid";
      j["reason"] = gang.summary.conflict;
      return j;
    }
    const auto& spec = SpecLocked(pods_.at(*gang.pods.begin()));
    if (!spec.ok()) {
      j["state"] = "invalid";
      j["reason"] = spec.status().Message();
      return j;
    }
    int32_t bound = 0, pending = 0;
    for (const auto& u : gang.pods) (pods_.at(u).UsesCapacity() ? bound : pending)++;
    j["queue"] = spec->queue;
    j["class"] = std::string(WorkloadClassName(spec->workload_class));
    j["members"] = {{"size", spec->gang_size}, {"min", spec->gang_min}, {"pending", pending}, {"bound", bound}};
    j["last"] = gang.last_reason.empty() ? GangIncompleteWhy(key, &gang, spec->gang_min) : gang.last_reason;
    if (std::string r = RuntimeNoteLocked(gang); !r.empty()) j["runtime"] = r;  // engine_runtime.cc
    if (auto r = book_->find(PlanId(gang)); r != book_->end()) {
      j["reservation"] = {{"start_unix", r->second.start_s}, {"nodes", r->second.assignments.size()}};
      EnsureStateLocked();  // the book's NodeIds
      if (std::string f = GapFillersNoteLocked(r->first); !f.empty()) j["reservation"]["fillers"] = f;
    }
    j.update(DisruptionFields(gang, disruptions_, holds_, gangs_, AwaitingVictimsLocked(PlanId(gang)), clock_()));
    const int q = ledger_.tree().Find(spec->queue);
    j["quota"] = QuotaLine(spec->queue, ledger_.tree().size() > 1, q > 0 ? ledger_.Describe(q) : "");
    if (gang.plan) {
      j["state"] = "planned";
      j["domain"] = gang.plan->domain;
      return j;
    }
    if (bound > 0) {
      EnsureStateLocked();  // closes_
      int64_t until = 0;
      if (std::string b = BorrowedTimeLocked(gang, &until); !b.empty()) j["borrowed"] = {{"until_unix", until}, {"why", b}};
    }
    if (bound >= spec->gang_size) {
      j["state"] = "running";
      return j;
    }
    // An elastic gang at or above its minimum runs; the rest of its members wait to grow it back
    // (their dry run follows).
    const bool runs = bound > 0 && bound >= spec->gang_min;
    j["state"] = runs ? "running" : "pending";
    if (runs) j["growing"] = pending;
    // Position and ETA: one dry-run cycle on copies of the cluster (bound pods end at their
    // expected end) and the ledger; nothing of the live state changes.
    EnsureStateLocked();
    PruneBookLocked();
    ExplainBatchLocked(key, batch);
    dry.emplace(TimelineLocked());
    dry_ledger.emplace(ledger_);
    book = std::make_shared<std::map<std::string, Reservation>>(*book_);  // kept ones, on a copy
    ps = cfg_.profile;
    levels = cfg_.levels;
    now = clock_();
    plan_id = PlanId(gang);
    closing = static_cast<int64_t>(ClosingNodesLocked().size());
  }
  // mu_ released: the dry cycle runs on the copies.
  if (ps.backfill.depth >= 0) ps.backfill.depth = -1;  // every gang considered gets an ETA
  const Registry registry = plugins::DefaultRegistry();
  auto profile = Profile::Build(ps, registry, PluginContext{levels, &*dry_ledger});
  if (!profile.ok()) return j;
  SchedulerOptions opts;
  opts.reservations = std::move(book);
  Scheduler dry_sched(std::move(profile).value(), std::move(opts));
  acct.s.considered = static_cast<int64_t>(batch.workloads.size());
  acct.s.cut = batch.cut;
  CycleResult cr = dry_sched.RunCycle(*dry, std::move(batch.workloads), now);
  j["queue_length"] = batch.full ? static_cast<int64_t>(cr.decisions.size()) : batch.queue_length;
  j["estimate"] = batch.cut;
  j["dry_run"] = {{"considered", acct.s.considered}, {"max_ahead", explain_opts_.max_ahead}, {"cut", batch.cut}};
  for (size_t i = 0; i < cr.decisions.size(); ++i) {
    const Decision& d = cr.decisions[i];
    if (d.workload_id != plan_id) continue;
    const int64_t position = batch.full ? static_cast<int64_t>(i) + 1 : batch.ahead + 1;
    acct.s.ahead = position - 1;
    j["position"] = position;
    j["would"] = std::string(OutcomeName(d.outcome));
    // The dry cycle's words, as the events put them: a reserved start in words (not "t=UNIX"), the
    // gang by its key (not its workload id "plan:KEY"), and the nodes it left out (closing nodes
    // take no reservation there, so "0 free GPUs" would read as a full cluster).
    std::string why = WordReservedStarts(d.explanation, now);
    for (size_t at = why.find(plan_id); at != std::string::npos; at = why.find(plan_id, at)) why.erase(at, 5);
    if (d.outcome != Outcome::kPlaced && closing > 0) {
      why += "; the dry run leaves out " + std::to_string(closing) +
             " node(s) that close (a drain, a maintenance window or a perishable window's end)";
    }
    j["why"] = why;
    if (d.outcome == Outcome::kPlaced) {
      j["eta_unix"] = now;
    } else if (d.eta_s >= 0) {
      j["eta_unix"] = d.eta_s;
      // Due by the declared run times, yet not placed: what it waits for runs past its expected end.
      if (d.eta_s <= now) j["eta_overdue"] = true;
    } else {
      j["eta_unix"] = nullptr;
    }
    if (batch.cut) {
      std::string note = "estimate: the dry run considered";
      if (batch.walked < batch.ahead_indexed) {
        note += " the first " + std::to_string(batch.walked) + " of the " + std::to_string(batch.ahead_indexed) +
                " gangs ahead in queue order (position counted from the pending index)";
      }
      if (batch.book_left_out > 0) {
        note += std::string(batch.walked < batch.ahead_indexed ? " and" : "") + " not " +
                std::to_string(batch.book_left_out) + " gangs holding reservations (over max_ahead)";
      }
      note += "; the ETA is optimistic, as if the gangs left out took no capacity first";
      j["estimate_reason"] = note;
      j["why"] = why + " [" + note + "]";
    }
  }
  return j;
}

Status Engine::Explain(const std::string& name, std::string* text) {
  std::lock_guard<std::mutex> lock(mu_);
  return ExplainTextLocked(name, text);
}

Status Engine::ExplainTextLocked(const std::string& name, std::string* text, std::string* key_out) {
  const PodInfo* lone = nullptr;
  const std::string key = GangKeyForLocked(name, &lone);
  if (key_out != nullptr) *key_out = key;
  if (lone != nullptr) {  // in no gang: its spec refused or held, or another scheduler's pod
    PodSchedulingSpec unused;
    Status refusal;
    (void)GangKeyLocked(*lone, &unused, &refusal);
    *text = LonePodExplain(name, *lone, OursLocked(*lone), refusal, cfg_.scheduler_name)["text"];
    return Status::Ok();
  }
  auto g = gangs_.find(key);
  if (g == gangs_.end()) return Status::Error("no gang or pod named " + name, "engine");
  int32_t bound = 0, pending = 0;
  for (const auto& u : g->second.pods) (pods_.at(u).UsesCapacity() ? bound : pending)++;
  std::string t = "gang " + key + ": " + std::to_string(pending) + " pending, " + std::to_string(bound) + " bound\n";
  if (g->second.plan) {
    const auto& pl = *g->second.plan;
    const auto reserved = std::count_if(pl.slots.begin(), pl.slots.end(), [](const Slot& s) { return s.reserved; });
    t += "plan: " + pl.domain + ", " + std::to_string(pl.slots.size()) + " slots, " + std::to_string(reserved) +
         " reserved: " + pl.explanation + "\n";
  }
  if (!g->second.summary.conflict.empty()) {  // its members disagree: refused, never planned (CheckPod's words)
    t += ConflictLine(g->second.summary.conflict) + "\n";
  } else {
    std::string last = g->second.last_reason;
    if (last.empty() && !g->second.pods.empty()) {  // never tried: an incomplete gang says so (CheckPod holds its pods)
      const auto& spec = SpecLocked(pods_.at(*g->second.pods.begin()));
      if (spec.ok()) last = GangIncompleteWhy(key, &g->second, spec->gang_min);
    }
    if (!last.empty()) t += "last: " + last + "\n";  // never tried (first seen running): no blank line
  }
  if (bound > 0) {
    EnsureStateLocked();  // closes_
    if (std::string b = BorrowedTimeLocked(g->second, nullptr); !b.empty()) t += "window: " + b + "\n";
  }
  if (std::string r = RuntimeNoteLocked(g->second); !r.empty()) t += "runtime: " + r + "\n";  // engine_runtime.cc
  if (std::string r = ReservedStartLocked(PlanId(g->second)); !r.empty()) {
    t += "reservation: " + r + "\n";
    EnsureStateLocked();  // the book's NodeIds
    if (std::string f = GapFillersNoteLocked(PlanId(g->second)); !f.empty()) t += "fillers: " + f + "\n";
  }
  const nlohmann::json dis = DisruptionFields(g->second, disruptions_, holds_, gangs_, AwaitingVictimsLocked(PlanId(g->second)), clock_());
  for (const char* k : {"disruption", "preempting"}) {
    if (dis.contains(k)) t += std::string(k) + ": " + dis[k]["why"].get<std::string>() + "\n";
  }
  for (const auto& u : g->second.pods) {
    const PodInfo& p = pods_.at(u);
    if (!p.spec_not_applied.ok()) t += "not applied: pod " + p.Key() + " keeps the spec it runs with: " + p.spec_not_applied.Message() + "\n";
  }
  if (!g->second.pods.empty()) {
    const auto& spec = SpecLocked(pods_.at(*g->second.pods.begin()));
    if (spec.ok()) {
      const int q = ledger_.tree().Find(spec->queue);
      t += "quota: " + QuotaLine(spec->queue, ledger_.tree().size() > 1, q > 0 ? ledger_.Describe(q) : "") + "\n";
    }
  }
  *text = t;
  return Status::Ok();
}

void Engine::DoorGaugesLocked(EngineGauges& out) const {
  // Both doors' share of the one fabric and the one ledger (always both rows, 0 when idle).
  double members[2][2] = {{0, 0}, {0, 0}}, gpus[2] = {0, 0}, nodes[2] = {0, 0};
  for (const auto& [uid, p] : pods_) {
    const int d = static_cast<int>(p.door);
    if (p.UsesCapacity()) {
      members[d][1] += 1;
      gpus[d] += static_cast<double>(p.request.gpus);
    } else if (p.node_name.empty() && !p.terminating && p.phase == PodPhase::kPending && OursLocked(p)) {
      members[d][0] += 1;
    }
  }
  for (const auto& [name, recs] : node_doors_) {
    for (int d = 0; d < 2; ++d) nodes[d] += recs[static_cast<size_t>(d)] ? 1 : 0;
  }
  for (int d = 0; d < 2; ++d) {
    const std::string door(FrontDoorName(static_cast<FrontDoor>(d)));
    out.door_members.push_back({{door, "pending"}, members[d][0]});
    out.door_members.push_back({{door, "bound"}, members[d][1]});
    out.door_gpus.push_back({{door}, gpus[d]});
    out.door_nodes.push_back({{door}, nodes[d]});
    out.door_awaiting.push_back({{door}, DoorReportedAwaitedLocked(d) ? 1.0 : 0.0});
  }
  LentGaugesLocked(out);
  RuntimeGaugesLocked(out);  // engine_runtime.cc
  const QueueTree& t = ledger_.tree();
  const auto& by_queue = BoundGpusByQueueDoorLocked();
  for (int q = 1; q < t.size(); ++q) {
    if (!t.IsLeaf(q)) continue;
    auto it = by_queue.find(t.Name(q));
    for (int d = 0; d < 2; ++d) {
      out.queue_door_gpus.push_back({{t.Name(q), std::string(FrontDoorName(static_cast<FrontDoor>(d)))},
                                     it == by_queue.end() ? 0.0 : static_cast<double>(it->second[static_cast<size_t>(d)])});
    }
  }
}

const std::map<std::string, std::array<int64_t, 2>>& Engine::BoundGpusByQueueDoorLocked() const {
  if (bound_by_queue_door_) return *bound_by_queue_door_;
  auto& out = bound_by_queue_door_.emplace();
  for (const auto& [uid, b] : bound_since_) {
    if (b.queue.empty()) continue;
    auto p = pods_.find(uid);
    if (p == pods_.end() || !p->second.UsesCapacity()) continue;
    auto& row = out.try_emplace(b.queue, std::array<int64_t, 2>{0, 0}).first->second;
    row[static_cast<size_t>(p->second.door)] += p->second.request.gpus;
  }
  return out;
}

EngineGauges Engine::Gauges() {
  std::lock_guard<std::mutex> lock(mu_);
  EnsureStateLocked();
  ledger_.Advance(clock_());
  EngineGauges out;
  // GPUs by state and pool: allocated to bound pods, reserved by plans, idle, unhealthy.
  std::map<std::pair<std::string, std::string>, double> gpus;
  // Plans are held as allocations in the state: their GPUs move from allocated to reserved, in the
  // pool of the node each slot holds (a Slurm job's plan on Slurm or shared nodes is not Kubernetes').
  std::map<std::string, int64_t> reserved_by_pool;
  for (const auto& [key, g] : gangs_) {
    if (!g.plan) continue;
    for (const auto& slot : g.plan->slots) {
      const NodeId n = state_->FindNode(slot.node);
      if (n == kNoNode || !state_->node(n).Schedulable()) continue;  // counted as unhealthy, whole
      reserved_by_pool[std::string(PoolName(state_->node(n).pool))] += g.plan->per_member.gpus;
    }
  }
  const std::vector<int64_t> gap = GapGpusLocked(clock_());
  std::map<std::string, double> health;
  for (auto h : {NodeHealth::kReady, NodeHealth::kDegraded, NodeHealth::kUnhealthy, NodeHealth::kDraining, NodeHealth::kCordoned}) {
    health[std::string(NodeHealthName(h))] = 0;
  }
  for (NodeId n = 0; n < state_->node_count(); ++n) {
    const Node& node = state_->node(n);
    // A node an admin drains counts as draining from the drain on, while it still takes work that
    // ends in time (engine_closes.cc); a maintenance window's nodes count once it has started.
    NodeHealth shown = node.health;
    auto c = closes_.find(node.name);
    const bool window = c != closes_.end() && c->second.by > clock_();  // a perishable window (engine_perishable.cc)
    if (shown == NodeHealth::kReady || shown == NodeHealth::kDegraded) {
      if (c != closes_.end() && c->second.cause != DisruptionCause::kMaintenance && c->second.cause != DisruptionCause::kWindowEnd) {
        shown = NodeHealth::kDraining;
      }
    }
    health[std::string(NodeHealthName(shown))] += 1;
    // A node no door may use now (drained or down wherever it is reported) is placed in no pool;
    // its GPUs are shown with the doors that report it (a drained Slurm-only node is Slurm's).
    Pool shown_pool = node.pool;
    if (auto u = node_usable_.find(node.name); u != node_usable_.end() && u->second == 0) {
      if (auto r = node_doors_.find(node.name); r != node_doors_.end()) {
        const bool k8s = r->second[static_cast<size_t>(FrontDoor::kKubernetes)].has_value();
        const bool slurm = r->second[static_cast<size_t>(FrontDoor::kSlurm)].has_value();
        if (slurm) shown_pool = k8s ? Pool::kShared : Pool::kSlurm;
      }
    }
    const std::string pool(PoolName(shown_pool));
    if (!node.Schedulable()) {
      gpus[{"unhealthy", pool}] += static_cast<double>(node.capacity.gpus);
      continue;
    }
    gpus[{"allocated", pool}] += static_cast<double>(std::min(node.capacity.gpus, node.allocated.gpus));
    // Idle GPUs in a window, or held for a reserved start ahead (a gap: engine_gap_fill.cc), perish.
    const int64_t free = std::max<int64_t>(0, node.FreeGpus());
    const int64_t perishing = window ? free : gap.empty() ? 0 : std::min(free, gap[static_cast<size_t>(n)]);
    gpus[{"perishable", pool}] += static_cast<double>(perishing);
    gpus[{"idle", pool}] += static_cast<double>(free - perishing);
  }
  for (const auto& [pool, r] : reserved_by_pool) {
    gpus[{"allocated", pool}] -= static_cast<double>(r);
    gpus[{"reserved", pool}] += static_cast<double>(r);
  }
  for (const char* st : {"allocated", "idle", "reserved", "perishable", "unhealthy"}) gpus[{st, "kubernetes"}] += 0;
  for (const auto& [k, v] : gpus) out.gpus.push_back({{k.first, k.second}, v});
  for (const auto& [k, v] : health) out.node_health.push_back({{k}, v});
  // Pending gangs by queue and class; smallest pending member shape for fragmentation.
  std::map<std::pair<std::string, std::string>, double> pending;
  std::map<std::string, double> reserved_by_queue;  // pending gangs holding a backfill reservation
  PruneBookLocked();
  int64_t smallest = INT64_MAX;
  for (const auto& [key, g] : gangs_) {
    if (g.plan) continue;
    bool any_pending = false;
    const PodInfo* sample = nullptr;
    for (const auto& u : g.pods) {
      const PodInfo& p = pods_.at(u);
      if (!p.UsesCapacity() && p.node_name.empty()) {
        any_pending = true;
        sample = &p;
        if (p.request.gpus > 0) smallest = std::min(smallest, p.request.gpus);
      }
    }
    if (!any_pending) continue;
    const auto& spec = SpecLocked(*sample);
    if (!spec.ok()) continue;
    const std::string queue = MetricQueueLocked(spec->queue);
    pending[{queue, std::string(WorkloadClassName(spec->workload_class))}] += 1;
    if (book_->count(PlanId(g))) reserved_by_queue[queue] += 1;
  }
  // Every configured leaf queue shows its series from the first scrape, at 0 when nothing waits.
  for (const auto& q : LeafQueueNamesLocked()) {
    for (auto c : {WorkloadClass::kTraining, WorkloadClass::kInference, WorkloadClass::kBatch, WorkloadClass::kInteractive}) {
      pending[{q, std::string(WorkloadClassName(c))}] += 0;
    }
    reserved_by_queue[q] += 0;
  }
  for (const auto& [k, v] : pending) out.pending.push_back({{k.first, k.second}, v});
  for (const auto& [q, v] : reserved_by_queue) out.reservations.push_back({{q}, v});
  std::map<std::string, int64_t> missing;  // level -> nodes without its label (own domains)
  for (const auto& l : cfg_.levels.levels) missing[l.name] = 0;
  for (const auto& [name, n] : nodes_) {
    for (const auto& l : MissingLevels(n)) ++missing[l];
  }
  for (const auto& [l, v] : missing) out.missing_topology.push_back({{l}, static_cast<double>(v)});
  DoorGaugesLocked(out);
  if (smallest != INT64_MAX) {
    for (const auto& node : state_->nodes()) {
      const int64_t f = node.FreeGpus();
      if (f > 0 && f < smallest) out.unusable_free_gpus += static_cast<double>(f);
    }
  }
  // Largest whole-node gang placeable now, per level.
  const int64_t g8 = std::max<int64_t>(1, state_->max_gpus_per_node());
  for (int l = 0; l < state_->levels().node_level(); ++l) {
    auto [b, e] = state_->LevelRange(l);
    int64_t best = 0;
    for (VertexId v = b; v < e; ++v) best = std::max(best, state_->MemberCapacity(v, g8));
    out.largest_gang.push_back({{state_->levels().Name(l)}, static_cast<double>(best * g8)});
  }
  // Queues.
  const QueueTree& t = ledger_.tree();
  for (int q = 1; q < t.size(); ++q) {
    for (int r = 0; r < t.resources(); ++r) {
      const std::string& rn = t.config().resources[static_cast<size_t>(r)];
      out.queue_usage.push_back({{t.Name(q), rn}, static_cast<double>(ledger_.Allocated(q)[static_cast<size_t>(r)])});
      const int64_t nom = t.Spec(q).nominal[static_cast<size_t>(r)];
      if (nom < kUnlimited) out.queue_nominal.push_back({{t.Name(q), rn}, static_cast<double>(nom)});
      out.queue_borrowed.push_back({{t.Name(q), rn}, static_cast<double>(ledger_.Borrowed(q)[static_cast<size_t>(r)])});
    }
    out.fair_share.push_back({{t.Name(q)}, ledger_.Share(q)});
    if (t.Spec(q).headroom_gpus > 0 || t.Spec(q).headroom_from_hpa) {
      out.queue_headroom.push_back({{t.Name(q)}, static_cast<double>(HeadroomGpus(ledger_, q))});
    }
  }
  return out;
}

}  // namespace tidal
