// LendingDriver: the two doors' pools lending and reclaiming nodes in a replay, by the engine's own
// rules (core/state/lending.h: PoolLending::Step, LentView), and what it costs and gains.
//
// A fabric with pools has every node owned by the Kubernetes or the Slurm pool (sim/fabric.h,
// SplitPools); jobs carry their front door (the trace they came from). After the policy's passes
// at each event the driver gathers the same facts the engine gathers at a door's poll (node
// usage, the borrowers' work on lent nodes and what a reclaim would lose, each door's pending
// GPUs that may use the other pool) and steps PoolLending; a lent node becomes the borrower's
// (ClusterState::SetPool), a reclaimed one takes no new work, and its borrowers still there when
// the pool's grace cap runs out are evicted (restarting from scratch: the traces carry no
// checkpoints); borrowers whose declared runtime ends within the cap finish first
// (drain-and-wait), as in the engine. With no lending policy the driver only measures: the
// static partition, for the comparison.
//
// Differences from the engine, on purpose: the pending demand is every pending job of a door (the
// replay has no quota holds or plans), and a borrower gets the whole grace cap of notice (the
// engine's notice may end earlier when the pod goes).
//
// Measured (Metrics(), definitions in docs/simulator.md, "Two pools"): per pool its GPUs, idle
// GPU-hours, GPU-hours its nodes gave the other door; lends, reclaims and reclaim latency (reclaim
// start to the node's return); GPU-hours lost by reclaim; and "windows": stretches during which a
// pool had whole nodes its owner did not use while the other door had work waiting that could use
// them (offered = min(those GPUs, the other door's pending GPUs + what it already runs there)),
// with the share of offered GPU-time the other door actually filled, over all windows and over
// those of at least 15 minutes.
//
// Threading: single-threaded, owned by one Simulator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/state/lending.h"

namespace tidal::sim {

class Simulator;

class LendingDriver {
 public:
  // Windows at least this long count as long (the 15 minutes).
  static constexpr int64_t kLongWindowS = 900;

  // `policies` empty: the static partition (nothing is lent; only measured).
  explicit LendingDriver(std::vector<LendingPolicy> policies) : policies_(std::move(policies)) {}

  // At Simulator::Start: each node's owner pool and health as the fabric has them.
  void Prepare(const Simulator& sim);
  // After the policy's passes at sim.now(): evicts borrowers whose notice ran out, steps the
  // lending rules and applies their changes. True when something changed (the policy runs again).
  bool Step(Simulator& sim);
  // The next time (> now) Step has something to do with no other event: an idle clock or a
  // reclaim's notice running out. INT64_MAX if none.
  int64_t NextWakeup(int64_t now) const;
  // Time-weighted figures over [from, to) (called by Simulator::Account before time moves).
  void Account(const Simulator& sim, int64_t from, int64_t to);
  // End of the replay at `now`: closes the open windows.
  void Finish(int64_t now);

  bool lends() const { return !policies_.empty(); }
  // Whether node pool `pool` may ever be lent to `w` (a door pool whose policy lends to the other
  // door, to any work or `w` being preemptible). Before or during the replay alike.
  bool MayLendTo(Pool pool, const Workload& w) const;
  int64_t lent_gpus() const { return lent_gpus_; }
  nlohmann::json Metrics() const;

 private:
  struct Window {
    int64_t start = -1;  // -1 = none open
    double offered = 0, filled = 0;
  };
  struct PoolFigures {
    int64_t gpus = 0;
    double idle_gpu_s = 0;      // free GPUs on its nodes (lent or not)
    double lent_gpu_s = 0;      // GPUs of its nodes while lent
    double filled_gpu_s = 0;    // the other door's GPUs running on its lent nodes
    double offered_gpu_s = 0, window_filled_gpu_s = 0;            // all windows
    double long_offered_gpu_s = 0, long_filled_gpu_s = 0;         // windows >= kLongWindowS
    int64_t windows = 0, long_windows = 0;
    int64_t lends = 0, reclaims = 0, evictions = 0;
    double lost_gpu_s = 0;      // borrowers' work lost to reclaim
    std::vector<double> reclaim_s;  // reclaim start to return
    Window open;
  };
  void Apply(Simulator& sim, const PoolLending::Change& c);
  void EvictDue(Simulator& sim, bool* changed);
  void CloseWindow(PoolFigures& p, int64_t end);
  std::vector<PoolLending::NodeFacts> Facts(const Simulator& sim) const;

  std::vector<LendingPolicy> policies_;
  PoolLending lending_;
  std::vector<Pool> owner_;          // by node id: the owner pool
  std::vector<NodeHealth> health_;   // by node id: its health in the fabric
  std::vector<PoolLending::NodeFacts> last_facts_;
  int64_t lent_gpus_ = 0;
  PoolFigures pools_[2];  // by owner door (FrontDoor's value)
};

}  // namespace tidal::sim
