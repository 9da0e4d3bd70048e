// tidalctl drain: gang-aware drains through tidal-engine's Drain RPC (gRPC, the same address and
// mutual TLS options as tidal-slurm's engine link; server/grpc_client_tls.h). Threading:
// single-threaded.
#include <chrono>
#include <iomanip>
#include <iostream>

#include <grpcpp/grpcpp.h>

#include "cmd/tidalctl/commands.h"
#include "cmd/tidalctl/grpc_engine.h"
#include "core/api/duration.h"
#include "tidal/v1/engine.grpc.pb.h"

namespace tidal::cli {
namespace {

constexpr const char* kDrainUsage =
    "usage: tidalctl drain NODE... --by TIME [--decommission] [--engine unix:///tmp/tidal-engine.sock] [TLS flags]\n"
    "       tidalctl drain --cancel NODE... [--engine ...]\n"
    "       tidalctl drain [--engine ...]                (every drain and maintenance window: when each node will be free)\n"
    "  --decommission: the node leaves for good; the drain ends when its last front door deletes it\n"
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
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::DrainResponse resp;
  grpc::Status st = (*stub)->Drain(&ctx, req, &resp);
  if (!st.ok()) {
    std::cerr << "tidalctl drain: " << address << ": " << st.error_message() << "\n";
    return 1;
  }
  Print(resp);
  for (const auto& n : resp.nodes()) {
    if (n.state() == "unknown-node" || n.state() == "annotated") return 1;  // not done as asked
  }
  return 0;
}

}  // namespace tidal::cli
