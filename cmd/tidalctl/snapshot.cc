// tidalctl snapshot: captures the live engine's state (GET /snapshot: nodes, running and pending
// work, decayed usage, reservations, the config it runs) into a file for `tidalctl sim --snapshot`
// (docs/simulator.md, "Snapshots"). The engine's answer is read back with the dry-run's own reader
// before it is written, so a file this writes is one the dry-run takes. --anonymise hashes names
// (sim/snapshot.h). Exit 0 written, 1 the engine's answer is not a snapshot this tidalctl reads,
// 2 bad usage or the engine cannot be asked.
#include <fstream>
#include <iostream>

#include "cmd/tidalctl/commands.h"
#include "sim/snapshot.h"

namespace tidal::cli {
namespace {

constexpr const char* kSnapshotUsage =
    "usage: tidalctl snapshot -o FILE [--engine http://127.0.0.1:8081] [--token-file FILE] [--anonymise[=names|queues]]\n"
    "  Captures the live engine's state for a policy dry-run (tidalctl sim --snapshot FILE). -o - writes to stdout.\n"
    "  --anonymise (= names): node names, workload ids and topology label values become stable hashes;\n"
    "  --anonymise=queues: queue names too (in the work, the usage and the config). Reference: docs/simulator.md\n";

}  // namespace

int Snapshot(const Args& in) {
  Args args;
  for (const auto& a : in) {
    if (a == "--help" || a == "-h") return std::cout << kSnapshotUsage, 0;
    args.push_back(a == "--anonymise" || a == "--anonymize" ? "--anonymise=names" : a);
  }
  Flags flags(args);
  if (!flags.Parse({"--engine", "--token-file", "-o", "--output", "--anonymise", "--anonymize"}) || !flags.positional().empty()) {
    std::cerr << kSnapshotUsage;
    return 2;
  }
  const std::string file = flags.Get("-o", flags.Get("--output"));
  if (file.empty()) return std::cerr << "tidalctl snapshot: -o FILE is required\n" << kSnapshotUsage, 2;
  const std::string anon = flags.Get("--anonymise", flags.Get("--anonymize"));
  if (!anon.empty() && anon != "names" && anon != "queues") {
    return std::cerr << "tidalctl snapshot: --anonymise: expected names or queues, got \"" << anon << "\"\n", 2;
  }
  const std::string engine = flags.Get("--engine", "http://127.0.0.1:8081");
  int code = 0;
  std::string body, err;
  if (!HttpGet(engine, TokenFile(flags), "/snapshot", &code, &body, &err)) return std::cerr << "tidalctl snapshot: " << err << "\n", 2;
  if (code == 404) return std::cerr << "tidalctl snapshot: " << engine << " has no /snapshot (an older engine?)\n", 2;
  if (code != 200) return std::cerr << "tidalctl snapshot: " << engine << "/snapshot: HTTP " << code << ": " << body, 2;
  auto snap = sim::ParseSnapshot(body, engine + "/snapshot");
  if (!snap.ok()) {
    for (const auto& r : snap.status().reasons()) std::cerr << r << "\n";
    return 1;
  }
  nlohmann::json doc = nlohmann::json::parse(body);
  if (!anon.empty()) {
    if (Status s = sim::AnonymiseSnapshot(doc, anon == "queues"); !s.ok()) return std::cerr << "tidalctl snapshot: " << s.Message() << "\n", 1;
  }
  const std::string text = doc.dump(1) + "\n";
  if (file == "-") {
    std::cout << text;
  } else {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    if (!(out << text) || !out.flush()) return std::cerr << "tidalctl snapshot: " << file << ": cannot write\n", 2;
  }
  int64_t gpus = 0;
  for (const auto& n : snap->nodes) gpus += n.capacity.gpus;
  std::cerr << "tidalctl snapshot: " << snap->nodes.size() << " nodes (" << gpus << " GPUs), " << snap->running.size()
            << " running, " << snap->pending.size() << " pending, " << snap->reservations.size()
            << " reservations; config version " << snap->config_version << (anon.empty() ? "" : "; anonymised (" + anon + ")")
            << (file == "-" ? "" : " -> " + file) << "\n";
  return 0;
}

}  // namespace tidal::cli
