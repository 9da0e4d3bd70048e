// Engine: lifecycle - creation, the scheduler built from the profile, hot reload, the ledger's
// state file, and stats. The front door's mirror is engine_sync.cc, the gang protocol
// engine_gang.cc, planning engine_plan.cc, reservations engine_reservations.cc, preemption
// engine_preempt.cc, read-only views engine_views.cc. Threading: every public method takes mu_.
#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "core/state/headroom.h"
#include "plugins/registry.h"

namespace tidal {

namespace {

std::string RandomEpoch() {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 16; ++i) s += kHex[rng() % 16];
  return s;
}

}  // namespace

StatusOr<std::unique_ptr<Engine>> Engine::Create(EngineConfig cfg, Clock clock) {
  auto tree = QueueTree::Build(cfg.queues);
  if (!tree.ok()) return tree.status();
  if (!clock) {
    clock = [] {
      // Wall clock: the ledger's state file must stay meaningful across restarts.
      return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
  const int32_t max_ahead = cfg.explain_max_ahead;
  std::unique_ptr<Engine> e(new Engine(std::move(cfg), std::move(clock), *tree));
  e->SetExplainOptions(ExplainOptions{max_ahead});
  {
    std::lock_guard<std::mutex> lock(e->mu_);
    if (Status s = e->BuildSchedulerLocked(); !s.ok()) return s;
  }
  if (e->cfg_.refresh_in_background) {
    Engine* self = e.get();
    e->refresher_.Start([self, mirrors = std::make_shared<RefreshMirrors>()] { self->RefreshInBackground(*mirrors); });
  }
  return e;
}

Engine::~Engine() { refresher_.Stop(); }  // before the members its work reads go

Engine::Engine(EngineConfig cfg, Clock clock, std::shared_ptr<const QueueTree> tree)
    : cfg_(std::move(cfg)), clock_(std::move(clock)), epoch_(RandomEpoch()), ledger_(std::move(tree)) {
  // Read at start only: it is about what this start knows (engine_doors.cc).
  for (FrontDoor d : cfg_.front_doors) door_memory_[static_cast<size_t>(d)].expected = true;
}

Status Engine::BuildSchedulerLocked() {
  const Registry registry = plugins::DefaultRegistry();
  auto profile = Profile::Build(cfg_.profile, registry, PluginContext{cfg_.levels, &ledger_});
  if (!profile.ok()) return profile.status();
  sched_ = std::make_unique<Scheduler>(std::move(profile).value());
  book_->clear();
  ++book_epoch_;  // a refresh job of the old profile is not installed
  return Status::Ok();
}

Status Engine::Reconfigure(const EngineConfig& cfg) {
  if (Status s = ReconfigureLocked(cfg); !s.ok()) return s;
  SetExplainOptions(ExplainOptions{cfg.explain_max_ahead});  // explain_mu_ is never taken inside mu_
  return Status::Ok();
}

Status Engine::ReconfigureLocked(const EngineConfig& cfg) {
  std::lock_guard<std::mutex> lock(mu_);
  auto tree = QueueTree::Build(cfg.queues);
  if (!tree.ok()) return tree.status();
  // Plans nobody has claimed yet are made again under the new policy. A plan with a reserved slot
  // stays: its door already acts on it (kube-scheduler holds the member assumed on the node, in
  // Permit; a Slurm job admitted onto it is being released), so dropping it would hand those GPUs
  // to someone else while they are taken (a double booking once the member binds). Its ledger
  // charge moves with the ledger below, like a bound pod's.
  for (auto& [key, g] : gangs_) {
    if (g.plan && std::none_of(g.plan->slots.begin(), g.plan->slots.end(), [](const Slot& s) { return s.reserved; })) {
      DropPlanLocked(g);
    }
  }
  const bool levels_changed = cfg.levels.Accepted() != cfg_.levels.Accepted();
  // Specs carry their queue's name for a former name (ParseSpecLocked): read again when those move.
  const bool reread_specs = levels_changed || cfg.queues.FormerNames() != cfg_.queues.FormerNames();
  // The nodes' closes (engine_closes.cc) and named pools are computed with state_.
  const bool windows_changed = !cfg.maintenance.empty() || !cfg_.maintenance.empty() || !cfg.pools.empty() || !cfg_.pools.empty();
  cfg_ = cfg;
  if (windows_changed) state_.reset();
  ledger_.Reconfigure(*tree);
  RederiveHeadroomLocked();  // the scheduler name or the queues' fromHPA may have changed
  if (reread_specs) {
    // Specs are read with the levels and the queues' former names: read every pod's again.
    state_.reset();
    last_parsed_uid_.clear();
    for (auto& [uid, p] : pods_) {
      p.spec.reset();
      ParseSpecLocked(p);
    }
    // Bound pods keep the queue they were bound in (the by-door ledger, runtime metrics): a former
    // name now reads as its queue's name there too.
    for (auto& [uid, b] : bound_since_) {
      auto p = pods_.find(uid);
      if (p == pods_.end()) continue;
      if (const auto& sp = SpecLocked(p->second); sp.ok()) b.queue = sp->queue;
    }
  }
  RechargeBoundLocked();
  // Gangs' summaries hold specs and workloads (queue ids of the old tree): rebuild them.
  for (const auto& [key, g] : gangs_) QueueReindexLocked(key);
  FlushReindexLocked();
  bound_by_queue_door_.reset();
  if (metrics_ != nullptr) metrics_->InitQueues(LeafQueueNamesLocked());
  // Pods refused under the old config get another try under the new one (a quota raised, a queue
  // added, a rollback): kube-scheduler sees no event for a config change.
  ActivateKubernetesPendingLocked();
  return BuildSchedulerLocked();
}

void Engine::RechargeBoundLocked() {
  // The ledger kept the charges of queues whose name it still finds. Bound work with no charge ran
  // in a queue the old config did not have (a queue removed and now back, one added for a label
  // already in use): its queue has it now, so quota and fair share count it from this reload on.
  // Borrowing or not is judged as at admission, against what the queue holds already.
  for (const auto& [uid, where] : charged_) {
    if (ledger_.charges().count(uid)) continue;
    if (auto p = pods_.find(uid); p != pods_.end()) ChargePodLocked(p->second, std::nullopt);
  }
}

void Engine::SetObservability(EngineMetrics* m, DecisionLog* log) {
  std::lock_guard<std::mutex> lock(mu_);
  metrics_ = m;
  decision_log_ = log;
  if (metrics_ != nullptr) metrics_->InitQueues(LeafQueueNamesLocked());
}

std::vector<std::string> Engine::LeafQueueNamesLocked() const {
  const QueueTree& t = ledger_.tree();
  std::vector<std::string> out;
  // The queue of pods that name none is a known value even when it is not configured (no queues:
  // quota off), so its series exist from the first scrape too.
  if (t.Find(PodSchedulingSpec{}.queue) <= 0) out.push_back(PodSchedulingSpec{}.queue);
  for (int q = 1; q < t.size(); ++q) {
    if (t.IsLeaf(q)) out.push_back(t.Name(q));
  }
  return out;
}

std::string Engine::MetricQueueLocked(const std::string& queue) const {
  const int q = ledger_.tree().Find(queue);
  if (q > 0) return ledger_.tree().Name(q);  // a former name counts as its queue's name
  return queue == PodSchedulingSpec{}.queue ? queue : std::string(kUnconfiguredQueue);
}

std::string Engine::SaveLedger() {
  std::lock_guard<std::mutex> lock(mu_);
  ledger_.Advance(clock_());
  // The ledger's own document ({time, usage}: core/state/queues.cc) with the doors' nodes beside
  // it: an older engine reads the file as before, ignoring doorNodes.
  nlohmann::json state = nlohmann::json::parse(ledger_.SaveState(), nullptr, false);
  if (!state.is_object()) state = nlohmann::json::object();
  SaveDoorMemoryLocked(state);
  SaveDrainsLocked(state);
  if (nlohmann::json h = ends_.history.Save(); !h.empty()) state["runtimeHistory"] = std::move(h);  // engine_runtime.cc
  return state.dump();
}

Status Engine::LoadLedger(const std::string& json) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> skipped;  // values and queues of the usage left out, named
  Status s = ledger_.LoadState(json, &skipped);
  if (const int64_t now = clock_(); s.ok() && ledger_.now() > now) {
    // Written by a clock ahead of this one: the usage counts as of now (Advance starts again from
    // it), else it would neither decay nor grow until this clock reached the file's time.
    skipped.push_back("time: " + std::to_string(ledger_.now()) + " is " + std::to_string(ledger_.now() - now) +
                      " s ahead of this machine's clock; usage taken as of now");
  }
  // Usage decays over the time the engine was down (nothing was integrated meanwhile).
  if (s.ok()) ledger_.Advance(clock_());
  if (!s.ok()) s = Status::Error("usage history not restored: " + s.Message());
  for (auto& why : skipped) {
    if (s.ok()) {
      s = Status::Error(std::move(why));
    } else {
      s.AddReason(std::move(why));
    }
  }
  // The doors' nodes load even when the usage does not: a gate is never lost to another problem.
  const nlohmann::json state = nlohmann::json::parse(json, nullptr, false);
  if (!state.is_object()) return s;
  Status doors = LoadDoorMemoryLocked(state);
  for (Status d : {LoadDrainsLocked(state), state.contains("runtimeHistory")
                                               ? ends_.history.Load(state.at("runtimeHistory"), cfg_.runtime_correction.window)
                                               : Status::Ok()}) {
    if (d.ok()) continue;
    if (doors.ok()) {
      doors = d;
    } else {
      for (const auto& r : d.reasons()) doors.AddReason(r);
    }
  }
  if (s.ok()) return doors;
  for (const auto& r : doors.reasons()) s.AddReason(r);
  return s;
}

std::string Engine::DescribeQueues() {
  std::lock_guard<std::mutex> lock(mu_);
  EnsureStateLocked();  // the ledger's capacity, which every share is read against
  ledger_.Advance(clock_());
  std::string out;
  const QueueTree& t = ledger_.tree();
  const auto& by_queue = BoundGpusByQueueDoorLocked();
  for (int q = 1; q < t.size(); ++q) {
    if (!t.IsLeaf(q)) continue;
    // Bound GPUs of the queue by front door: one ledger, both doors.
    auto it = by_queue.find(t.Name(q));
    const std::array<int64_t, 2> by_door = it == by_queue.end() ? std::array<int64_t, 2>{0, 0} : it->second;
    const std::string doors = "; gpus by door: kubernetes " + std::to_string(by_door[0]) + ", slurm " + std::to_string(by_door[1]);
    // Headroom: the number and where it came from (configured, or derived from HPAs).
    const int64_t h = HeadroomGpus(ledger_, q);
    const std::string room = h > 0 || t.Spec(q).headroom_from_hpa
                                 ? "; headroom " + std::to_string(h) + " GPUs (" + HeadroomSource(ledger_, q) + ")"
                                 : "";
    out += ledger_.Describe(q) + "; share " + std::to_string(ledger_.Share(q)) + doors + room + "\n";
  }
  for (const auto& n : autoscaler_notes_) out += n + "\n";  // HPAs kept but not counted
  return out.empty() ? "no queues configured\n" : out;
}

EngineStats Engine::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats s;
  s.nodes = static_cast<int32_t>(nodes_.size());
  s.pods = static_cast<int32_t>(pods_.size());
  s.gangs = static_cast<int32_t>(gangs_.size());
  for (const auto& [k, g] : gangs_) s.plans += g.plan ? 1 : 0;
  s.generation = generation_;
  s.synced = synced_;
  s.awaiting_doors = AwaitedDoorNamesLocked();
  s.book_refreshes = book_refreshes_;
  s.refresh_locked_ns = refresh_locked_ns_;
  return s;
}

std::vector<std::pair<std::string, size_t>> Engine::Census() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t plans = 0, excluded = 0, pending = 0;
  for (const auto& [k, g] : gangs_) {
    plans += g.plan ? 1 : 0;
    excluded += g.excluded.size();
  }
  for (const auto& [q, heads] : pending_by_queue_) pending += heads.size();
  return {
      {"pods", pods_.size()},
      {"pod_gang", pod_gang_.size()},
      {"gangs", gangs_.size()},
      {"plans", plans},
      {"gang_excluded_nodes", excluded},
      {"pending_heads", pending},
      {"plan_deadlines", plan_deadlines_.size()},
      {"charged", charged_.size()},
      {"bound_since", bound_since_.size()},
      {"ledger_charges", ledger_.charges().size()},
      {"reservations", book_->size()},
      {"preempt_holds", holds_.size()},
      {"grow_waits", grow_waits_.size()},
      {"pdb_protected", pdb_protected_.size()},
      {"preempt_groups", pgroups_.size()},
      {"preempt_group_of", pgroup_of_.size()},
      {"preempt_dirty", pview_dirty_.size()},
      {"activations", activations_[0].size() + activations_[1].size()},
      {"reindex", reindex_.size()},
      {"disruptions", disruptions_.size()},
      {"disruption_pods", disruptions_.pod_index_size()},
      {"lost_members", lost_members_.size()},
  };
}

}  // namespace tidal
