// The refresh job's own steps (refresh_job.h): the timeline, then the dry cycle. Reads nothing
// but the job. Threading: whichever thread owns the job.
#include "engine/refresh_job.h"

#include <utility>

#include "plugins/registry.h"

namespace tidal {

void LayTimeline(ClusterState& t, TimelineInputs in) {
  for (TimedCharge& c : in.charges) {
    Allocation a;
    a.workload.id = "pod:" + c.uid;
    a.workload.per_member = c.request;
    a.workload.members = 1;
    a.workload.min_members = 1;
    a.workload.runtime_limit_s = c.runtime_limit_s;
    a.workload.workload_class = c.workload_class;
    a.assignments = {{c.node, 1}};
    a.start_time_s = c.since_s;
    t.Release(c.node, c.request);
    if (!t.AddRunning(std::move(a)).ok()) t.Allocate(c.node, c.request);
  }
  for (Allocation& h : in.holds) (void)t.AddRunning(std::move(h));
  for (NodeId n : in.closing) t.SetHealth(n, NodeHealth::kDraining);
}

RefreshOutcome RunRefreshJob(RefreshJob& job) {
  RefreshOutcome out;
  if (!job.state || !job.ledger) return out;
  ClusterState& dry = *job.state;
  LayTimeline(dry, std::move(job.timeline));
  auto p = Profile::Build(job.profile, plugins::DefaultRegistry(), PluginContext{job.levels, &*job.ledger});
  if (!p.ok()) return out;
  SchedulerOptions opts;
  opts.reservations = std::make_shared<std::map<std::string, Reservation>>(std::move(job.book));
  opts.keep_decisions = false;  // only the book is wanted
  opts.explain = false;         // no decision is read: no explanation text built for any
  auto book = opts.reservations;
  Scheduler dry_sched(std::move(p).value(), std::move(opts));
  out.in_force = static_cast<int64_t>(dry_sched.RunCycle(dry, job.batch, job.now_s).reservations.size());
  // A prefix settles the book once the walk reached the depth within it: nothing after that
  // point changes the book (engine_refresh.cc).
  out.settled = !job.prefix || out.in_force >= job.depth;
  out.book = std::move(*book);
  return out;
}

}  // namespace tidal
