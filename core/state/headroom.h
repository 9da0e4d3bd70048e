// Headroom: a queue (say `inference`) keeps room to grow at any time.
//
//   queues:
//     - {name: inference, headroom: {gpus: 80, graceCapSeconds: 30}}
//
// The cluster keeps room for the queue to reach `gpus` GPUs (what it uses now, plans included,
// counts: the room kept is max(0, gpus - used)); set it to an HPA's maxReplicas x GPUs per replica.
// That room is lent to preemptible work only:
//   - Reserve (plugins/quota, CheckHeadroom): a workload of another queue that is not preemptible is refused when,
//     after its placement, the free GPUs plus the GPUs other queues' preemptible work holds (room
//     that comes back on demand) would be less than the room kept; preemptible work is never refused
//     by headroom (it fills the room);
//   - PostFilter (plugins/preemption): the queue's pending work, while within its headroom, may take
//     back room from other queues' preemptible work whatever their quota (reason `reclaim`), and its
//     victims get at most `graceCapSeconds` of notice (engine/engine_disruptions.cc).
// Counted in GPUs over the whole cluster, not per node shape or pool.
//
// Derived from HPAs: `headroom: {fromHPA: true, graceCapSeconds: 30}` makes the number the sum,
// over the HorizontalPodAutoscalers whose pods are in the queue and scheduled by Tidal, of
// maxReplicas x GPUs per replica (engine/autoscalers.h computes it from what the Kubernetes door
// reports, QuotaLedger::SetDerivedHeadroom holds it). With `gpus` as well, the larger counts
// (`gpus` is a floor). Everything below reads the number through HeadroomGpus.
// Threading: pure functions over the cycle's ledger and state (the cycle thread).
#pragma once

#include <cstdint>
#include <string>

#include "core/api/status.h"
#include "core/api/workload.h"
#include "core/state/cluster_state.h"
#include "core/state/queues.h"

namespace tidal {

// The GPUs queue q may grow to: headroom.gpus, or with fromHPA the larger of it and the derived
// number. 0 = no headroom.
int64_t HeadroomGpus(const QuotaLedger& ledger, int q);
// Where that number came from, for refusals and views: "HPA e2e/serve: maxReplicas 10 x 8 GPUs",
// "headroom.gpus" (configured), or both when the configured floor wins.
std::string HeadroomSource(const QuotaLedger& ledger, int q);
// Room queue q keeps now: max(0, headroom - its allocated GPUs); 0 without headroom.
int64_t HeadroomKept(const QuotaLedger& ledger, int q);
// Ok, or Unschedulable naming the queue whose headroom `w` (already placed in `cluster`) would eat.
Status CheckHeadroom(const QuotaLedger& ledger, const ClusterState& cluster, const Workload& w, int leaf);
// Whether leaf queue q's pending work asking `gpus` is within its headroom (may take room back).
bool WithinHeadroom(const QuotaLedger& ledger, int q, int64_t gpus);

}  // namespace tidal
