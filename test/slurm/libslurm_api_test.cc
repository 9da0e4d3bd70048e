// slurm_api_live: LibslurmApi against a real slurmctld, driven by test/slurm/api_live_test.sh.
//
//   slurm_api_live [--conf PATH] load                 one Load, the records as recorded-state JSON
//   slurm_api_live [--conf PATH] bench N              N Loads; per-load times as one JSON line
//   slurm_api_live [--conf PATH] release JOB NODES COMMENT [MIN-MAX]   (NODES: comma list, "" = leave
//                                as is; MIN-MAX: the node count to set)
//   slurm_api_live [--conf PATH] hold JOB COMMENT [MIN-MAX] | hold_requeued JOB COMMENT | comment JOB COMMENT
//   slurm_api_live [--conf PATH] shrink JOB NODES
//   slurm_api_live [--conf PATH] requeue JOB | signal JOB SIGNUM batch|steps
//   slurm_api_live [--conf PATH] drain NODE REASON | undrain NODE
// Exit 0 on success, 1 with the Status on stderr on failure, 2 on bad usage.
//
// Threading: single-threaded.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "shim/slurm/job_fields.h"
#include "shim/slurm/json_state.h"
#include "shim/slurm/slurm_api_libslurm.h"

namespace {

using tidal::Status;
using tidal::slurm::ClusterRecords;
using tidal::slurm::LibslurmApi;

int Usage() {
  std::fprintf(stderr,
               "usage: slurm_api_live [--conf PATH] load | bench N | release JOB NODES COMMENT [MIN-MAX] |\n"
               "       hold JOB COMMENT [MIN-MAX] | shrink JOB NODES |\n"
               "       hold_requeued JOB COMMENT | comment JOB COMMENT | requeue JOB | signal JOB SIGNUM batch|steps |\n"
               "       drain NODE REASON | undrain NODE\n");
  return 2;
}

// "2-4" -> a pin's count (nodes left empty); false when it is not MIN-MAX.
bool CountOf(const std::string& s, tidal::slurm::JobPin* pin) {
  const size_t dash = s.find('-');
  if (dash == std::string::npos) return false;
  pin->min_nodes = static_cast<uint32_t>(std::strtoul(s.substr(0, dash).c_str(), nullptr, 10));
  pin->max_nodes = static_cast<uint32_t>(std::strtoul(s.substr(dash + 1).c_str(), nullptr, 10));
  return pin->min_nodes > 0 && pin->max_nodes >= pin->min_nodes;
}

int Report(const Status& st) {
  if (st.ok()) return 0;
  std::fprintf(stderr, "%s\n", st.Message().c_str());
  return 1;
}

int Bench(LibslurmApi& api, int n) {
  std::string times;
  ClusterRecords r;
  for (int i = 0; i < n; ++i) {
    Status st = api.Load(&r);
    if (!st.ok()) return Report(st);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.3f", i == 0 ? "" : ",", api.stats().last_load_ms);
    times += buf;
  }
  const LibslurmApi::Stats& s = api.stats();
  std::printf("{\"loads\":%lld,\"jobs\":%lld,\"nodes\":%lld,\"jobs_unchanged\":%lld,\"nodes_unchanged\":%lld,"
              "\"load_ms\":[%s]}\n",
              static_cast<long long>(s.loads), static_cast<long long>(s.last_job_count),
              static_cast<long long>(s.last_node_count), static_cast<long long>(s.jobs_unchanged),
              static_cast<long long>(s.nodes_unchanged), times.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string conf;
  if (args.size() >= 2 && args[0] == "--conf") {
    conf = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.empty()) return Usage();
  auto api = LibslurmApi::Create(conf);
  if (!api.ok()) return Report(api.status());
  const std::string& cmd = args[0];
  auto need = [&](size_t n) { return args.size() == n + 1; };
  if (cmd == "load" && need(0)) {
    ClusterRecords r;
    Status st = (*api)->Load(&r);
    if (st.ok()) std::fputs(tidal::slurm::WriteStateJson(r).c_str(), stdout);
    return Report(st);
  }
  if (cmd == "bench" && need(1)) return Bench(**api, std::max(1, std::atoi(args[1].c_str())));
  if (cmd == "release" && (need(3) || need(4))) {
    tidal::slurm::JobPin pin;
    if (need(4) && !CountOf(args[4], &pin)) return Usage();
    pin.nodes = tidal::slurm::SplitCommaList(args[2]);
    return Report((*api)->Release(args[1], pin, args[3]));
  }
  if (cmd == "hold" && (need(2) || need(3))) {
    tidal::slurm::JobPin pin;
    if (need(3) && !CountOf(args[3], &pin)) return Usage();
    return Report((*api)->Hold(args[1], args[2], pin));
  }
  if (cmd == "shrink" && need(2)) return Report((*api)->Shrink(args[1], tidal::slurm::SplitCommaList(args[2])));
  if (cmd == "comment" && need(2)) return Report((*api)->SetComment(args[1], args[2]));
  if (cmd == "requeue" && need(1)) return Report((*api)->Requeue(args[1]));
  if (cmd == "hold_requeued" && need(2)) return Report((*api)->HoldRequeued(args[1], args[2], {}));
  if (cmd == "signal" && need(3) && (args[3] == "batch" || args[3] == "steps")) {
    return Report((*api)->Signal(args[1], std::atoi(args[2].c_str()), args[3] == "batch"));
  }
  if (cmd == "drain" && need(2)) return Report((*api)->Drain(args[1], args[2]));
  if (cmd == "undrain" && need(1)) return Report((*api)->Undrain(args[1]));
  return Usage();
}
