// tidalctl waves --run: drives the planned waves one at a time through tidal-engine's Drain RPC.
// For each wave: drain its nodes with --by (work that ends in time finishes, the rest is
// disrupted whole so that it is gone by then), wait until the engine reports every node drained
// (no Tidal or Slurm work left), close them at once (a drain moved to now: nothing new lands on
// them), run --exec with the wave's nodes as arguments (the upgrade; it returns when the nodes
// are back), then cancel the drain. A wave that is not drained within --wave-timeout, or whose
// --exec fails, stops the run with its nodes left drained, so nothing lands on half-upgraded
// nodes; the next run can start from there. The waves of the nodes still to do are planned again
// after each wave, so a gang placed meanwhile is still disrupted once.
// Threading: single-threaded.
#include "cmd/tidalctl/waves_run.h"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <sys/wait.h>

#include "core/api/duration.h"

namespace tidal::cli {
namespace {

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One Drain call; false (and a message on stderr) when the RPC fails.
bool Call(v1::Engine::Stub& stub, const v1::DrainRequest& req, v1::DrainResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status st = stub.Drain(&ctx, req, resp);
  if (!st.ok()) std::cerr << "tidalctl waves --run: Drain: " << st.error_message() << "\n";
  return st.ok();
}

v1::DrainRequest Request(const v1::Wave& w, int64_t by_unix, bool cancel) {
  v1::DrainRequest req;
  for (const auto& n : w.nodes()) req.add_nodes(n);
  req.set_by_unix(by_unix);
  req.set_cancel(cancel);
  return req;
}

// The wave's nodes not yet drained, each with what is left there ("" when all are drained).
std::string Left(const v1::Wave& w, const v1::DrainResponse& status) {
  std::string out;
  for (const auto& n : w.nodes()) {
    const v1::NodeDrain* found = nullptr;
    for (const auto& d : status.nodes()) {
      if (d.node() == n) found = &d;
    }
    if (found != nullptr && found->state() == "drained") continue;
    out += (out.empty() ? "" : "; ") + n + (found == nullptr ? " (not drained)" : ": " + found->note());
  }
  return out;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

bool CallPlanWaves(v1::Engine::Stub& stub, const v1::WavesRequest& req, v1::WavesResponse* resp, const std::string& who,
                   const std::string& address) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status st = stub.PlanWaves(&ctx, req, resp);
  if (!st.ok()) {
    std::cerr << who << ": " << address << ": " << st.error_message() << "\n";
    return false;
  }
  if (resp->status().code() != v1::Status::SUCCESS) {
    std::cerr << who << ":";
    for (const auto& r : resp->status().reasons()) std::cerr << " " << r;
    std::cerr << "\n";
    return false;
  }
  return true;
}

int RunWaves(v1::Engine::Stub& stub, const v1::WavesRequest& req, v1::WavesResponse plan, const WaveRunOptions& o) {
  for (int i = 1; plan.waves_size() > 0; ++i) {
    const v1::Wave w = plan.waves(0);
    const std::string name = "wave " + std::to_string(i) + " (of " + std::to_string(i - 1 + plan.waves_size()) + ")";
    const int64_t start = Now();
    v1::DrainResponse resp;
    if (!Call(stub, Request(w, start + o.by_s, false), &resp)) return 1;
    for (const auto& d : resp.nodes()) {
      if (d.state() == "unknown-node") {
        std::cerr << "tidalctl waves --run: " << name << ": the engine does not know node " << d.node() << "\n";
        return 1;
      }
    }
    std::cout << name << ": draining " << w.nodes_size() << " node(s) by " << FormatUnixTime(start + o.by_s) << std::endl;
    std::string said;
    while (true) {
      v1::DrainResponse status;
      if (!Call(stub, v1::DrainRequest{}, &status)) return 1;
      const std::string left = Left(w, status);
      if (left.empty()) break;
      if (left != said) std::cout << name << ": waiting: " << left << std::endl;
      said = left;
      if (Now() - start >= o.wave_timeout_s) {
        std::cerr << "tidalctl waves --run: " << name << " is not drained after " << FormatDurationSeconds(o.wave_timeout_s)
                  << " (--wave-timeout): " << left << "; its nodes stay drained (tidalctl drain --cancel NODE... to undo)\n";
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(o.poll_ms));
    }
    // Empty: close the nodes now (until now they took work ending before --by).
    if (!Call(stub, Request(w, Now(), false), &resp)) return 1;
    std::cout << name << ": drained in " << FormatDurationSeconds(Now() - start) << std::endl;
    if (!o.exec.empty()) {
      std::string cmd = o.exec;
      for (const auto& n : w.nodes()) cmd += " " + ShellQuote(n);
      const int rc = std::system(cmd.c_str());
      const int code = rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + (WIFSIGNALED(rc) ? WTERMSIG(rc) : 0);
      if (code != 0) {
        std::cerr << "tidalctl waves --run: " << name << ": --exec exited " << code
                  << "; its nodes stay drained (tidalctl drain --cancel NODE... to undo)\n";
        return 1;
      }
    }
    if (!Call(stub, Request(w, 0, true), &resp)) return 1;
    std::cout << name << ": done in " << FormatDurationSeconds(Now() - start) << "; nodes:";
    for (const auto& n : w.nodes()) std::cout << " " << n;
    std::cout << std::endl;
    // The waves of the nodes still to do, planned again: gangs placed meanwhile change them.
    v1::WavesRequest rest = req;
    rest.clear_nodes();
    for (int k = 1; k < plan.waves_size(); ++k) {
      for (const auto& n : plan.waves(k).nodes()) rest.add_nodes(n);
    }
    if (rest.nodes_size() == 0) break;
    if (!CallPlanWaves(stub, rest, &plan, "tidalctl waves --run: PlanWaves", "the engine")) return 1;
  }
  return 0;
}

}  // namespace tidal::cli
