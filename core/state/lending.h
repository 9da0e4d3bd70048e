// Pools that lend and reclaim nodes. A node's owner pool is its tidal.dev/pool label: a front
// door's pool (`kubernetes` or `slurm`; a node both doors report and no label names is `shared`
// and never lent: both sides use it already) or a named pool of the config (`inference`, a team's
// pool: `pools.inference.queues` are its owners; its nodes also by `pools.inference.selector`).
// The owner's work is the door's (a door pool) or the owner queues' (a named pool, either door);
// every other workload that may use the node is a borrower. A named pool's unlent nodes take only
// its owners' work. A pool with a lending policy lends its idle nodes to borrowers while they
// have pending work it may lend to and the owner has none, and reclaims them when the owner's
// pending work returns:
//   idle      an owner node with nothing of anyone's on it for `idleSeconds` (hysteresis: a node
//             just reclaimed or just used waits that long again), while more than `keep` of the
//             pool's nodes stay unlent;
//   lent      the node is the borrowers' alone (never both sides at once): only their
//             preemptible work (`to: preemptible`, the default) or any (`to: any`);
//   reclaim   the owner has pending work that found no room: enough lent nodes (its GPUs' worth;
//             those its waiting work can use first, only those when it can use no other; then
//             unused ones first, then those whose borrowers lose the least work) take no new work
//             (neither side's); the borrowers' workloads there are disrupted
//             (cause `reclaim`) with at most `graceCapSeconds` of notice;
//   term      with `loanSeconds`, a loan also ends that long after it was made: a window with a
//             known end (the engine's closes: its borrowers end in time, or checkpoint and get
//             their notice as late as it allows), reclaimed at its end;
//   returned  once no borrower pod or job holds GPUs there, the node is the owner's again (the
//             time from reclaim to return is tidal_pool_reclaim_seconds).
// An owner node the borrower's work holds without a loan (the engine restarted: loans live in its
// memory; the pods and tidal-slurm's drains stay) is adopted as a loan at once, so it is reclaimed
// and returned like any other. A lent node a drain, maintenance window or health verdict takes out
// of service is reclaimed as well (returned when the borrowers are gone); an admin's drain stays: lending never undoes it.
// Config (engine config `pools`):
//   pools:
//     slurm: {lend: true, keep: 2, to: preemptible, idleSeconds: 60, graceCapSeconds: 120}
//     inference: {queues: [inference], selector: {gpu.tidal.dev/class: serving}, lend: true}
// Used by tidal-engine (engine/engine_lending.cc) and by the simulator's lending driver
// (sim/lending.h, the door pools): the same rules in both.
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

// The doors' pools by name; any other configured name is a named pool.
inline constexpr const char* kDoorPoolKubernetes = "kubernetes";
inline constexpr const char* kDoorPoolSlurm = "slurm";
bool IsDoorPool(const std::string& pool);

struct LendingPolicy {
  std::string pool = kDoorPoolSlurm;  // kubernetes, slurm or a named pool
  // A named pool's owner queues (leaf or parent names: their leaves are owners) and the node labels
  // that put a node in it besides tidal.dev/pool=<name> (every one must match; empty: label only).
  std::vector<std::string> queues;
  std::map<std::string, std::string> selector;
  bool lend = true;
  int32_t keep_nodes = 0;          // never lent below this many unlent nodes of the pool
  bool preemptible_only = true;    // to: preemptible (true) | any (false)
  int64_t idle_s = 60;             // idle this long before it is lent (hysteresis)
  int64_t grace_cap_s = 120;       // the most notice a borrower gets on reclaim
  // A loan's term (0: until the owner wants it): a loan ends loan_s after it was made, a window
  // with a known end; its borrowers leave by then (the perishable rule) and it is reclaimed.
  int64_t loan_s = 0;
};

// pools: {kubernetes: {...}, slurm: {...}, NAME: {queues: [...], ...}}; errors name the field
// ("pools.slurm.keep: ..."). A named pool needs queues; a queue owns at most one named pool.
Status DecodeLending(const nlohmann::json& j, std::vector<LendingPolicy>* out);

// The door that owns a door pool's nodes, and the door that borrows them; the pool a door owns.
FrontDoor OwnerDoor(Pool p);
FrontDoor BorrowerDoor(Pool p);
inline Pool PoolOwnedBy(FrontDoor d) { return d == FrontDoor::kSlurm ? Pool::kSlurm : Pool::kKubernetes; }
// The door pool of that name (IsDoorPool(name) must hold).
Pool DoorPoolOf(const std::string& name);
inline size_t DoorIndex(FrontDoor d) { return static_cast<size_t>(d); }
// The policy of pool `pool` (nullptr: it does not lend, or is not configured).
const LendingPolicy* PolicyOf(const std::vector<LendingPolicy>& policies, const std::string& pool);
inline const LendingPolicy* PolicyOf(const std::vector<LendingPolicy>& policies, Pool p) {
  return PolicyOf(policies, std::string(PoolName(p)));
}
// Who owns and who borrows pool `pool`, for people: "slurm", "kubernetes"; "pool inference's
// queues", "other queues than pool inference's".
std::string OwnerWords(const std::string& pool);
std::string BorrowerWords(const std::string& pool);
// The borrowers as a metric label value: the borrower door, or "others" for a named pool.
std::string BorrowerLabel(const std::string& pool);
// The named pool whose owner queues include leaf queue `leaf` or one of `ancestors` ("" none).
std::string HomePoolOf(const std::vector<LendingPolicy>& policies, const std::string& leaf,
                       const std::vector<std::string>& ancestors);
// The named pool node `n` belongs to by `labels` (its tidal.dev/pool label `label_value`, or a
// pool's selector); "" when none.
std::string NamedPoolOf(const std::vector<LendingPolicy>& policies, const std::string& label_value,
                        const std::map<std::string, std::string>& labels);

class PoolLending {
 public:
  // What the engine knows of one node of a lending pool at a poll.
  struct NodeFacts {
    std::string name;
    std::string pool = kDoorPoolSlurm;  // its owner pool
    bool in_service = true;      // ready, schedulable, reported by both doors, no close pending
    int64_t gpus = 0;
    int64_t used_gpus = 0;       // by anyone (allocated)
    int64_t borrower_gpus = 0;   // by borrowers' pods or jobs (not the owner's)
    int64_t at_risk_gpu_s = 0;   // the borrowers' work a reclaim would lose (since checkpoint)
  };
  // Pending GPUs per pool that found no room: the owner's reclaim, the borrowers' loans.
  struct Demand {
    std::map<std::string, int64_t> owner_gpus;     // by pool: its owner's
    std::map<std::string, int64_t> borrower_gpus;  // by pool: work that may borrow it, as its policy lends
    // Which loans the owner's waiting work could use: any (some of it may go anywhere), else only
    // those in owner_wanted (a job pinned to its nodes, -w, or with a node selector). Reclaims
    // take wanted loans first, and only wanted ones when the owner's work cannot use any other.
    // A pool missing from owner_only may use any.
    std::set<std::string> owner_only;  // pools whose owner's work can use only owner_wanted
    std::set<std::string> owner_wanted;
    // For owner_only pools: the unlent nodes its waiting work may use; only their free GPUs count
    // against its demand (a job pinned to a lent node is not helped by the pool's other free nodes).
    std::set<std::string> owner_usable;
  };
  struct Change {
    std::string node;
    std::string pool;  // the owner pool
    enum class Kind { kLent, kReclaiming, kReturned } kind = Kind::kLent;
    int64_t reclaim_s = 0;  // kReturned after a reclaim: how long it took (-1: never reclaimed)
    std::string why;
  };
  struct Loan {
    std::string pool;  // the owner pool
    int64_t since_s = 0;
    int64_t reclaim_since_s = 0;  // 0 = not being reclaimed
    int64_t idle_since_s = 0;     // no borrower there since (0 = in use)
    bool preemptible_only = true;
    int64_t grace_cap_s = 0;
    int64_t until_s = 0;  // its term ends (0: no term)
  };

  // One step at `now`: lends, starts reclaims and returns nodes; the changes, in node order.
  // `facts` holds every node of a pool with a policy (any order).
  std::vector<Change> Step(const std::vector<NodeFacts>& facts, Demand demand, int64_t now,
                           const std::vector<LendingPolicy>& policies);
  const Loan* Find(const std::string& node) const;
  // The earliest time after `now` at which Step could change something with no new facts: an
  // idle clock (an unlent idle node, or an unused loan) reaching its pool's idleSeconds, or a
  // loan's term ending.
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

// How node `n` looks while `loan` lends it: a door pool's node is in the borrower door's pool,
// lent_by its owner; a named pool's node is named_pool_lent (other queues' work only); only
// preemptible work by policy, and no new work (kDraining) while it is reclaimed. A node of another
// pool than the loan's is returned unchanged.
Node LentView(const PoolLending::Loan& loan, Node n);

}  // namespace tidal
