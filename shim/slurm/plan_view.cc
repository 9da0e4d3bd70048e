// The records as Tidal plans with them (see plan_view.h).
//
// Threading: pure functions; no shared state.
#include "shim/slurm/plan_view.h"

#include <algorithm>
#include <string>

#include "shim/slurm/job_fields.h"
#include "shim/slurm/to_engine.h"

namespace tidal::slurm {

void AskWholeNodes(const std::vector<NodeRecord>& nodes, JobRecord* j) {
  if (!j->exclusive || j->state != JobState::kPending || j->completing) return;
  const std::vector<std::string> parts = SplitCommaList(j->partition);
  std::vector<std::string> features;
  for (size_t i = 0, k; i <= j->features.size(); i = k + 1) {
    k = std::min(j->features.find('&', i), j->features.size());
    if (k > i) features.push_back(j->features.substr(i, k - i));
  }
  const std::vector<std::string> pin = StanceOf(*j) == JobStance::kReleased ? j->required_nodes : UserPin(*j);
  auto has = [](const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  int64_t gpus = 0, cpus = 0, mem = 0;
  bool any = false;
  for (const NodeRecord& n : nodes) {
    if (!parts.empty() && std::none_of(parts.begin(), parts.end(), [&](const std::string& p) { return has(n.partitions, p); })) continue;
    if (std::any_of(features.begin(), features.end(), [&](const std::string& f) { return !has(n.features, f); })) continue;
    if (has(j->excluded_nodes, n.name) || (!pin.empty() && !has(pin, n.name))) continue;
    any = true;
    gpus = std::max(gpus, n.gpus);
    cpus = std::max(cpus, n.cpus);
    mem = std::max(mem, n.real_memory_mb);
  }
  if (!any) return;
  j->gpus_per_node = std::max(j->gpus_per_node, gpus);
  j->cpus_per_node = std::max(j->cpus_per_node, cpus);
  j->memory_mb_per_node = std::max(j->memory_mb_per_node, mem);
}

void PlanView(ClusterRecords* rec) {
  for (NodeRecord& n : rec->nodes) {
    if (n.drain && n.reason == kLentReason) n.drain = false, n.lent_drain = true;
  }
  for (JobRecord& j : rec->jobs) AskWholeNodes(rec->nodes, &j);
}

}  // namespace tidal::slurm
