// tidalctl: Tidal's command line. Threading: single-threaded.
#include <iostream>
#include <string>

#include "cmd/tidalctl/commands.h"

namespace {

constexpr const char* kUsage = R"(tidalctl: Tidal's command line

Usage:
  tidalctl place [--topology FILE] [--workloads FILE] [--profile FILE] [-o table|json]
      Place workloads on a fabric with the engine's own scheduling core and print, per workload,
      where it landed and why (or why it waits). Without files: the built-in sample
      (deploy/examples/sample-fabric.yaml and sample-workloads.yaml). Files are YAML or JSON.
      --profile FILE: a bare profile (name, maxCandidates, plugins, backfill: what an engine
      config holds under profile:) or a whole engine config, whose profile: is used.
  tidalctl config validate FILE
      Validate an engine config (topology levels, profile, queues) as tidal-engine would load it;
      every problem is printed as "file:line: field: reason" and the exit code is 1
      (docs/fair-share.md says which checks wait for others to pass).
  tidalctl config diff FILE [--engine http://127.0.0.1:8081] [-o text|json]
      What the live engine runs against FILE (e.g. what git holds), field by field, as documents
      (a default spelled out or a number quoted differs; an engine without --config runs {}):
      exit 0 the same config, 1 they differ (drift), 2 FILE is invalid or the engine cannot be asked.
  tidalctl sim --trace FILE [--policy tidal|fifo|easy-backfill|kube-default|all] [--out FILE] [--report DIR] ...
      Replay a job trace (Philly CSV, generic CSV, YAML/JSON) on a virtual clock through the same
      core and plugins as tidal-engine, and baselines; metrics per policy (docs/simulator.md).
  tidalctl gen MIX|SPEC -o FILE [--seed N] [--days D] [--load X] [--gpus N] [--format csv|philly]
      Generate a synthetic trace for tidalctl sim: a named mix (philly-like, llm-gangs,
      inference-heavy) or a spec file (job sizes, durations, arrivals, teams, declared runtimes).
  tidalctl snapshot -o FILE [--engine http://127.0.0.1:8081] [--anonymise[=queues]]
      Capture the live engine's state (nodes, running and pending work, usage, reservations, the
      config it runs) for a policy dry-run (docs/simulator.md).
  tidalctl sim --snapshot FILE --config NEW.yaml [--against CURRENT.yaml] [--horizon 24h] [--fail-on CHECKS]
      Policy dry-run: replay the snapshot forward under both configs and report per queue what the
      change does (time to start, preemptions, fair share, reservations moved); --fail-on gates CI.
  tidalctl explain NAMESPACE/NAME [--engine http://127.0.0.1:8081] [-o text|json]
      Why a workload (gang or pod) waits: state, members, position in queue order, estimated
      start, quota state; read from tidal-engine's explain API.
  tidalctl queues [--engine http://127.0.0.1:8081] [-o table|json]
      Queue usage, nominal quota, borrowed GPUs, fair share and pending workloads.
  tidalctl drain NODE... --by TIME [--decommission] [--engine unix:///tmp/tidal-engine.sock]
      Gang-aware drain: until TIME the nodes take only work that ends by then; work whose runtime
      limit ends by TIME finishes, the rest is given notice and moved as whole gangs before it;
      prints when each node will be free. --cancel NODE... ends a drain; no arguments: every
      drain and maintenance window.
  tidalctl waves [NODE...] --max-nodes N | --domain LEVEL [--engine unix:///tmp/tidal-engine.sock]
      Rolling upgrades: the nodes (default: all) in waves of at most N nodes, or one topology
      domain each, the nodes of every running rigid gang in one wave; drain them wave by wave.
  tidalctl help
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "place") return tidal::cli::Place(args);
  if (cmd == "config") return tidal::cli::Config(args);
  if (cmd == "explain") return tidal::cli::Explain(args);
  if (cmd == "queues") return tidal::cli::Queues(args);
  if (cmd == "sim") return tidal::cli::Sim(args);
  if (cmd == "gen") return tidal::cli::Gen(args);
  if (cmd == "snapshot") return tidal::cli::Snapshot(args);
  if (cmd == "drain") return tidal::cli::Drain(args);
  if (cmd == "waves") return tidal::cli::Waves(args);
  std::cerr << "tidalctl: unknown command \"" << cmd << "\"\n" << kUsage;
  return 2;
}
