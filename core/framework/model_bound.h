// Whether a workload's GPU model (Workload::gpu_model, the pod key tidal.dev/gpu-model or a Slurm
// job's --gres type) can ever hold it: the nodes of that model, healthy and empty, in one domain
// of its required level when it has one. The aggregates behind "could this ever fit"
// (ClusterState::StaticMemberCapacity) count the nodes of every model, so a gang of a model with
// too few nodes (or none: a typo) passed that check and waited for ever with a capacity reason.
// A node's GPU model never changes once the ClusterState is built (a node added or changed later,
// a Sync, builds a new one), so the refusal holds until the nodes change; the front doors try the
// gang again then (kube-scheduler requeues on node events, tidal-slurm re-plans every pass).
// Scans the nodes: called only when a search found nothing, and only for a workload naming a model.
// Threading: a pure function of its arguments.
#pragma once

#include <optional>

#include "core/api/status.h"
#include "core/api/workload.h"
#include "core/framework/placement.h"
#include "core/state/cluster_state.h"

namespace tidal {

// UnschedulableAndUnresolvable naming tidal.dev/gpu-model when the nodes of w's GPU model could
// never hold c.members members of g GPUs where c allows them; nullopt when they could, or when w
// names no model.
std::optional<Status> ModelNeverFits(const ClusterState& state, const Workload& w, const PlacementConstraints& c, int64_t g);

}  // namespace tidal
