// Safe rollout of a new engine config: after a reload activates it, the config is watched for a
// window; a breach rolls it back to the previous version (server/config_watcher.cc does the
// rollback; the engine counts the signals, engine/engine_rollout.cc).
//
//   rollout:
//     watchSeconds: 300        # watch each new config this long (0, the default: no watch)
//     maxNewlyRejected: 0      # workloads the new config rejects (can never run) that the previous would not
//     maxErrors: 0             # scheduling decisions that ended in an error
//     maxPreemptions: 20       # workloads preempted while watched (absent: not watched)
//     maxNewlyInvalidSpecs: 0  # pending pods whose Tidal labels the new topology levels cannot read
//     dryRunGate:              # before activating: the policy dry-run on the engine's own snapshot
//       horizonSeconds: 3600   #   replayed this far under both configs (sim/dryrun.h)
//       failOn: preempt-nonpreemptible,reserved-later=10m   # tidalctl sim --fail-on's checks
//
// The policy of the config that RUNS watches the next one (a change cannot switch off its own
// watch). A workload counts as newly rejected when its last decision in the window is Rejected
// and the previous config would not have rejected it: a queue the previous config had as a leaf
// and the new one lacks (the quota plugin's refusal), or a placement refusal (no domain or node
// can ever hold it) after the topology levels or the profile changed. Workloads rejected already
// when the window opened do not count. A pending pod whose Tidal labels cannot be read any more
// (tidal.dev/topology-required naming a level the new topology lacks) counts as newly invalid when
// the topology or profile changed and it was readable when the window opened.
// Threading: plain values and pure functions; owned by whoever holds them (ConfigWatcher under
// its mutex, the Engine under mu_).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/api/status.h"

namespace tidal {

struct RolloutPolicy {
  int64_t watch_s = 0;
  int64_t max_newly_rejected = 0;
  int64_t max_errors = 0;
  int64_t max_preemptions = -1;  // -1: not watched
  int64_t max_newly_invalid_specs = 0;
  int64_t gate_horizon_s = 0;     // dryRunGate.horizonSeconds (0: no gate; server/dry_run_gate.h)
  std::string gate_fail_on = "preempt-nonpreemptible,rejects-work";  // dryRunGate.failOn
  bool operator==(const RolloutPolicy&) const = default;
};

// rollout: {...}; errors name the field ("rollout.watchSeconds: must be an integer in [0, 86400]").
Status DecodeRollout(const nlohmann::json& j, const std::string& field, RolloutPolicy* out);

// What the engine counts for a watch, cumulative since it started.
struct RolloutSignals {
  int64_t errors = 0;       // decisions that ended in an error
  int64_t preemptions = 0;  // workloads preempted (every reason)
  struct Rejected {
    std::string queue, plugin;  // its queue; the plugin that refused it ("placement": no room can ever hold it)
    bool operator==(const Rejected&) const = default;
  };
  std::map<std::string, Rejected> rejected;  // pending workloads whose last decision was Rejected, by key
  std::set<std::string> invalid_specs;       // pending Tidal pods whose scheduling spec cannot be read (ns/name)
};

// One activation being watched: opened when a new config is activated.
struct RolloutWatch {
  int64_t since_s = 0, until_s = 0;
  RolloutPolicy policy;            // of the config that ran before
  RolloutSignals at_start;         // the engine's signals when it opened
  std::set<std::string> previous_leaves;  // the previous config's leaf queues
  bool placement_changed = false;  // topology levels or profile differ from the previous config
  // Why the watch breached (empty: it holds), from the engine's signals now.
  std::string Breach(const RolloutSignals& now) const;
  // Workloads the new config rejects that the previous would not (the breach's evidence).
  std::set<std::string> NewlyRejected(const RolloutSignals& now) const;
};

}  // namespace tidal
