// Fuzz target: the Slurm adapter's JSON readers (shim/slurm/json_state.cc) and what follows them:
// `squeue --json`, `sinfo --json` and the recorded-state file -> records -> the engine's messages
// (shim/slurm/to_engine.cc: MembersOf, NodeOf, SkipReason, MembersKey) -> the engine's side of
// them (server FromProto and ParsePodSchedulingSpec on each member's labels and annotations).
// The first byte picks the reader; the rest is the JSON text.
// Checked: a state file read back from WriteStateJson of what was read holds as many jobs/nodes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/pod_spec.h"
#include "server/service.h"
#include "shim/slurm/json_state.h"
#include "shim/slurm/to_engine.h"

namespace {

void Convert(const tidal::slurm::ClusterRecords& r) {
  static const tidal::slurm::AdapterConfig cfg = [] {
    tidal::slurm::AdapterConfig c;
    c.default_queue = "default";
    c.queues.push_back({"acct", "", "", "research"});
    return c;
  }();
  const tidal::TopologyLevels levels = tidal::TopologyLevels::Default();
  size_t members = 0;
  for (const auto& j : r.jobs) {
    (void)tidal::slurm::StanceOf(j);
    (void)tidal::slurm::SkipReason(j);
    (void)tidal::slurm::MembersKey(j);
    (void)tidal::slurm::ConstraintError(j);
    for (const auto& id : tidal::slurm::JobIdsOf(j)) {
      for (const auto& m : tidal::slurm::MembersOf(j, id, cfg)) {
        if (++members > 2000) return;  // a huge array: the conversions above already ran
        tidal::PodInfo p = tidal::FromProto(m);
        (void)tidal::ParsePodSchedulingSpec(p.labels, p.annotations, levels);
      }
    }
  }
  for (const auto& n : r.nodes) {
    (void)tidal::FromProto(tidal::slurm::NodeOf(n, cfg));
    (void)tidal::slurm::Pinnable(n);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  tidal::slurm::ClusterRecords r;
  tidal::Status st;
  switch (data[0] % 3) {
    case 0: st = tidal::slurm::ParseSqueueJson(text, &r.jobs); break;
    case 1: st = tidal::slurm::ParseSinfoJson(text, &r.nodes); break;
    default: st = tidal::slurm::ReadStateJson(text, &r); break;
  }
  Convert(r);
  if (st.ok()) {
    tidal::slurm::ClusterRecords back;
    const tidal::Status rt = tidal::slurm::ReadStateJson(tidal::slurm::WriteStateJson(r), &back);
    if (!rt.ok() || back.jobs.size() != r.jobs.size() || back.nodes.size() != r.nodes.size()) {
      __builtin_trap();  // the state file does not read back what it wrote
    }
  }
  return 0;
}
