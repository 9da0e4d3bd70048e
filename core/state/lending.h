// Pools that lend and reclaim nodes between the front doors. A node's owner pool is its
// tidal.dev/pool label (`kubernetes` or `slurm`; a node both doors report and no label names is
// `shared` and never lent: both sides use it already). A pool with a lending policy lends its idle
// nodes to the other door while that door has pending work it may lend to and the owner has none,
// and reclaims them when the owner's pending work returns:
//   idle      an owner node with nothing of anyone's on it for `idleSeconds` (hysteresis: a node
//             just reclaimed or just used waits that long again), while more than `keep` of the
//             pool's nodes stay unlent;
//   lent      the node is the borrower door's alone (never both sides at once): only its
//             preemptible work (`to: preemptible`, the default) or any (`to: any`);
//   reclaim   the owner has pending work that found no room: enough lent nodes (its GPUs' worth;
//             those its waiting work can use first, only those when it can use no other; then
//             unused ones first, then those whose borrowers lose the least work) take no new work
//             (neither side's); the borrowers' workloads there are disrupted
//             (cause `reclaim`) with at most `graceCapSeconds` of notice;
//   returned  once no borrower pod or job holds GPUs there, the node is the owner's again (the
//             time from reclaim to return is tidal_pool_reclaim_seconds).
// An owner node the borrower's work holds without a loan (the engine restarted: loans live in its
// memory; the pods and tidal-slurm's drains stay) is adopted as a loan at once, so it is reclaimed
// and returned like any other. A lent node a drain, maintenance window or health verdict takes out
// of service is reclaimed as well (returned when the borrowers are gone); an admin's drain stays: lending never undoes it.
// Config (engine config `pools`):
//   pools:
//     slurm: {lend: true, keep: 2, to: preemptible, idleSeconds: 60, graceCapSeconds: 120}
// Used by tidal-engine (engine/engine_lending.cc) and by the simulator's lending driver
// (sim/lending.h): the same rules in both.
// Threading: PoolLending is plain data with one owner: the Engine, under Engine::mu_ (engine.h), or
// one simulator run.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/api/node.h"
#include "core/api/status.h"
#include "core/api/workload.h"

namespace tidal {

// The taint tidal-scheduler keeps on a Kubernetes node lent to Slurm (value slurm, NoSchedule).
inline constexpr const char* kLentTaintKey = "tidal.dev/lent-to";

struct LendingPolicy {
  Pool owner = Pool::kSlurm;  // kKubernetes or kSlurm
  bool lend = true;
  int32_t keep_nodes = 0;          // never lent below this many unlent nodes of the pool
  bool preemptible_only = true;    // to: preemptible (true) | any (false)
  int64_t idle_s = 60;             // idle this long before it is lent (hysteresis)
  int64_t grace_cap_s = 120;       // the most notice a borrower gets on reclaim
};

// pools: {kubernetes: {...}, slurm: {...}}; errors name the field ("pools.slurm.keep: ...").
Status DecodeLending(const nlohmann::json& j, std::vector<LendingPolicy>* out);

// The door that owns a pool's nodes, and the door that borrows them; the pool a door owns.
FrontDoor OwnerDoor(Pool p);
FrontDoor BorrowerDoor(Pool p);
inline Pool PoolOwnedBy(FrontDoor d) { return d == FrontDoor::kSlurm ? Pool::kSlurm : Pool::kKubernetes; }
// Per-door arrays below are indexed by the door (FrontDoor's value).
inline size_t DoorIndex(FrontDoor d) { return static_cast<size_t>(d); }
// The policy of pool `p` (nullptr: it does not lend).
const LendingPolicy* PolicyOf(const std::vector<LendingPolicy>& policies, Pool p);

class PoolLending {
 public:
  // What the engine knows of one node of a lending pool at a poll.
  struct NodeFacts {
    std::string name;
    Pool owner = Pool::kSlurm;
    bool in_service = true;      // ready, schedulable, reported by both doors, no close pending
    int64_t gpus = 0;
    int64_t used_gpus = 0;       // by anyone (allocated)
    int64_t borrower_gpus = 0;   // by the borrower door's pods or jobs
    int64_t at_risk_gpu_s = 0;   // the borrowers' work a reclaim would lose (since checkpoint)
  };
  // Pending GPUs per door that found no room: the owner's reclaim, the borrower's loans.
  struct Demand {
    int64_t owner_gpus[2] = {0, 0};     // by owner door (FrontDoor index)
    int64_t borrower_gpus[2] = {0, 0};  // by borrower door, work the policy lends to
    // Which loans the owner's waiting work could use: any (some of it may go anywhere), else only
    // those in owner_wanted (a job pinned to its nodes, -w, or with a node selector). Reclaims
    // take wanted loans first, and only wanted ones when the owner's work cannot use any other.
    bool owner_any[2] = {true, true};
    std::set<std::string> owner_wanted;
  };
  struct Change {
    std::string node;
    Pool owner = Pool::kSlurm;
    enum class Kind { kLent, kReclaiming, kReturned } kind = Kind::kLent;
    int64_t reclaim_s = 0;  // kReturned after a reclaim: how long it took (-1: never reclaimed)
    std::string why;
  };
  struct Loan {
    Pool owner = Pool::kSlurm;
    int64_t since_s = 0;
    int64_t reclaim_since_s = 0;  // 0 = not being reclaimed
    int64_t idle_since_s = 0;     // no borrower there since (0 = in use)
    bool preemptible_only = true;
    int64_t grace_cap_s = 0;
  };

  // One step at `now`: lends, starts reclaims and returns nodes; the changes, in node order.
  // `facts` holds every node of a pool with a policy (any order).
  std::vector<Change> Step(const std::vector<NodeFacts>& facts, Demand demand, int64_t now,
                           const std::vector<LendingPolicy>& policies);
  const Loan* Find(const std::string& node) const;
  // The earliest time after `now` at which Step could change something with no new facts: an
  // idle clock (an unlent idle node, or an unused loan) reaching its pool's idleSeconds.
  // INT64_MAX if none.
  int64_t NextDue(const std::vector<NodeFacts>& facts, int64_t now, const std::vector<LendingPolicy>& policies) const;
  const std::map<std::string, Loan>& loans() const { return loans_; }
  // Node events of the changes (reason TidalNodeLent, TidalNodeReclaimed, TidalNodeReturned),
  // kept until taken, at most kMaxEvents (the oldest dropped).
  struct Event {
    std::string node, reason, message;
  };
  static constexpr size_t kMaxEvents = 1000;
  void RecordEvent(Event e);
  std::vector<Event> TakeEvents();
  // Drops every loan and idle clock (a config reload that removed lending; nodes go back).
  void Clear();

 private:
  std::map<std::string, Loan> loans_;
  std::map<std::string, int64_t> idle_since_;  // unlent owner nodes: idle since
  std::vector<Event> events_;
};

// How node `n` looks while `loan` lends it: the borrower door's pool, lent_by its owner, only
// preemptible work by policy, and no new work (kDraining) while it is reclaimed. A node of
// another pool than the loan's owner is returned unchanged.
Node LentView(const PoolLending::Loan& loan, Node n);

}  // namespace tidal
