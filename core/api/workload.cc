#include "core/api/workload.h"

namespace tidal {

std::string_view FrontDoorName(FrontDoor d) { return d == FrontDoor::kSlurm ? "slurm" : "kubernetes"; }

std::string_view WorkloadClassName(WorkloadClass c) {
  switch (c) {
    case WorkloadClass::kTraining: return "training";
    case WorkloadClass::kInference: return "inference";
    case WorkloadClass::kBatch: return "batch";
    case WorkloadClass::kInteractive: return "interactive";
  }
  return "unknown";
}

StatusOr<WorkloadClass> ParseWorkloadClass(std::string_view text, std::string_view field) {
  for (auto c : {WorkloadClass::kTraining, WorkloadClass::kInference, WorkloadClass::kBatch,
                 WorkloadClass::kInteractive}) {
    if (text == WorkloadClassName(c)) return c;
  }
  return Status::Error(std::string(field) + ": unknown class \"" + std::string(text) +
                       "\" (accepted: training, inference, batch, interactive)");
}

std::string Workload::ShapeString() const {
  std::string s = std::to_string(members);
  if (min_members < members) s = std::to_string(min_members) + ".." + s;
  return s + "x" + std::to_string(per_member.gpus) + "GPU";
}

}  // namespace tidal
