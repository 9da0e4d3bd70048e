// tidalctl drain: gang-aware drains through tidal-engine's Drain RPC (gRPC, the same address and
// mutual TLS options as tidal-slurm's engine link; server/grpc_client_tls.h). Threading:
// single-threaded.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <set>

#include <grpcpp/grpcpp.h>

#include "cmd/tidalctl/commands.h"
#include "cmd/tidalctl/grpc_engine.h"
#include "core/api/duration.h"
#include "tidal/v1/engine.grpc.pb.h"

namespace tidal::cli {
namespace {

constexpr const char* kDrainUsage =
    "usage: tidalctl drain NODE... --by TIME [--decommission] [--engine unix:///tmp/tidal-engine.sock] [TLS flags]\n"
    "       tidalctl drain --cancel NODE... [--engine ...]  (a node with no drain: not-drained; unknown-node, exit 1)\n"
    "       tidalctl drain [--engine ...]                (every drain and maintenance window: when each node will be free)\n"
    "  --decommission: the node leaves for good; the drain ends when its last front door deletes it\n"
    "  --engine: tidal-engine's gRPC API (its --listen): unix:///PATH or HOST:PORT, not its http:// port\n"
    "  TIME: RFC 3339 (2026-12-02T18:00:00Z), unix seconds, now, or +DURATION (+30m, +2h)\n"
    "  TLS:  --tls-ca FILE --tls-cert FILE --tls-key FILE [--tls-server-name NAME], --insecure true\n";

// --by: the deadline in unix seconds.
StatusOr<int64_t> ParseBy(const std::string& text) {
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (text == "now") return now;
  if (!text.empty() && text[0] == '+') {
    auto d = ParseDurationSeconds(text.substr(1), "--by");
    if (!d.ok()) return d.status();
    return now + *d;
  }
  auto t = ParseUnixTime(text, "--by");
  if (t.ok()) return t;
  return Status::Error("--by: invalid value \"" + text.substr(0, 64) +
                       "\" (accepted: now, +DURATION such as +30m or +2h, an RFC 3339 time such as "
                       "2026-12-02T10:00:00Z, or unix seconds)");
}

void Print(const v1::DrainResponse& resp) {
  std::cout << std::left << std::setw(24) << "NODE" << std::setw(14) << "STATE" << std::setw(22) << "BY" << std::setw(22)
            << "FREE-AT" << std::setw(6) << "LEFT" << "NOTE\n";
  for (const auto& n : resp.nodes()) {
    std::cout << std::setw(24) << n.node() << std::setw(14) << n.state() << std::setw(22)
              << (n.by_unix() > 0 ? FormatUnixTime(n.by_unix()) : "-") << std::setw(22)
              << (n.free_at_unix() > 0 ? FormatUnixTime(n.free_at_unix()) : "now") << std::setw(6) << n.workloads_left()
              << n.note() << "\n";
  }
}

// One Drain call; false (and why on stderr) when the RPC fails.
bool Call(v1::Engine::Stub& stub, const std::string& address, const v1::DrainRequest& req, v1::DrainResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status st = stub.Drain(&ctx, req, resp);
  if (!st.ok()) std::cerr << "tidalctl drain: " << address << ": " << st.error_message() << "\n";
  return st.ok();
}

// A --cancel node that had no drain: a row saying so, "unknown-node" when no front door reports it
// (the engine's PlanWaves names an unknown node; the command exits 1, as a drain of it does) or
// "not-drained" (nothing to cancel: the node already takes work).
void AddNothingToCancel(v1::Engine::Stub& stub, const std::string& node, v1::DrainResponse* resp) {
  v1::WavesRequest ask;
  ask.add_nodes(node);
  ask.set_max_nodes(1);
  v1::WavesResponse known;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  const grpc::Status st = stub.PlanWaves(&ctx, ask, &known);
  const bool unknown = st.ok() && known.status().code() != v1::Status::SUCCESS;
  v1::NodeDrain* row = resp->add_nodes();
  row->set_node(node);
  row->set_state(unknown ? "unknown-node" : "not-drained");
  row->set_note(unknown ? "no front door reports this node; nothing to cancel" : "no drain to cancel");
}

}  // namespace

int Drain(const Args& in) {
  Args args;
  bool cancel = false, decommission = false;
  for (const auto& a : in) {
    if (a == "--help" || a == "-h") {
      std::cout << kDrainUsage;
      return 0;
    }
    if (a == "--cancel") {
      cancel = true;
    } else if (a == "--decommission") {
      decommission = true;
    } else {
      args.push_back(a);
    }
  }
  Flags flags(args);
  std::vector<std::string> known = EngineFlagNames();
  known.insert(known.end(), {"--by"});
  if (!flags.Parse(known)) {
    std::cerr << kDrainUsage;
    return 2;
  }
  const auto& nodes = flags.positional();
  const std::string by_text = flags.Get("--by");
  if ((cancel && (nodes.empty() || !by_text.empty())) || (!cancel && !nodes.empty() && by_text.empty()) ||
      (nodes.empty() && !by_text.empty()) || (decommission && (cancel || nodes.empty()))) {
    std::cerr << kDrainUsage;
    return 2;
  }
  v1::DrainRequest req;
  for (const auto& n : nodes) req.add_nodes(n);
  req.set_cancel(cancel);
  req.set_decommission(decommission);
  if (!by_text.empty()) {
    auto by = ParseBy(by_text);
    if (!by.ok()) {
      std::cerr << "tidalctl drain: " << by.status().Message() << "\n";
      return 2;
    }
    req.set_by_unix(*by);
  }
  const std::string address = EngineAddress(flags);
  auto stub = EngineStub(flags);
  if (!stub.ok()) {
    std::cerr << "tidalctl drain: " << stub.status().Message() << "\n";
    return 2;
  }
  // Before a cancel: which of its nodes are drained now (the report), so that a node with no drain
  // to cancel is named rather than passed over in silence.
  std::set<std::string> drained;
  if (cancel) {
    v1::DrainResponse report;
    if (!Call(**stub, address, v1::DrainRequest{}, &report)) return 1;
    for (const auto& n : report.nodes()) drained.insert(n.node());
  }
  v1::DrainResponse resp;
  if (!Call(**stub, address, req, &resp)) return 1;
  if (cancel) {
    for (const auto& n : nodes) {
      if (!drained.count(n)) AddNothingToCancel(**stub, n, &resp);
    }
  }
  Print(resp);
  for (const auto& n : resp.nodes()) {
    if (n.state() == "unknown-node" || n.state() == "annotated") return 1;  // not done as asked
  }
  return 0;
}

}  // namespace tidal::cli
