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

// The derived number of queue q (fromHPA), or nullptr.
const QuotaLedger::DerivedHeadroom* Derived(const QuotaLedger& ledger, int q) {
  if (!ledger.tree().Spec(q).headroom_from_hpa) return nullptr;
  auto it = ledger.derived_headroom().find(ledger.tree().Name(q));
  return it == ledger.derived_headroom().end() ? nullptr : &it->second;
}

}  // namespace

int64_t HeadroomGpus(const QuotaLedger& ledger, int q) {
  if (q <= 0 || q >= ledger.tree().size()) return 0;
  const int64_t configured = ledger.tree().Spec(q).headroom_gpus;
  const auto* d = Derived(ledger, q);
  return std::max<int64_t>(0, d == nullptr ? configured : std::max(configured, d->gpus));
}

std::string HeadroomSource(const QuotaLedger& ledger, int q) {
  if (q <= 0 || q >= ledger.tree().size()) return "";
  const QueueSpec& s = ledger.tree().Spec(q);
  if (!s.headroom_from_hpa) return s.headroom_gpus > 0 ? "headroom.gpus" : "";
  const auto* d = Derived(ledger, q);
  const int64_t derived = d == nullptr ? 0 : d->gpus;
  const std::string hpas = d == nullptr || d->source.empty() ? "no HPA of this queue's pods" : d->source;
  if (s.headroom_gpus > derived) {
    return "headroom.gpus " + std::to_string(s.headroom_gpus) + ", above the " + std::to_string(derived) + " from HPAs: " + hpas;
  }
  return hpas;
}

int64_t HeadroomKept(const QuotaLedger& ledger, int q) {
  const int64_t h = HeadroomGpus(ledger, q);
  return h <= 0 ? 0 : std::max<int64_t>(0, h - AllocatedGpus(ledger, q));
}

bool WithinHeadroom(const QuotaLedger& ledger, int q, int64_t gpus) {
  const int64_t h = HeadroomGpus(ledger, q);
  return h > 0 && AllocatedGpus(ledger, q) + gpus <= h;
}

Status CheckHeadroom(const QuotaLedger& ledger, const ClusterState& cluster, const Workload& w, int leaf) {
  if (w.preemptible || w.per_member.gpus <= 0) return Status::Ok();
  const QueueTree& t = ledger.tree();
  for (int q = 1; q < t.size(); ++q) {
    const int64_t h = HeadroomGpus(ledger, q);
    if (q == leaf || h <= 0) continue;
    const int64_t kept = HeadroomKept(ledger, q);
    if (kept <= 0) continue;
    const int64_t room = cluster.FreeGpus(cluster.root()) + cluster.preemptible_gpus() - cluster.PreemptibleGpusOf(t.Name(q));
    if (room >= kept) continue;
    // Configured: "(it uses 16)"; derived: "(HPA e2e/serve: maxReplicas 10 x 8 GPUs; it uses 16)".
    const std::string source = t.Spec(q).headroom_from_hpa ? HeadroomSource(ledger, q) + "; " : "";
    return Status::Unschedulable("queue " + t.Name(q) + " keeps room to grow to " + std::to_string(h) + " GPUs (" + source +
                                     "it uses " + std::to_string(h - kept) + "): this would leave " +
                                     std::to_string(std::max<int64_t>(0, room)) + " of the " + std::to_string(kept) +
                                     " GPUs it keeps (free, or held by preemptible work); only preemptible work may use them",
                                 "quota");
  }
  return Status::Ok();
}

}  // namespace tidal
