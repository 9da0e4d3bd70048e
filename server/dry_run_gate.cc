// The rollout dry-run gate (see dry_run_gate.h). Threading: a plain function.
#include "server/dry_run_gate.h"

#include "sim/dryrun.h"
#include "sim/snapshot.h"

namespace tidal {

namespace {
sim::DryRunConfig SideOf(const char* name, const GateSide& s) {
  sim::DryRunConfig c;
  c.name = name;
  c.source = std::string(name) + " config";
  c.version = s.version;
  c.queues = s.cfg->queues;
  c.profile = s.cfg->profile;
  c.pools = s.cfg->pools;
  return c;
}
}  // namespace

Status RunDryRunGate(Engine& engine, const GateSide& running, const GateSide& next, nlohmann::json* summary) {
  const RolloutPolicy& gate = running.cfg->rollout;
  if (gate.gate_horizon_s <= 0) return Status::Ok();
  auto checks = sim::ParseFailOn(gate.gate_fail_on);
  if (!checks.ok()) return Status::Error("rollout.dryRunGate.failOn: " + checks.status().Message());
  auto snap = sim::ReadSnapshot(engine.Snapshot(), "the engine's live snapshot");
  if (!snap.ok()) return Status::Error("rollout.dryRunGate: " + snap.status().Message());
  sim::DryRunOptions opts;
  opts.horizon_s = gate.gate_horizon_s;
  auto cur = sim::RunDryRun(*snap, SideOf("current", running), opts);
  if (!cur.ok()) return Status::Error("rollout.dryRunGate: the running config: " + cur.status().Message());
  auto nxt = sim::RunDryRun(*snap, SideOf("new", next), opts);
  if (!nxt.ok()) return Status::Error("rollout.dryRunGate: the new config: " + nxt.status().Message());
  const nlohmann::json report = sim::CompareDryRuns(*snap, *cur, *nxt, opts);
  const std::vector<std::string> breaches = sim::FailOnBreaches(*checks, report);
  if (summary != nullptr) {
    *summary = {{"horizon_s", gate.gate_horizon_s}, {"fail_on", gate.gate_fail_on}, {"breaches", breaches},
                {"flags", report.value("flags", nlohmann::json::array())}};
  }
  if (breaches.empty()) return Status::Ok();
  Status st = Status::Error("rollout.dryRunGate: the dry-run of version " + next.version + " on the live snapshot (" +
                            std::to_string(gate.gate_horizon_s) + " s) breaches " + std::to_string(breaches.size()) +
                            " check(s) of failOn " + gate.gate_fail_on);
  for (const auto& b : breaches) st.AddReason(b);
  return st;
}

}  // namespace tidal
