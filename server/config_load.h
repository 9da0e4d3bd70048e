// The engine config as tidal-engine runs it: everything ParseEngineConfig checks, and the rollout
// dry-run gate's failOn checks (the simulator's grammar, sim::ParseFailOn), which the engine itself
// cannot check without the simulator. tidal-engine (at start), its ConfigWatcher (each reload) and
// tidalctl config validate / config diff all load through here, so a config one of them accepts is
// one the others accept. Before, a failOn typo passed at start and on reload and broke only at the
// next reload, when the running config's gate ran: every later config was then refused.
// Errors read "file:line: field: reason", like ParseEngineConfig's.
// Threading: pure functions.
#pragma once

#include <string>
#include <vector>

#include "core/api/status.h"
#include "engine/engine.h"

namespace tidal {

StatusOr<EngineConfig> ParseServedConfig(const std::string& text, const std::string& file);
StatusOr<EngineConfig> LoadServedConfig(const std::string& path);

// The fields tidal-engine reads at start only (reservations.refreshInBackground, frontDoors) that
// differ between the config it started with and `next`: a reload applies everything else, these
// wait for a restart (ConfigWatcher reports them: log, decision log, /config).
std::vector<std::string> StartOnlyChanges(const EngineConfig& started, const EngineConfig& next);

}  // namespace tidal
