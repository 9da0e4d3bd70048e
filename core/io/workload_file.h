// Workload files: a list of gangs to place, from YAML/JSON.
//
//   workloads:
//     - name: llm-pretrain          # required, unique
//       queue: research             # default "default"
//       class: training             # training | inference | batch | interactive (default batch)
//       members: 16                 # gang size (default 1)
//       minMembers: 16              # elastic lower bound (default = members)
//       request: {gpus: 8, cpu: 64, memory: 512Gi}   # per member, required
//       priority: 100
//       preemptible: false
//       runtimeLimit: 12h
//       submitTime: 0               # seconds (or a duration) on the engine clock
//       checkpointInterval: 30m     # work at risk on preemption is the time since the last one
//       topology: {required: leaf, preferred: nvlink}
//       gpuModel: h100
//       frontDoor: kubernetes       # kubernetes | slurm
// A top-level list is accepted too. Errors read "file:line: workloads[2].request.gpus: reason".
#pragma once

#include <string>
#include <vector>

#include "core/api/workload.h"
#include "core/io/document.h"

namespace tidal {

StatusOr<Workload> DecodeWorkload(const nlohmann::json& j, const std::string& path);
StatusOr<std::vector<Workload>> DecodeWorkloads(const Document& doc, const std::string& field = "workloads");
StatusOr<std::vector<Workload>> LoadWorkloadsFile(const std::string& path);

}  // namespace tidal
