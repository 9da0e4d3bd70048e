// priority: the default QueueSort. Order of the pending queue:
//   1. higher priority first;
//   2. then earlier submit time;
//   3. then (framework tie-break) workload id.
// Threading: stateless; safe anywhere.
#pragma once

#include <array>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/api/plugin.h"
#include "core/framework/registry.h"

namespace tidal::plugins {

class PrioritySort final : public QueueSortPlugin {
 public:
  static constexpr const char* kName = "priority";
  std::string_view Name() const override { return kName; }
  bool Less(const Workload& a, const Workload& b) const override;
  bool SortKey(const Workload& w, std::array<int64_t, 3>* key) const override {
    *key = {0, -static_cast<int64_t>(w.priority), w.submit_time_s};
    return true;
  }
  bool QueueRank(int32_t /*queue_id*/, int64_t* rank) const override {  // no queue part
    *rank = 0;
    return true;
  }
  static StatusOr<std::unique_ptr<Plugin>> New(const nlohmann::json& args, const PluginContext& ctx);
};

}  // namespace tidal::plugins
