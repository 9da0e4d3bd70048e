// Snapshots of a live tidal-engine (format "tidal.dev/snapshot", version 1; written by
// Engine::Snapshot behind GET /snapshot and `tidalctl snapshot`; reference: docs/simulator.md,
// "Snapshots"): the reader the policy dry-run (sim/dryrun.h) starts from, and the anonymiser.
//
// Reading checks everything the dry-run relies on and names the field of each problem
// ("snapshot.running[3].members: must be >= 1"); a file that is not JSON (a truncated download)
// gets the parser's position; a newer version than kSnapshotVersion is refused ("snapshot:
// version 2 is newer than this tidalctl reads (1)"). Every problem is one reason of the status.
//
// Anonymising (for sharing a snapshot outside the cluster): node names, workload ids, reservation
// ids and topology label values become stable hashes ("n-3f2a9c81d0e4": FNV-1a, the same name
// always the same hash, so placements and topology stay consistent); with `queues`, queue names
// too, in the workloads, the usage and every string of the config document equal to one. Kept:
// label keys, capacities, GPU models, times, pool names. The hashes are not secret: a reader who
// can guess a name can check it.
// Threading: plain functions over plain values.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/api/node.h"
#include "core/api/status.h"
#include "core/api/topology_levels.h"
#include "core/api/workload.h"

namespace tidal::sim {

inline constexpr const char* kSnapshotFormat = "tidal.dev/snapshot";
inline constexpr int kSnapshotVersion = 1;

struct SnapshotWorkload {
  Workload w;          // id (a gang key, or "pod:<ns>/<name>"), queue, door, shape, flags, submit, runtime
  bool tidal = true;   // scheduled by Tidal (running only: other schedulers' pods use capacity too)
  int64_t start_s = -1;                                   // running: its earliest member's start
  std::vector<std::pair<std::string, int32_t>> placement;  // running: node -> members
};

struct SnapshotReservation {
  std::string id;  // the pending gang's key
  int64_t start_s = 0;
  std::vector<std::pair<std::string, int32_t>> placement;
  bool hold = false;  // a preemption hold (capacity its victims free), not a backfill reservation
};

struct Snapshot {
  int version = kSnapshotVersion;
  int64_t taken_at = 0;  // engine clock, unix seconds
  std::string epoch;
  TopologyLevels levels;
  std::vector<Node> nodes;
  std::vector<SnapshotWorkload> running, pending;
  nlohmann::json usage;  // the ledger's {time, usage} (QuotaLedger::LoadState)
  std::vector<SnapshotReservation> reservations;
  std::string config_version;  // "builtin" when the engine runs without --config
  nlohmann::json config;       // the config document the engine runs (null: built-in defaults)
};

StatusOr<Snapshot> ParseSnapshot(const std::string& text, const std::string& source);
// The same on a parsed document (e.g. Engine::Snapshot's, in the engine's process: no text between).
StatusOr<Snapshot> ReadSnapshot(const nlohmann::json& doc, const std::string& source);
StatusOr<Snapshot> LoadSnapshot(const std::string& path);

// Rewrites `doc` (a snapshot document) in place; errors only for a document that is not a snapshot.
Status AnonymiseSnapshot(nlohmann::json& doc, bool queues);
// The stable hash used for names: prefix + 12 hex digits of FNV-1a 64.
std::string AnonymousName(const std::string& prefix, const std::string& name);

}  // namespace tidal::sim
