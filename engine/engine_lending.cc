// Engine: pools lending and reclaiming nodes between the front doors, and a named pool's nodes
// between its owner queues and the rest (the rules: lending.h). At each door's poll LendLocked
// gathers the lending pools' nodes and each pool's pending demand (its owner's and its
// borrowers'), steps PoolLending, and applies its changes: a lent node takes the borrowers' work
// (ToNode through ApplyLoanLocked: the borrower door's pool, or a named pool's node
// named_pool_lent; only preemptible work by policy); a reclaimed
// node takes no new work and its borrowers' workloads are disrupted (cause reclaim, at
// most the pool's graceCapSeconds of notice); a returned node is its owner's again. Every change is
// in the decision log and the metrics (tidal_pool_lends_total, tidal_pool_reclaims_total,
// tidal_pool_reclaim_seconds, tidal_pool_lent_gpus).
// Threading and ownership: as engine.cc: the *Locked functions run under mu_; lending_ is the
// Engine's (engine.h).
#include <algorithm>
#include <set>

#include "core/api/duration.h"
#include "engine/engine.h"

namespace tidal {

namespace {

// Whether work with constraints `c` could use node `name` once it is its owner's: the lent taint
// does not count (it goes when the node is returned, and a just-returned node may still carry it).
bool CouldUse(const ClusterState& state, const std::string& name, const NodeConstraints& c) {
  const NodeId id = state.FindNode(name);
  if (id == kNoNode) return false;
  Node n = state.node(id);
  std::erase_if(n.taints, [](const Taint& t) { return t.key == kLentTaintKey; });
  return c.Refusal(n).empty();
}

// Adds the lent nodes of pool `pool` that waiting work with constraints `c` could use to
// demand->owner_wanted; work without constraints may use any (`any` gets the pool). Returns how
// many it added.
size_t WantedLoans(const ClusterState& state, const PoolLending& lending, const NodeConstraints* c, const std::string& pool,
                   PoolLending::Demand* demand, std::set<std::string>* any) {
  if (c == nullptr || c->Empty()) {
    any->insert(pool);
    return 0;
  }
  size_t added = 0;
  for (const auto& [name, loan] : lending.loans()) {
    if (loan.pool != pool || demand->owner_wanted.count(name)) continue;
    if (CouldUse(state, name, *c)) added += demand->owner_wanted.insert(name).second ? 1 : 0;
  }
  return added;
}

// Adds the nodes of `unlent` (a pool's unlent nodes with free GPUs) that waiting work with
// constraints `c` could use to demand->owner_usable; returns how many it added.
size_t UsableUnlent(const ClusterState& state, const std::vector<std::string>& unlent, const NodeConstraints& c,
                    PoolLending::Demand* demand) {
  size_t added = 0;
  for (const auto& name : unlent) {
    if (!demand->owner_usable.count(name) && CouldUse(state, name, c)) added += demand->owner_usable.insert(name).second ? 1 : 0;
  }
  return added;
}

}  // namespace

void Engine::ApplyLoanLocked(Node& n) const {
  // While lent the node is the borrower's alone (never both sides at once); while reclaimed it
  // takes no new work from either side until its borrowers are gone and it is returned.
  if (const PoolLending::Loan* l = lending_.Find(n.name); l != nullptr) n = LentView(*l, std::move(n));
}

std::string Engine::HomePoolLocked(const std::string& queue) const {
  if (cfg_.pools.empty()) return "";
  const QueueTree& t = ledger_.tree();
  std::vector<std::string> ancestors;
  const int q = t.Find(queue);
  for (int a = q >= 0 ? t.Parent(q) : -1; a > 0; a = t.Parent(a)) ancestors.push_back(t.Name(a));
  return HomePoolOf(cfg_.pools, queue, ancestors);
}

std::string Engine::OwnerPoolOf(const Node& node) {
  if (!node.named_pool.empty()) return node.named_pool;
  const Pool owner = node.lent_by != Pool::kShared ? node.lent_by : node.pool;
  return owner == Pool::kShared ? "" : std::string(PoolName(owner));
}

bool Engine::BorrowsLocked(FrontDoor door, const std::string& queue, const std::string& pool) const {
  if (IsDoorPool(pool)) return door == BorrowerDoor(DoorPoolOf(pool));
  return HomePoolLocked(queue) != pool;
}

bool Engine::PodBorrowsLocked(const PodInfo& p, const std::string& pool) const {
  if (IsDoorPool(pool)) return p.door == BorrowerDoor(DoorPoolOf(pool));
  if (!OursLocked(p)) return false;  // another scheduler's pod: neither the owner's nor a borrower
  const auto& spec = SpecLocked(p);
  return spec.ok() && HomePoolLocked(spec->queue) != pool;
}

void Engine::LendLocked(int64_t now) {
  if (cfg_.pools.empty() && lending_.loans().empty()) return;
  EnsureStateLocked();
  const uint8_t both = (1u << DoorIndex(FrontDoor::kKubernetes)) | (1u << DoorIndex(FrontDoor::kSlurm));
  // The nodes of the lending pools (and of loans whose pool stopped lending), in node order, and
  // the doors that may use each pool's nodes.
  std::vector<PoolLending::NodeFacts> facts;
  std::unordered_map<std::string, size_t> fact_of;
  std::map<std::string, int64_t> pool_gpus;    // GPUs of each pool (lent and reclaimed ones too)
  std::map<std::string, uint8_t> pool_doors;  // doors whose work may use a pool's nodes
  for (NodeId id = 0; id < state_->node_count(); ++id) {
    const Node& node = state_->node(id);
    const std::string owner = OwnerPoolOf(node);
    if (owner.empty() || (PolicyOf(cfg_.pools, owner) == nullptr && lending_.Find(node.name) == nullptr)) continue;
    auto u = node_usable_.find(node.name);
    const uint8_t usable = u != node_usable_.end() ? u->second : 0;
    PoolLending::NodeFacts f;
    f.name = node.name;
    f.pool = owner;
    // A door pool's node must be reported by both doors to be lent across; a named pool's by its door.
    // A close other than its own loan's term (engine_closes.cc) takes it out of service.
    auto close = closes_.find(node.name);
    const bool closing = close != closes_.end() && close->second.cause != DisruptionCause::kReclaim;
    f.in_service = node.Schedulable() && usable != 0 && (!IsDoorPool(owner) || (usable & both) == both) && !closing;
    f.gpus = node.capacity.gpus;
    f.used_gpus = node.allocated.gpus;
    pool_gpus[owner] += f.gpus;
    pool_doors[owner] |= usable;
    fact_of.emplace(node.name, facts.size());
    facts.push_back(std::move(f));
  }
  if (facts.empty() && lending_.loans().empty()) return;
  // The borrowers' bound and planned work there (a planned pod is about to bind), and what
  // their workloads would lose if disrupted now: GPU-seconds since their start or last checkpoint.
  std::unordered_map<std::string, std::set<std::string>> borrowers;  // node -> workload ids
  for (const auto& [uid, where] : charged_) {
    auto f = fact_of.find(where.first);
    auto p = pods_.find(uid);
    if (f == fact_of.end() || p == pods_.end() || !PodBorrowsLocked(p->second, facts[f->second].pool)) continue;
    facts[f->second].borrower_gpus += where.second.gpus;
    borrowers[where.first].insert(WorkloadIdLocked(p->second));
  }
  for (const auto& [key, g] : gangs_) {
    if (!g.plan) continue;
    for (const Slot& slot : g.plan->slots) {
      auto f = fact_of.find(slot.node);
      if (f == fact_of.end() || !BorrowsLocked(g.door, g.plan->queue, facts[f->second].pool)) continue;
      if (slot.pod_uid.empty() || !charged_.count(slot.pod_uid)) facts[f->second].borrower_gpus += g.plan->per_member.gpus;
    }
  }
  auto at_risk = [&](const std::string& id) {
    int64_t lost = 0;
    auto add = [&](const std::string& uid) {
      auto p = pods_.find(uid);
      auto b = bound_since_.find(uid);  // since its start (status.startTime) once known
      if (p == pods_.end() || !p->second.UsesCapacity() || b == bound_since_.end()) return;
      lost += p->second.request.gpus * std::max<int64_t>(0, now - std::max(b->second.since_s, UsableCheckpoint(p->second.last_checkpoint_unix, now)));
    };
    if (auto g = gangs_.find(id); g != gangs_.end()) {
      for (const auto& uid : g->second.pods) add(uid);
    } else {
      add(id);
    }
    return lost;
  };
  for (const auto& [node, ids] : borrowers) {
    for (const auto& w : ids) facts[fact_of.at(node)].at_risk_gpu_s += at_risk(w);
  }
  // Pending demand that found no room (tried, no placement: not work held by quota or that can
  // never run, which a loan would not help), by pool: its owner's, and for the borrowers only work
  // the pool's policy lends to. Work larger than the whole pool it would use is not counted:
  // no loan or reclaim of that pool makes it fit.
  PoolLending::Demand demand;
  std::set<std::string> any;  // pools some of whose waiting owner work may go anywhere
  // Which loans the owner's waiting work can use: asked only while some loan is not known wanted
  // (cheap when nothing is lent, the usual case).
  std::map<std::string, size_t> loans_of, wanted_of, usable_of;
  for (const auto& [node, l] : lending_.loans()) ++loans_of[l.pool];
  // The unlent nodes with free GPUs of pools with loans: those the owner's constrained waiting work
  // may use count against its demand (owner_usable), the others do not.
  std::map<std::string, std::vector<std::string>> unlent_free;
  for (const auto& f : facts) {
    if (loans_of.count(f.pool) && f.in_service && f.gpus > f.used_gpus && lending_.Find(f.name) == nullptr) {
      unlent_free[f.pool].push_back(f.name);
    }
  }
  for (const auto& [queue, heads] : pending_by_queue_) {
    const std::string home = HomePoolLocked(queue);
    for (const HeadKey& h : heads) {
      const Gang& g = *h.ptr;
      if (g.plan || g.summary.pending <= 0 || !g.wants_room || g.summary.spec == nullptr || !g.summary.spec->ok()) continue;
      const int64_t gpus = g.summary.per_member.gpus * g.summary.pending;
      const bool preemptible = (*g.summary.spec)->preemptible;
      for (const auto& [pool, total] : pool_gpus) {
        if (gpus > total || (pool_doors[pool] & (1u << DoorIndex(g.door))) == 0) continue;
        const bool owner = IsDoorPool(pool) ? g.door == OwnerDoor(DoorPoolOf(pool)) : home == pool;
        if (owner) {
          demand.owner_gpus[pool] += gpus;
          if (wanted_of[pool] < loans_of[pool]) {
            wanted_of[pool] += WantedLoans(*state_, lending_, g.summary.constraints.get(), pool, &demand, &any);
          }
          const NodeConstraints* c = g.summary.constraints.get();
          if (auto u = unlent_free.find(pool); c != nullptr && !c->Empty() && u != unlent_free.end() &&
                                               usable_of[pool] < u->second.size()) {
            usable_of[pool] += UsableUnlent(*state_, u->second, *c, &demand);
          }
        } else if (const LendingPolicy* lender = PolicyOf(cfg_.pools, pool);
                   lender != nullptr && (IsDoorPool(pool) ? g.door == BorrowerDoor(DoorPoolOf(pool)) : true) &&
                   (!lender->preemptible_only || preemptible)) {
          demand.borrower_gpus[pool] += gpus;
        }
      }
    }
  }
  for (const auto& [pool, gpus] : demand.owner_gpus) {
    if (!any.count(pool)) demand.owner_only.insert(pool);
  }
  const auto changes = lending_.Step(facts, demand, now, cfg_.pools);
  for (const auto& c : changes) {
    const std::string& from = c.pool;
    const std::string to = BorrowerLabel(c.pool);
    const char* what = c.kind == PoolLending::Change::Kind::kLent         ? "lent"
                       : c.kind == PoolLending::Change::Kind::kReclaiming ? "reclaim"
                                                                          : "returned";
    if (metrics_ != nullptr) {
      if (c.kind == PoolLending::Change::Kind::kLent) metrics_->pool_lends.With({from, to}).Increment();
      if (c.kind == PoolLending::Change::Kind::kReclaiming) metrics_->pool_reclaims.With({from, to}).Increment();
      if (c.kind == PoolLending::Change::Kind::kReturned && c.reclaim_s >= 0) {
        metrics_->pool_reclaim_seconds.With({from, to}).Observe(static_cast<double>(c.reclaim_s));
      }
    }
    static const char* const kReasons[] = {"TidalNodeLent", "TidalNodeReclaimed", "TidalNodeReturned"};
    lending_.RecordEvent({c.node, kReasons[static_cast<int>(c.kind)],
                          std::string(what) + " (pool " + from + ", borrower " + to + "): " + c.why});
    if (decision_log_ != nullptr) {
      nlohmann::json line = {{"ts", now}, {"outcome", std::string("pool-") + what}, {"nodes", {c.node}}, {"from", from},
                             {"to", to}, {"reason", c.why}};
      if (c.reclaim_s >= 0 && c.kind == PoolLending::Change::Kind::kReturned) line["reclaim_s"] = c.reclaim_s;
      decision_log_->Write(std::move(line));
    }
  }
  if (!changes.empty()) {
    state_.reset();  // lent nodes' pools change (ApplyLoanLocked)
    EnsureStateLocked();
    // kube-scheduler sees no event when a node is lent to it or comes back: its pods try again.
    ActivateKubernetesPendingLocked();
  }
  // Nodes being reclaimed: their borrowers go, with at most the pool's grace cap of notice (those
  // that end within it by their runtime limit are left to end).
  std::set<std::string> reclaiming;
  for (const auto& [node, l] : lending_.loans()) {
    if (l.reclaim_since_s > 0) reclaiming.insert(node);
  }
  for (const auto& [node, pods] : OurPodsOnLocked(reclaiming)) {
    const PoolLending::Loan& l = *lending_.Find(node);
    const int64_t deadline = l.reclaim_since_s + l.grace_cap_s;
    for (const PodInfo* p : pods) {
      if (!PodBorrowsLocked(*p, l.pool) || p->terminating) continue;
      // Work whose declared runtime ends within the grace cap finishes instead (drain-and-wait);
      // past the deadline it goes like the rest.
      if (const int64_t end = ExpectedEndLocked(*p); end > 0 && end <= deadline && now < deadline) continue;
      const std::string id = WorkloadIdLocked(*p);
      if (disruptions_.Find(id) != nullptr) continue;
      OpenDisruptionLocked(id, DisruptionCause::kReclaim, VictimPodsLocked(id, {node}),
                           "node " + node + " is reclaimed by its owner pool " + l.pool + " (it was lent to " +
                               BorrowerWords(l.pool) + ")",
                           l.grace_cap_s);
    }
  }
}

NodeLendingInfo Engine::TakeNodeLending() {
  std::lock_guard<std::mutex> lock(mu_);
  NodeLendingInfo out;
  for (auto& e : lending_.TakeEvents()) out.events.push_back({std::move(e.node), std::move(e.reason), std::move(e.message)});
  out.lent_to_slurm = LentNodesLocked(FrontDoor::kKubernetes);
  return out;
}

std::vector<std::string> Engine::LentNodesLocked(FrontDoor owner) const {
  std::vector<std::string> out;
  for (const auto& [node, l] : lending_.loans()) {
    if (IsDoorPool(l.pool) && OwnerDoor(DoorPoolOf(l.pool)) == owner) out.push_back(node);
  }
  return out;  // loans() is a std::map: sorted
}

void Engine::LentGaugesLocked(EngineGauges& out) const {
  std::map<std::pair<std::string, std::string>, double> lent;  // (from, to) -> GPUs
  auto pair = [](const std::string& pool) { return std::make_pair(pool, BorrowerLabel(pool)); };
  for (const auto& p : cfg_.pools) lent[pair(p.pool)] = 0;
  for (const auto& [node, l] : lending_.loans()) {
    if (auto n = nodes_.find(node); n != nodes_.end()) lent[pair(l.pool)] += static_cast<double>(n->second.capacity.gpus);
  }
  for (const auto& [k, v] : lent) out.lent_gpus.push_back({{k.first, k.second}, v});
}

std::string Engine::LoanNoteLocked(const std::string& node) const {
  const PoolLending::Loan* l = lending_.Find(node);
  if (l == nullptr) return "";
  return "node " + node + " is lent by pool " + l->pool + " since " + FormatUnixTime(l->since_s) +
         (l->reclaim_since_s > 0 ? "; its owner reclaims it since " + FormatUnixTime(l->reclaim_since_s)
                                 : (l->until_s > 0 ? "; the loan ends at " + FormatUnixTime(l->until_s) +
                                                         " (the job gets its notice before then, as late as it allows)"
                                                   : "; when its owner wants it back the job gets at most " +
                                                         std::to_string(l->grace_cap_s) + " s notice"));
}

}  // namespace tidal
