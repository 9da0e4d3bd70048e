// The simulator's lending driver (see lending.h). Threading: single-threaded, owned by one Simulator.
#include "sim/lending.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "sim/metrics.h"
#include "sim/simulator.h"

namespace tidal::sim {

namespace {

bool InService(NodeHealth h) { return h == NodeHealth::kReady || h == NodeHealth::kDegraded; }
Pool PoolOfDoor(size_t door) { return PoolOwnedBy(static_cast<FrontDoor>(door)); }
double Hours(double gpu_s) { return std::round(gpu_s / 3600.0 * 1000.0) / 1000.0; }
double Share(double part, double whole) { return whole > 0 ? std::round(part / whole * 10000.0) / 10000.0 : 0.0; }

// GPUs of door `d`'s pending jobs that fit in `limit` GPUs (the preemptible ones only if asked).
int64_t PendingGpus(const Simulator& sim, size_t d, bool preemptible_only, int64_t limit) {
  int64_t sum = 0;
  for (const auto& [gpus, n] : sim.PendingByDoor(static_cast<FrontDoor>(d), preemptible_only)) {
    if (gpus > limit) break;
    sum += gpus * n;
  }
  return sum;
}

}  // namespace

bool LendingDriver::MayLendTo(Pool pool, const Workload& w) const {
  if (pool != Pool::kKubernetes && pool != Pool::kSlurm) return false;
  if (BorrowerDoor(pool) != w.front_door) return false;
  const LendingPolicy* p = PolicyOf(policies_, pool);
  return p != nullptr && p->lend && (!p->preemptible_only || w.preemptible);
}

void LendingDriver::Prepare(const Simulator& sim) {
  const ClusterState& st = sim.state();
  owner_.clear();
  health_.clear();
  for (const Node& n : st.nodes()) {
    owner_.push_back(n.lent_by != Pool::kShared ? n.lent_by : n.pool);
    health_.push_back(n.health);
    if (owner_.back() != Pool::kShared) pools_[DoorIndex(OwnerDoor(owner_.back()))].gpus += n.capacity.gpus;
  }
}

std::vector<PoolLending::NodeFacts> LendingDriver::Facts(const Simulator& sim) const {
  const ClusterState& st = sim.state();
  // What the borrowers on lent nodes would lose if evicted now: each job's GPUs x its run time,
  // counted on every lent node it uses (as the engine counts a gang).
  std::map<NodeId, int64_t> at_risk;
  bool used_loan = false;
  for (const auto& [node, loan] : lending_.loans()) {
    const NodeId id = st.FindNode(node);
    used_loan = used_loan || (id != kNoNode && st.node(id).allocated.gpus > 0);
  }
  if (used_loan) {
    for (const auto& [id, a] : st.running()) {
      const JobId j = sim.Find(id);
      if (j == SIZE_MAX) continue;
      const JobRecord& r = sim.records()[j];
      std::set<NodeId> lent;
      for (const auto& as : a.assignments) {
        if (st.node(as.node).lent_by != Pool::kShared) lent.insert(as.node);
      }
      for (NodeId n : lent) at_risk[n] += r.gpus * std::max<int64_t>(0, sim.now() - r.start_s);
    }
  }
  std::vector<PoolLending::NodeFacts> facts;
  for (NodeId id = 0; id < st.node_count(); ++id) {
    const Node& n = st.node(id);
    const Pool owner = owner_[static_cast<size_t>(id)];
    const bool lent = n.lent_by != Pool::kShared;
    if (owner == Pool::kShared || (PolicyOf(policies_, owner) == nullptr && !lent)) continue;
    PoolLending::NodeFacts f;
    f.name = n.name;
    f.pool = std::string(PoolName(owner));
    f.in_service = InService(health_[static_cast<size_t>(id)]);
    f.gpus = n.capacity.gpus;
    f.used_gpus = n.allocated.gpus;
    f.borrower_gpus = lent ? n.allocated.gpus : 0;  // a lent node is the borrower's alone
    if (auto r = at_risk.find(id); r != at_risk.end()) f.at_risk_gpu_s = r->second;
    facts.push_back(std::move(f));
  }
  return facts;
}

void LendingDriver::EvictDue(Simulator& sim, bool* changed) {
  const ClusterState& st = sim.state();
  std::set<NodeId> due;
  for (const auto& [node, loan] : lending_.loans()) {
    if (loan.reclaim_since_s == 0 || sim.now() < loan.reclaim_since_s + loan.grace_cap_s) continue;
    if (const NodeId id = st.FindNode(node); id != kNoNode && st.node(id).allocated.gpus > 0) due.insert(id);
  }
  if (due.empty()) return;
  std::vector<std::pair<JobId, size_t>> victims;  // (job, owner door of the node)
  for (const auto& [id, a] : st.running()) {
    for (const auto& as : a.assignments) {
      if (!due.count(as.node)) continue;
      if (const JobId j = sim.Find(id); j != SIZE_MAX) {
        victims.emplace_back(j, DoorIndex(OwnerDoor(owner_[static_cast<size_t>(as.node)])));
      }
      break;
    }
  }
  std::sort(victims.begin(), victims.end());  // deterministic: by job index
  for (const auto& [j, door] : victims) {
    const double before = sim.record(j).lost_gpu_seconds;
    if (!sim.Evict(j).ok()) continue;
    pools_[door].lost_gpu_s += sim.record(j).lost_gpu_seconds - before;
    ++pools_[door].evictions;
    *changed = true;
  }
}

void LendingDriver::Apply(Simulator& sim, const PoolLending::Change& c) {
  ClusterState& st = sim.mutable_state();
  const NodeId id = st.FindNode(c.node);
  if (id == kNoNode) return;
  PoolFigures& p = pools_[DoorIndex(OwnerDoor(DoorPoolOf(c.pool)))];
  Node view = st.node(id);
  view.pool = owner_[static_cast<size_t>(id)];
  view.lent_by = Pool::kShared;
  view.lent_preemptible_only = false;
  view.health = health_[static_cast<size_t>(id)];
  if (const PoolLending::Loan* l = lending_.Find(c.node); l != nullptr) view = LentView(*l, std::move(view));
  switch (c.kind) {
    case PoolLending::Change::Kind::kLent:
      ++p.lends;
      lent_gpus_ += view.capacity.gpus;
      break;
    case PoolLending::Change::Kind::kReclaiming:
      ++p.reclaims;
      break;
    case PoolLending::Change::Kind::kReturned:
      lent_gpus_ -= view.capacity.gpus;
      if (c.reclaim_s >= 0) p.reclaim_s.push_back(static_cast<double>(c.reclaim_s));
      break;
  }
  st.SetPool(id, view.pool, view.lent_by, view.lent_preemptible_only);
  if (st.node(id).health != view.health) st.SetHealth(id, view.health);
}

bool LendingDriver::Step(Simulator& sim) {
  if (policies_.empty() && lending_.loans().empty()) return false;
  bool changed = false;
  EvictDue(sim, &changed);
  last_facts_ = Facts(sim);
  // Each door's pending GPUs: the owner's (work that fits its pool) and the borrower's (work the
  // other pool's policy lends to and that fits that pool).
  PoolLending::Demand demand;
  for (size_t d = 0; d < 2; ++d) {
    const std::string own(PoolName(PoolOfDoor(d))), other(PoolName(PoolOfDoor(1 - d)));
    demand.owner_gpus[own] = PendingGpus(sim, d, false, pools_[d].gpus);
    const LendingPolicy* lender = PolicyOf(policies_, other);
    if (lender != nullptr) demand.borrower_gpus[other] = PendingGpus(sim, d, lender->preemptible_only, pools_[1 - d].gpus);
  }
  const auto changes = lending_.Step(last_facts_, demand, sim.now(), policies_);
  for (const auto& c : changes) Apply(sim, c);
  return changed || !changes.empty();
}

int64_t LendingDriver::NextWakeup(int64_t now) const {
  int64_t t = lending_.NextDue(last_facts_, now, policies_);
  for (const auto& [node, loan] : lending_.loans()) {
    if (loan.reclaim_since_s > 0 && loan.reclaim_since_s + loan.grace_cap_s > now) {
      t = std::min(t, loan.reclaim_since_s + loan.grace_cap_s);
    }
  }
  return t;
}

void LendingDriver::CloseWindow(PoolFigures& p, int64_t end) {
  Window& w = p.open;
  if (w.start < 0) return;
  p.offered_gpu_s += w.offered;
  p.window_filled_gpu_s += w.filled;
  ++p.windows;
  if (end - w.start >= kLongWindowS) {
    p.long_offered_gpu_s += w.offered;
    p.long_filled_gpu_s += w.filled;
    ++p.long_windows;
  }
  w = Window{};
}

void LendingDriver::Account(const Simulator& sim, int64_t from, int64_t to) {
  if (to <= from) return;
  const double dt = static_cast<double>(to - from);
  const ClusterState& st = sim.state();
  int64_t unused[2] = {0, 0}, filled[2] = {0, 0}, idle[2] = {0, 0}, lent[2] = {0, 0};
  for (NodeId id = 0; id < st.node_count(); ++id) {
    const Pool owner = owner_[static_cast<size_t>(id)];
    if (owner == Pool::kShared || !InService(health_[static_cast<size_t>(id)])) continue;
    const Node& n = st.node(id);
    const size_t o = DoorIndex(OwnerDoor(owner));
    idle[o] += std::max<int64_t>(0, n.capacity.gpus - n.allocated.gpus);
    if (n.lent_by != Pool::kShared) {
      lent[o] += n.capacity.gpus;
      filled[o] += n.allocated.gpus;
      unused[o] += n.capacity.gpus;
    } else if (n.allocated.gpus == 0) {
      unused[o] += n.capacity.gpus;
    }
  }
  for (size_t o = 0; o < 2; ++o) {
    PoolFigures& p = pools_[o];
    p.idle_gpu_s += dt * static_cast<double>(idle[o]);
    p.lent_gpu_s += dt * static_cast<double>(lent[o]);
    p.filled_gpu_s += dt * static_cast<double>(filled[o]);
    // Lendable: whole nodes the owner does not use, up to what the other door could run there.
    const LendingPolicy* pol = PolicyOf(policies_, PoolOfDoor(o));
    const bool preemptible_only = pol != nullptr && pol->preemptible_only;
    const int64_t wanted = filled[o] + PendingGpus(sim, 1 - o, preemptible_only, p.gpus);
    const int64_t offered = std::min(unused[o], wanted);
    if (offered <= 0) {
      CloseWindow(p, from);
      continue;
    }
    if (p.open.start < 0) p.open.start = from;
    p.open.offered += dt * static_cast<double>(offered);
    p.open.filled += dt * static_cast<double>(std::min(filled[o], offered));
  }
}

void LendingDriver::Finish(int64_t now) {
  for (auto& p : pools_) CloseWindow(p, now);
}

nlohmann::json LendingDriver::Metrics() const {
  nlohmann::json out = {{"lending", lends()}, {"pools", nlohmann::json::array()}};
  for (size_t o = 0; o < 2; ++o) {
    const PoolFigures& p = pools_[o];
    std::vector<double> rs = p.reclaim_s;
    std::sort(rs.begin(), rs.end());
    nlohmann::json j = {
        {"pool", std::string(PoolName(PoolOfDoor(o)))},
        {"borrower", std::string(FrontDoorName(BorrowerDoor(PoolOfDoor(o))))},
        {"gpus", p.gpus},
        {"idle_gpu_hours", Hours(p.idle_gpu_s)},
        {"lent_gpu_hours", Hours(p.lent_gpu_s)},
        {"filled_gpu_hours", Hours(p.filled_gpu_s)},
        {"lends", p.lends},
        {"reclaims", p.reclaims},
        {"reclaim_evictions", p.evictions},
        {"lost_gpu_hours", Hours(p.lost_gpu_s)},
        {"lost_share_of_filled", Share(p.lost_gpu_s, p.filled_gpu_s)},
        {"reclaim_s",
         {{"count", static_cast<int64_t>(rs.size())},
          {"p50", Percentile(rs, 50)},
          {"p99", Percentile(rs, 99)},
          {"max", rs.empty() ? 0.0 : rs.back()}}},
        {"windows",
         {{"count", p.windows},
          {"offered_gpu_hours", Hours(p.offered_gpu_s)},
          {"filled_share", Share(p.window_filled_gpu_s, p.offered_gpu_s)}}},
        {"long_windows",
         {{"min_s", kLongWindowS},
          {"count", p.long_windows},
          {"offered_gpu_hours", Hours(p.long_offered_gpu_s)},
          {"filled_share", Share(p.long_filled_gpu_s, p.long_offered_gpu_s)}}},
    };
    out["pools"].push_back(std::move(j));
  }
  return out;
}

}  // namespace tidal::sim
