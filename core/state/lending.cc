// Pools that lend and reclaim nodes (see lending.h). Threading: plain data with one owner (the
// Engine under its mu_, or one simulator run); DecodeLending and LentView are pure functions.
#include "core/state/lending.h"

#include <algorithm>
#include <tuple>

namespace tidal {

namespace {

Status DecodeNames(const nlohmann::json& v, const std::string& f, std::vector<std::string>* out) {
  if (!v.is_array() || v.empty()) return Status::Error(f + ": must be a non-empty list of queue names");
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string() || v[i].get<std::string>().empty()) {
      return Status::Error(f + "[" + std::to_string(i) + "]: must be a queue name");
    }
    out->push_back(v[i].get<std::string>());
  }
  return Status::Ok();
}

Status DecodeSelector(const nlohmann::json& v, const std::string& f, std::map<std::string, std::string>* out) {
  if (!v.is_object() || v.empty()) return Status::Error(f + ": must be a non-empty mapping of node label to value");
  for (const auto& [k, x] : v.items()) {
    if (!x.is_string()) return Status::Error(f + "." + k.substr(0, 64) + ": must be a string");
    (*out)[k] = x.get<std::string>();
  }
  return Status::Ok();
}

Status DecodePolicy(const nlohmann::json& j, const std::string& f, LendingPolicy* out) {
  if (!j.is_object()) return Status::Error(f + ": must be a mapping");
  auto integer = [&](const std::string& k, int64_t lo, int64_t hi, int64_t* v) -> Status {
    const auto& x = j.at(k);
    if (!x.is_number_integer() || x.get<int64_t>() < lo || x.get<int64_t>() > hi) {
      return Status::Error(f + "." + k + ": must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    *v = x.get<int64_t>();
    return Status::Ok();
  };
  Status problems;  // every problem of the policy, one reason each
  auto add = [&problems](const Status& s) {
    for (const auto& r : s.reasons()) problems.ok() ? void(problems = Status::Error(r)) : void(problems.AddReason(r));
  };
  for (const auto& [k, v] : j.items()) {
    Status st;
    int64_t n = 0;
    if (k == "lend") {
      if (!v.is_boolean()) st = Status::Error(f + ".lend: must be true or false");
      else out->lend = v.get<bool>();
    } else if (k == "keep") {
      st = integer(k, 0, 1000000, &n);
      out->keep_nodes = static_cast<int32_t>(n);
    } else if (k == "to") {
      const std::string to = v.is_string() ? v.get<std::string>() : "";
      if (to != "preemptible" && to != "any") {
        st = Status::Error(f + ".to: unknown value " + v.dump().substr(0, 64) + " (accepted: preemptible, any)");
      }
      out->preemptible_only = to == "preemptible";
    } else if (k == "idleSeconds") {
      st = integer(k, 0, 86400, &out->idle_s);
    } else if (k == "graceCapSeconds") {
      st = integer(k, 0, 86400, &out->grace_cap_s);
    } else if (k == "loanSeconds") {
      st = integer(k, 0, 30 * 86400, &out->loan_s);
    } else if (k == "queues" && !IsDoorPool(out->pool)) {
      st = DecodeNames(v, f + ".queues", &out->queues);
    } else if (k == "selector" && !IsDoorPool(out->pool)) {
      st = DecodeSelector(v, f + ".selector", &out->selector);
    } else {
      st = Status::Error(f + "." + k.substr(0, 64) + ": unknown field (accepted: lend, keep, to, idleSeconds, graceCapSeconds, loanSeconds" +
                           (IsDoorPool(out->pool) ? "" : ", queues, selector") + ")");
    }
    add(st);
  }
  return problems;
}

}  // namespace

bool IsDoorPool(const std::string& pool) { return pool == kDoorPoolKubernetes || pool == kDoorPoolSlurm; }

Pool DoorPoolOf(const std::string& name) { return name == kDoorPoolSlurm ? Pool::kSlurm : Pool::kKubernetes; }

const LendingPolicy* PolicyOf(const std::vector<LendingPolicy>& policies, const std::string& pool) {
  for (const auto& pol : policies) {
    if (pol.pool == pool) return &pol;
  }
  return nullptr;
}

FrontDoor OwnerDoor(Pool p) { return p == Pool::kSlurm ? FrontDoor::kSlurm : FrontDoor::kKubernetes; }
FrontDoor BorrowerDoor(Pool p) { return p == Pool::kSlurm ? FrontDoor::kKubernetes : FrontDoor::kSlurm; }

std::string HomePoolOf(const std::vector<LendingPolicy>& policies, const std::string& leaf,
                       const std::vector<std::string>& ancestors) {
  for (const auto& pol : policies) {
    for (const auto& q : pol.queues) {
      if (q == leaf || std::find(ancestors.begin(), ancestors.end(), q) != ancestors.end()) return pol.pool;
    }
  }
  return "";
}

std::string NamedPoolOf(const std::vector<LendingPolicy>& policies, const std::string& label_value,
                        const std::map<std::string, std::string>& labels) {
  for (const auto& pol : policies) {
    if (IsDoorPool(pol.pool)) continue;
    if (pol.pool == label_value) return pol.pool;
  }
  for (const auto& pol : policies) {
    if (IsDoorPool(pol.pool) || pol.selector.empty()) continue;
    const bool all = std::all_of(pol.selector.begin(), pol.selector.end(), [&](const auto& kv) {
      auto it = labels.find(kv.first);
      return it != labels.end() && it->second == kv.second;
    });
    if (all) return pol.pool;
  }
  return "";
}

Status DecodeLending(const nlohmann::json& j, std::vector<LendingPolicy>* out) {
  if (!j.is_object()) {
    return Status::Error("pools: must be a mapping of pool (kubernetes, slurm, or a named pool) to its lending policy");
  }
  Status problems;  // every pool's problems, one reason each
  auto add = [&problems](const Status& s) {
    for (const auto& r : s.reasons()) problems.ok() ? void(problems = Status::Error(r)) : void(problems.AddReason(r));
  };
  std::map<std::string, std::string> owner_of;  // queue -> named pool
  for (const auto& [name, v] : j.items()) {
    LendingPolicy p;
    p.pool = name;
    const std::string f = "pools." + name.substr(0, 64);
    if (!IsDoorPool(name) && (!IsValidLabelValue(name) || name == "shared")) {
      add(Status::Error(f + ": a named pool's name must be a label value other than shared (1-63 of [A-Za-z0-9._-])"));
      continue;
    }
    const Status policy = DecodePolicy(v, f, &p);
    add(policy);
    if (!IsDoorPool(name) && p.queues.empty() && (!v.is_object() || !v.contains("queues"))) {
      add(Status::Error(f + ".queues: a named pool needs its owner queues (e.g. queues: [inference])"));
    }
    for (const auto& q : p.queues) {
      if (auto [it, fresh] = owner_of.emplace(q, name); !fresh) {
        add(Status::Error(f + ".queues: queue " + q + " already owns pool " + it->second + " (a queue owns one pool)"));
      }
    }
    if (policy.ok()) out->push_back(std::move(p));
  }
  return problems;
}

const PoolLending::Loan* PoolLending::Find(const std::string& node) const {
  auto it = loans_.find(node);
  return it == loans_.end() ? nullptr : &it->second;
}

int64_t PoolLending::NextDue(const std::vector<NodeFacts>& facts, int64_t now,
                             const std::vector<LendingPolicy>& policies) const {
  int64_t due = INT64_MAX;
  for (const auto& f : facts) {
    const LendingPolicy* pol = PolicyOf(policies, f.pool);
    if (pol == nullptr) continue;
    int64_t since = 0;
    if (auto l = loans_.find(f.name); l != loans_.end()) {
      if (l->second.reclaim_since_s == 0 && l->second.until_s > now) due = std::min(due, l->second.until_s);
      if (l->second.reclaim_since_s > 0 || l->second.idle_since_s == 0) continue;
      since = l->second.idle_since_s;
    } else if (auto i = idle_since_.find(f.name); i != idle_since_.end()) {
      since = i->second;
    } else {
      continue;
    }
    if (since + pol->idle_s > now) due = std::min(due, since + pol->idle_s);
  }
  return due;
}

Node LentView(const PoolLending::Loan& loan, Node n) {
  if (IsDoorPool(loan.pool)) {
    const Pool owner = DoorPoolOf(loan.pool);
    if (n.pool != owner || !n.named_pool.empty()) return n;
    n.pool = PoolOwnedBy(BorrowerDoor(owner));
    n.lent_by = owner;
  } else {
    if (n.named_pool != loan.pool) return n;
    n.named_pool_lent = true;
  }
  n.lent_preemptible_only = loan.preemptible_only;
  if (loan.reclaim_since_s > 0 && n.Schedulable()) n.health = NodeHealth::kDraining;
  return n;
}

void PoolLending::RecordEvent(Event e) {
  if (events_.size() >= kMaxEvents) events_.erase(events_.begin());
  events_.push_back(std::move(e));
}

std::vector<PoolLending::Event> PoolLending::TakeEvents() {
  std::vector<PoolLending::Event> out;
  out.swap(events_);
  return out;
}

void PoolLending::Clear() {
  loans_.clear();
  idle_since_.clear();
}

std::vector<PoolLending::Change> PoolLending::Step(const std::vector<NodeFacts>& facts, Demand demand, int64_t now,
                                                   const std::vector<LendingPolicy>& policies) {
  std::vector<const NodeFacts*> nodes;
  nodes.reserve(facts.size());
  for (const auto& f : facts) nodes.push_back(&f);
  std::sort(nodes.begin(), nodes.end(), [](const NodeFacts* a, const NodeFacts* b) { return a->name < b->name; });
  // What each side can already use counts against its demand: the owner's free GPUs on its
  // unlent nodes (when its waiting work can use only certain nodes, e.g. a job pinned to a lent
  // node, only those it may use: owner_usable) and on nodes coming back; the borrowers' free GPUs
  // on nodes lent to them.
  auto& owner_gpus = demand.owner_gpus;
  auto& borrower_gpus = demand.borrower_gpus;
  std::map<std::string, int32_t> unlent;  // by pool
  for (const NodeFacts* f : nodes) {
    const int64_t free = std::max<int64_t>(0, f->gpus - f->used_gpus);
    auto l = loans_.find(f->name);
    if (l == loans_.end()) {
      if (f->in_service) {
        if (!demand.owner_only.count(f->pool) || demand.owner_usable.count(f->name)) owner_gpus[f->pool] -= free;
        ++unlent[f->pool];
      }
    } else if (l->second.reclaim_since_s > 0) {
      owner_gpus[f->pool] -= f->gpus;
    } else if (f->in_service) {
      borrower_gpus[f->pool] -= free;
    }
  }
  std::vector<Change> out;
  std::map<std::string, const NodeFacts*> by_name;
  for (const NodeFacts* f : nodes) by_name.emplace(f->name, f);
  auto reclaim = [&](const std::string& node, Loan& l, const NodeFacts& n, std::string why) {
    l.reclaim_since_s = now;
    owner_gpus[l.pool] -= n.gpus;
    out.push_back({node, l.pool, Change::Kind::kReclaiming, 0, std::move(why)});
  };
  // Loans the owner takes back whatever its demand: the pool stopped lending, the node is out of
  // service. The others: idle clocks, and idle loans nobody needs go back.
  std::vector<std::pair<int64_t, std::string>> candidates;  // (work lost, node): reclaimable on demand
  auto wanted = [&](const std::string& node) { return demand.owner_wanted.count(node) > 0; };
  for (auto it = loans_.begin(); it != loans_.end();) {
    Loan& l = it->second;
    auto f = by_name.find(it->first);
    if (f == by_name.end() || f->second->pool != l.pool) {  // the node left (or its pool changed): nothing to give back
      out.push_back({it->first, l.pool, Change::Kind::kReturned, -1, "the node is no longer in a lending pool"});
      it = loans_.erase(it);
      continue;
    }
    const NodeFacts& n = *f->second;
    const LendingPolicy* pol = PolicyOf(policies, l.pool);
    if (l.reclaim_since_s == 0) {
      if (pol == nullptr || !pol->lend) {
        reclaim(it->first, l, n, "the pool no longer lends");
      } else if (l.until_s > 0 && now >= l.until_s) {
        reclaim(it->first, l, n, "its loan term of " + std::to_string(l.until_s - l.since_s) + " s ended");
      } else if (!n.in_service) {
        reclaim(it->first, l, n, "the node is out of service (drained, unhealthy or not reported by both doors)");
      } else if (n.borrower_gpus > 0) {
        l.idle_since_s = 0;
        candidates.push_back({n.at_risk_gpu_s, it->first});
      } else if (l.idle_since_s == 0) {
        l.idle_since_s = now;
        candidates.push_back({-1, it->first});
      } else if (now - l.idle_since_s >= pol->idle_s &&
                 borrower_gpus[l.pool] + std::max<int64_t>(0, n.gpus - n.used_gpus) <= 0) {
        // Unused that long, and the borrowers' demand is covered without it.
        out.push_back({it->first, l.pool, Change::Kind::kReturned, -1,
                       "no borrower used it for " + std::to_string(now - l.idle_since_s) + " s"});
        idle_since_[it->first] = now;
        it = loans_.erase(it);
        continue;
      } else {
        candidates.push_back({-1, it->first});
      }
    }
    ++it;
  }
  // The owner's demand takes back loans: those its waiting work can use first (only those when it
  // can use no other), then the least borrower work lost (an unused loan first).
  std::sort(candidates.begin(), candidates.end(), [&](const auto& a, const auto& b) {
    return std::make_tuple(!wanted(a.second), a.first, a.second) < std::make_tuple(!wanted(b.second), b.first, b.second);
  });
  for (const auto& [lost, node] : candidates) {
    Loan& l = loans_.at(node);
    if (owner_gpus[l.pool] <= 0 || (demand.owner_only.count(l.pool) && !wanted(node))) continue;
    reclaim(node, l, *by_name.at(node),
            "the owner (" + OwnerWords(l.pool) + ") has " + std::to_string(owner_gpus[l.pool]) +
                " pending GPUs that found no room");
  }
  // Reclaimed loans whose borrowers let go: the owner's again.
  for (auto it = loans_.begin(); it != loans_.end();) {
    if (it->second.reclaim_since_s > 0 && by_name.at(it->first)->borrower_gpus == 0) {
      out.push_back({it->first, it->second.pool, Change::Kind::kReturned, now - it->second.reclaim_since_s,
                     "its borrowers are gone"});
      idle_since_[it->first] = now;  // hysteresis: idle as long again before it is lent again
      it = loans_.erase(it);
      continue;
    }
    ++it;
  }
  // Idle owner nodes: lend. An owner node the borrowers' work already holds is a loan whoever
  // made it (an engine restart forgets its loans; the pods and drains stay): adopted, so it is
  // reclaimed and returned like any other, never left to both sides.
  for (const NodeFacts* f : nodes) {
    if (loans_.count(f->name)) continue;
    const LendingPolicy* pol = PolicyOf(policies, f->pool);
    if (pol != nullptr && f->borrower_gpus > 0) {
      loans_[f->name] = Loan{f->pool, now, 0, 0, pol->preemptible_only, pol->grace_cap_s, pol->loan_s > 0 ? now + pol->loan_s : 0};
      idle_since_.erase(f->name);
      if (f->in_service) borrower_gpus[f->pool] -= std::max<int64_t>(0, f->gpus - f->used_gpus);
      out.push_back({f->name, f->pool, Change::Kind::kLent, 0,
                     "adopted: " + BorrowerWords(f->pool) + "'s work holds " + std::to_string(f->borrower_gpus) +
                         " GPUs there (a loan from before an engine restart)"});
      continue;
    }
    if (pol == nullptr || !pol->lend || !f->in_service || f->used_gpus > 0) {
      idle_since_.erase(f->name);
      continue;
    }
    const int64_t since = idle_since_.emplace(f->name, now).first->second;
    if (now - since < pol->idle_s || owner_gpus[f->pool] > -f->gpus || borrower_gpus[f->pool] <= 0 ||
        unlent[f->pool] <= pol->keep_nodes) {
      continue;
    }
    // The owner keeps this node's GPUs free for itself (counted above): lending it leaves the
    // owner with less free room, so lend only while the owner's own demand stays covered.
    owner_gpus[f->pool] += f->gpus;
    borrower_gpus[f->pool] -= f->gpus;
    --unlent[f->pool];
    idle_since_.erase(f->name);
    loans_[f->name] = Loan{f->pool, now, 0, 0, pol->preemptible_only, pol->grace_cap_s, pol->loan_s > 0 ? now + pol->loan_s : 0};
    out.push_back({f->name, f->pool, Change::Kind::kLent, 0,
                   "idle " + std::to_string(now - since) + " s while " + BorrowerWords(f->pool) +
                       " has pending work it may borrow for"});
  }
  std::sort(out.begin(), out.end(), [](const Change& a, const Change& b) { return a.node < b.node; });
  return out;
}

std::string OwnerWords(const std::string& pool) {
  return IsDoorPool(pool) ? std::string(FrontDoorName(OwnerDoor(DoorPoolOf(pool)))) : "pool " + pool + "'s queues";
}

std::string BorrowerLabel(const std::string& pool) {
  return IsDoorPool(pool) ? std::string(FrontDoorName(BorrowerDoor(DoorPoolOf(pool)))) : "others";
}

std::string BorrowerWords(const std::string& pool) {
  return IsDoorPool(pool) ? std::string(FrontDoorName(BorrowerDoor(DoorPoolOf(pool)))) : "other queues than pool " + pool + "'s";
}

}  // namespace tidal
