#include "sim/policies/kube_default.h"

#include <algorithm>
#include <climits>
#include <map>

#include "sim/simulator.h"

namespace tidal::sim {

Status KubeDefaultPolicy::Prepare(Simulator& sim) {
  bound_.assign(sim.jobs().size(), {});
  const ClusterState& st = sim.state();
  for (const auto& n : st.nodes()) {
    if (n.capacity.gpus != st.nodes().front().capacity.gpus) uniform_ = false;
  }
  NeverFits never;
  for (JobId j = 0; j < sim.jobs().size(); ++j) {
    const Workload& w = sim.job(j).w;
    if (w.priority != sim.job(0).w.priority) priorities_ = true;
    std::string why = never.Check(st, w);
    if (!why.empty()) sim.Reject(j, std::move(why));
  }
  return Status::Ok();
}

void KubeDefaultPolicy::Schedule(Simulator& sim, const Changes& changes) {
  const auto& pending = sim.pending();
  if (pending.empty() || (!changes.arrived && !changes.freed)) return;
  ClusterState& st = sim.mutable_state();
  if (MaxNodeFreeGpus(st) < sim.MinPendingMemberGpus()) {
    sim.CountSkip();
    return;
  }
  order_.assign(pending.begin(), pending.end());
  if (priorities_) {
    std::stable_sort(order_.begin(), order_.end(),
                     [&](JobId a, JobId b) { return sim.job(a).w.priority > sim.job(b).w.priority; });
  }
  int64_t min_failed = INT64_MAX;  // a pod of this many GPUs found no node: larger ones fail too
  int64_t tried = 0;
  for (JobId j : order_) {
    const Workload& w = sim.job(j).w;
    const int64_t g = w.per_member.gpus;
    if (g >= min_failed) continue;
    ++tried;
    auto& pods = bound_[j];
    while (static_cast<int32_t>(pods.size()) < w.members) {
      const NodeId n = LeastAllocatedNode(st, w, uniform_);
      if (n == kNoNode) {
        if (g > 0) min_failed = std::min(min_failed, g);
        break;
      }
      st.Allocate(n, w.per_member);
      pods.push_back(n);
      held_ += g;
    }
    if (static_cast<int32_t>(pods.size()) < w.members) {
      sim.record(j).last_reason = "kube-default: " + std::to_string(pods.size()) + "/" + std::to_string(w.members) +
                                  " pods bound; the rest do not fit (bound pods hold their GPUs)";
    } else {
      // All pods bound: the job runs. Its pods' allocations become one running allocation.
      std::map<NodeId, int32_t> per_node;
      for (NodeId n : pods) {
        st.Release(n, w.per_member);
        ++per_node[n];
      }
      held_ -= g * w.members;
      std::vector<MemberAssignment> a;
      for (const auto& [n, m] : per_node) a.push_back(MemberAssignment{n, m});
      pods.clear();
      pods.shrink_to_fit();
      (void)sim.Place(j, a);
    }
    if (min_failed <= sim.MinPendingMemberGpus()) break;
  }
  sim.CountCycle(tried);
  sim.SetHeldGpus(held_);
}

}  // namespace tidal::sim
