// Builders of the engine's front-door objects for engine tests: 8-GPU nodes with the default
// topology labels and Tidal pods (optionally gang members). Plain values; no state.
#pragma once

#include <string>

#include "engine/engine.h"

namespace tidal::testing {

// An 8-GPU node in block b0 under leaf `leaf` and NVLink domain `nvl`.
inline NodeInfo GpuNode(const std::string& name, const std::string& leaf, const std::string& nvl) {
  NodeInfo n;
  n.name = name;
  n.labels = {{"topology.tidal.dev/block", "b0"}, {"topology.tidal.dev/leaf", leaf}, {"topology.tidal.dev/nvlink", nvl}};
  n.capacity = Resources{8, 64000, int64_t{512} << 30};
  return n;
}

// A pending tidal-scheduler pod "team/<name>" (uid "uid-<name>") asking for `gpus`; a member of
// `gang` of `size` when gang is not empty.
inline PodInfo GangPod(const std::string& name, const std::string& gang, int size, int64_t gpus = 8) {
  PodInfo p;
  p.uid = "uid-" + name;
  p.ns = "team";
  p.name = name;
  p.scheduler_name = "tidal-scheduler";
  p.request = Resources{gpus, 1000, 1 << 30};
  if (!gang.empty()) p.labels = {{kLabelGang, gang}, {kLabelGangSize, std::to_string(size)}};
  return p;
}

// A lone pending pod of `gpus` (GangPod): preemptible or not, with a checkpoint-on-notice ("" = none)
// and a runtime limit ("" = none): a perishable window's candidate filler.
inline PodInfo FillerPod(const std::string& name, bool preemptible, const std::string& notice, const std::string& limit = "",
                         int64_t gpus = 8) {
  PodInfo p = GangPod(name, "", 1, gpus);
  if (preemptible) p.labels[kLabelPreemptible] = "true";
  if (!notice.empty()) p.annotations[kLabelCheckpointOnNotice] = notice;
  if (!limit.empty()) p.annotations[kLabelRuntimeLimit] = limit;
  return p;
}

// `p` bound to `node` and running since `start`.
inline PodInfo RunningOn(PodInfo p, const std::string& node, int64_t start) {
  p.node_name = node;
  p.phase = PodPhase::kRunning;
  p.start_unix = start;
  return p;
}

// A lone 8-GPU pod `name` (GangPod) running on `node` since `start` that checkpoints on 60 s notice.
inline PodInfo CheckpointingPod(const std::string& name, const std::string& node, int64_t start) {
  PodInfo p = GangPod(name, "", 1);
  p.annotations[kLabelCheckpointOnNotice] = "60s";
  p.node_name = node;
  p.phase = PodPhase::kRunning;
  p.start_unix = start;
  return p;
}

// Member i of Slurm job `job` (gang "slurm/<job>" of `size`), as tidal-slurm reports it; running
// on `node` when one is given.
inline PodInfo SlurmMember(const std::string& job, int i, int size, const std::string& queue, int64_t gpus = 8,
                           const std::string& node = "") {
  PodInfo p;
  p.door = FrontDoor::kSlurm;
  p.uid = "slurm/" + job + "#" + std::to_string(i);
  p.ns = "slurm";
  p.name = job + "#" + std::to_string(i);
  p.request = Resources{gpus, 0, 0};
  p.annotations = {{kLabelGang, job}, {kLabelGangSize, std::to_string(size)}, {kLabelQueue, queue}};
  if (!node.empty()) {
    p.node_name = node;
    p.phase = PodPhase::kRunning;
  }
  return p;
}

}  // namespace tidal::testing
