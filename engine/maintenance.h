// Node closes: the times nodes stop taking work, from maintenance windows in the engine config
// and from drains (`tidalctl drain NODE... --by TIME [--decommission]`). One rule for all of them
// (engine/engine_health.cc applies it):
//   before `by`   the node takes only work expected to end by then (its runtime limit, or its
//                 class's default runtime: the backfill rule), so nothing is placed there only to
//                 be evicted; work already there that ends in time finishes;
//   near `by`     the rest is disrupted whole, with the notice it asks for, so it is gone by `by`;
//   [by, until)   the node takes no work (draining);
//   after until   a window's nodes take work again (a drain lasts until cancelled; a decommission
//                 also ends when the node leaves for good).
// Config (engine config `maintenance`; times RFC 3339 or unix seconds; `end` or `duration`):
//   maintenance:
//     windows:
//       - name: rack-7-firmware
//         nodes: [gpu-070, gpu-071]                  # and/or
//         selector: {topology.tidal.dev/leaf: leaf-7}  # every label must match
//         start: 2026-12-05T02:00:00Z
//         duration: 4h                               # or end: 2026-12-05T06:00:00Z
// Threading: pure functions and plain values.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/api/status.h"
#include "engine/disruption_book.h"

namespace tidal {

struct MaintenanceWindow {
  std::string name;
  std::set<std::string> nodes;                  // by name
  std::map<std::string, std::string> selector;  // node labels; every one must match
  int64_t start_s = 0;
  int64_t end_s = 0;  // > start_s
  // Whether the window covers this node (named, or every selector label matches).
  bool Covers(const std::string& node, const std::map<std::string, std::string>& labels) const;
};

// A Kubernetes node's own drain (engine_closes.cc, AnnotatedDrainLocked): RFC 3339 or unix s.
inline constexpr const char* kAnnotationDrainBy = "tidal.dev/drain-by";
inline constexpr const char* kAnnotationDecommission = "tidal.dev/decommission";  // "true": for good
// A perishable window on a Kubernetes node: the node is Tidal's until then (capacity an owner lends
// until a time, the hours before an outside reservation); from then on it takes no work while the
// annotation stays (cause window-end). RFC 3339 or unix s.
inline constexpr const char* kAnnotationAvailableUntil = "tidal.dev/available-until";

// Time a closing node's workload needs beyond its notice to be gone by the close (termination
// grace, the front door's poll): it is disrupted that much before the close.
inline constexpr int64_t kDrainSlackS = 30;

// When a node closes: from `by` to `until` (INT64_MAX: until cancelled) it takes no work.
struct NodeClose {
  int64_t by = 0;
  int64_t until = INT64_MAX;
  DisruptionCause cause = DisruptionCause::kDrain;  // kDrain, kDecommission, kMaintenance or kWindowEnd
  std::string what;                                 // "maintenance window rack-7-firmware", "drain"
  // From the node's tidal.dev/drain-by or tidal.dev/available-until annotation (not the Drain RPC): it goes with the
  // annotation, is not written to the state file (the node brings it back), and the RPC cannot
  // cancel or change it.
  bool from_node = false;
  bool Closed(int64_t now) const { return by <= now && now < until; }
};

// The close that matters at `now` of several (a drain and windows): a current one first, else the
// earliest upcoming; closes already over are ignored. False when none is current or upcoming.
bool EarliestClose(const std::vector<NodeClose>& closes, int64_t now, NodeClose* out);

// Reads `maintenance` (JSON from the config document); errors name the field
// ("maintenance.windows[1].end: must be after start").
Status DecodeMaintenance(const nlohmann::json& j, std::vector<MaintenanceWindow>* out);

}  // namespace tidal
