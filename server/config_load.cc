// The engine config as tidal-engine runs it (see config_load.h). Threading: pure functions.
#include "server/config_load.h"

#include "core/io/document.h"
#include "sim/dryrun.h"

namespace tidal {

StatusOr<EngineConfig> ParseServedConfig(const std::string& text, const std::string& file) {
  auto cfg = ParseEngineConfig(text, file);
  if (!cfg.ok() || cfg->rollout.gate_horizon_s <= 0) return cfg;  // no gate: failOn is never read
  auto checks = sim::ParseFailOn(cfg->rollout.gate_fail_on);
  if (checks.ok()) return cfg;
  const Status err = Status::Error("rollout.dryRunGate.failOn: " + checks.status().Message());
  auto doc = ParseDocument(text, file);  // parsed once already: cannot fail here
  return doc.ok() ? doc->Locate(err) : Status::Error(file + ": " + err.Message());
}

StatusOr<EngineConfig> LoadServedConfig(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseServedConfig(*text, path);
}

std::vector<std::string> StartOnlyChanges(const EngineConfig& started, const EngineConfig& next) {
  std::vector<std::string> out;
  if (started.refresh_in_background != next.refresh_in_background) out.push_back("reservations.refreshInBackground");
  if (started.front_doors != next.front_doors) out.push_back("frontDoors");
  return out;
}

}  // namespace tidal
