// The rollout dry-run gate (engine config rollout.dryRunGate; engine/rollout.h): before a reload
// activates a new config, the engine's own live snapshot (Engine::Snapshot) is replayed forward
// under the running config and the new one (sim/dryrun.h: the engine's own Scheduler and plugins,
// not a model of them) and the report is checked with tidalctl sim --fail-on's checks. A breach
// refuses the new config (the running one stays, as for an invalid file).
// Threading: a plain function; ConfigWatcher's polling thread calls it outside the engine's lock
// (the snapshot takes it once).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/api/status.h"
#include "engine/engine.h"

namespace tidal {

struct GateSide {
  const EngineConfig* cfg = nullptr;
  std::string version;
};

// Ok when the gate passes (or `running` has none); else an error naming rollout.dryRunGate with one
// reason per breached check. *summary (optional) gets {horizon_s, breaches, flags} for the log.
Status RunDryRunGate(Engine& engine, const GateSide& running, const GateSide& next, nlohmann::json* summary);

}  // namespace tidal
