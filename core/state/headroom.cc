// Headroom (see headroom.h). Threading: pure functions, the cycle thread.
#include "core/state/headroom.h"

#include <algorithm>
#include <string>

namespace tidal {

namespace {

int64_t AllocatedGpus(const QuotaLedger& ledger, int q) {
  const int r = ledger.tree().config().ResourceIndex("gpus");
  return r < 0 ? 0 : ledger.Allocated(q)[static_cast<size_t>(r)];
}

}  // namespace

int64_t HeadroomKept(const QuotaLedger& ledger, int q) {
  if (q <= 0 || q >= ledger.tree().size()) return 0;
  const int64_t h = ledger.tree().Spec(q).headroom_gpus;
  return h <= 0 ? 0 : std::max<int64_t>(0, h - AllocatedGpus(ledger, q));
}

bool WithinHeadroom(const QuotaLedger& ledger, int q, int64_t gpus) {
  if (q <= 0 || q >= ledger.tree().size()) return false;
  const int64_t h = ledger.tree().Spec(q).headroom_gpus;
  return h > 0 && AllocatedGpus(ledger, q) + gpus <= h;
}

Status CheckHeadroom(const QuotaLedger& ledger, const ClusterState& cluster, const Workload& w, int leaf) {
  if (w.preemptible || w.per_member.gpus <= 0) return Status::Ok();
  const QueueTree& t = ledger.tree();
  for (int q = 1; q < t.size(); ++q) {
    if (q == leaf || t.Spec(q).headroom_gpus <= 0) continue;
    const int64_t kept = HeadroomKept(ledger, q);
    if (kept <= 0) continue;
    const int64_t room = cluster.FreeGpus(cluster.root()) + cluster.preemptible_gpus() - cluster.PreemptibleGpusOf(t.Name(q));
    if (room >= kept) continue;
    return Status::Unschedulable("queue " + t.Name(q) + " keeps room to grow to " + std::to_string(t.Spec(q).headroom_gpus) +
                                     " GPUs (it uses " + std::to_string(t.Spec(q).headroom_gpus - kept) + "): this would leave " +
                                     std::to_string(std::max<int64_t>(0, room)) + " of the " + std::to_string(kept) +
                                     " GPUs it keeps (free, or held by preemptible work); only preemptible work may use them",
                                 "quota");
  }
  return Status::Ok();
}

}  // namespace tidal
