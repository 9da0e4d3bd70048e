// tidalctl waves: rolling-upgrade waves through tidal-engine's PlanWaves RPC (gRPC, the same
// address and mutual TLS options as tidalctl drain). Threading: single-threaded.
#include <cstdlib>
#include <iostream>

#include <grpcpp/grpcpp.h>

#include "cmd/tidalctl/commands.h"
#include "cmd/tidalctl/grpc_engine.h"
#include "cmd/tidalctl/waves_run.h"
#include "core/api/duration.h"
#include "tidal/v1/engine.grpc.pb.h"

namespace tidal::cli {
namespace {

constexpr const char* kWavesUsage =
    "usage: tidalctl waves [NODE...] --max-nodes N | --domain LEVEL [--engine unix:///tmp/tidal-engine.sock] [TLS flags]\n"
    "  NODE...: the nodes to upgrade (default: every node the engine knows)\n"
    "  --max-nodes N: at most N nodes per wave; --domain LEVEL: one topology domain (leaf, nvlink, ...) per wave\n"
    "  The nodes of each running rigid gang are in one wave, so it is disrupted once.\n"
    "  --run [--by DURATION] [--exec CMD] [--wave-timeout DURATION]: run the waves one at a time: drain\n"
    "    the wave's nodes by --by (default 30m: work that ends by then finishes, the rest is disrupted\n"
    "    whole), wait until they are drained, run CMD NODE... (the upgrade; it returns once the nodes\n"
    "    are back), cancel the drain, plan the rest again, next wave. A wave not drained within --wave-timeout (default\n"
    "    --by + 5m) or whose CMD fails stops the run; its nodes stay drained. Exit 1 then.\n"
    "  --engine: tidal-engine's gRPC API (its --listen): unix:///PATH or HOST:PORT, not its http:// port\n"
    "  TLS:  --tls-ca FILE --tls-cert FILE --tls-key FILE [--tls-server-name NAME], --insecure true\n";

}  // namespace

int Waves(const Args& in) {
  Args args;
  bool run = false;
  for (const auto& a : in) {
    if (a == "--help" || a == "-h") {
      std::cout << kWavesUsage;
      return 0;
    }
    if (a == "--run") {
      run = true;
    } else {
      args.push_back(a);
    }
  }
  Flags flags(args);
  std::vector<std::string> known = EngineFlagNames();
  known.insert(known.end(), {"--max-nodes", "--domain", "--by", "--exec", "--wave-timeout"});
  if (!flags.Parse(known)) {
    std::cerr << kWavesUsage;
    return 2;
  }
  WaveRunOptions opts;
  for (const char* f : {"--by", "--exec", "--wave-timeout"}) {
    if (!run && !flags.Get(f).empty()) {
      std::cerr << "tidalctl waves: " << f << " needs --run\n" << kWavesUsage;
      return 2;
    }
  }
  // A positive duration flag into *out (left as is when the flag is not given); false: said why.
  auto duration = [&flags](const char* flag, int64_t* out) {
    if (flags.Get(flag).empty()) return true;
    auto d = ParseDurationSeconds(flags.Get(flag), flag);
    if (d.ok() && *d > 0) return *out = *d, true;
    std::cerr << "tidalctl waves: " << (d.ok() ? std::string(flag) + ": must be positive" : d.status().Message()) << "\n";
    return false;
  };
  if (!duration("--by", &opts.by_s)) return 2;
  opts.wave_timeout_s = opts.by_s + 300;
  if (!duration("--wave-timeout", &opts.wave_timeout_s)) return 2;
  opts.exec = flags.Get("--exec");
  v1::WavesRequest req;
  for (const auto& n : flags.positional()) req.add_nodes(n);
  const std::string max_text = flags.Get("--max-nodes");
  req.set_domain(flags.Get("--domain"));
  if (!max_text.empty()) {
    char* end = nullptr;
    const long v = std::strtol(max_text.c_str(), &end, 10);
    if (end == max_text.c_str() || *end != '\0' || v <= 0 || v > 1000000) {
      std::cerr << "tidalctl waves: --max-nodes: must be a whole number 1..1000000, got \"" << max_text << "\"\n";
      return 2;
    }
    req.set_max_nodes(static_cast<int32_t>(v));
  }
  if ((req.max_nodes() > 0) == !req.domain().empty()) {
    std::cerr << "tidalctl waves: give --max-nodes or --domain (one of them)\n" << kWavesUsage;
    return 2;
  }
  const std::string address = EngineAddress(flags);
  auto stub = EngineStub(flags);
  if (!stub.ok()) {
    std::cerr << "tidalctl waves: " << stub.status().Message() << "\n";
    return 2;
  }
  v1::WavesResponse resp;
  if (!CallPlanWaves(**stub, req, &resp, "tidalctl waves", address)) return 1;
  for (int i = 0; i < resp.waves_size(); ++i) {
    const auto& w = resp.waves(i);
    std::cout << "wave " << (i + 1) << ": " << w.why() << "\n  nodes:";
    for (const auto& n : w.nodes()) std::cout << " " << n;
    std::cout << "\n";
    if (w.gangs_size() > 0) {
      std::cout << "  rigid gangs taken down:";
      for (const auto& g : w.gangs()) std::cout << " " << g;
      std::cout << "\n";
    }
  }
  for (const auto& n : resp.notes()) std::cout << "note: " << n << "\n";
  if (!run) return 0;
  std::cout.flush();
  return RunWaves(**stub, req, resp, opts);
}

}  // namespace tidal::cli
