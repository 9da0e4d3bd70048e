// The records as Tidal plans with them: what slurmctld reported, read the way Slurm will act on it.
//
//  - A node Tidal drained for a loan to Kubernetes (reason kLentReason) is not drained for the
//    engine: Slurm starts nothing there, the engine decides (its pool).
//  - A pending --exclusive job (OverSubscribe=NO) asks for whole nodes: Slurm starts it only on
//    nodes nothing else runs on, and gives it every CPU, all memory and every GPU there (Slurm
//    22.05: `sbatch --exclusive` with no --gres ran with JOB_GRES=gpu:a100:4). Read as what it
//    asked (1 CPU, no GPU), the engine placed it on a busy node: Slurm kept it pending there
//    (Reason Resources) with its pin, while the engine counted that node's GPUs free for others.
//    Each member asks for the most GPUs, CPUs and memory of a node it may run on (its partitions,
//    --constraint features, not --exclude, within its user's --nodelist): on nodes of one size,
//    exactly a whole node; on mixed sizes, only the largest ones fit (never a pin Slurm cannot
//    start). A running one is charged what Slurm allocated (job_fields.h node_gpus, tres_alloc_str).
//
// Threading: pure functions.
#pragma once

#include "shim/slurm/records.h"

namespace tidal::slurm {

void PlanView(ClusterRecords* rec);

// The whole-node request of pending --exclusive job `j` over `nodes` (PlanView's second rule):
// raises its per-node GPUs, CPUs and memory to the most a node it may run on has. A job no node
// fits is left as it asked (the engine says why it waits).
void AskWholeNodes(const std::vector<NodeRecord>& nodes, JobRecord* j);

}  // namespace tidal::slurm
