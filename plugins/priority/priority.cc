#include "plugins/priority/priority.h"

#include "plugins/args.h"

namespace tidal::plugins {

bool PrioritySort::Less(const Workload& a, const Workload& b) const {
  if (a.priority != b.priority) return a.priority > b.priority;
  return a.submit_time_s < b.submit_time_s;
}

StatusOr<std::unique_ptr<Plugin>> PrioritySort::New(const nlohmann::json& args, const PluginContext&) {
  if (Status s = plugin_args::OnlyKeys(args, {}); !s.ok()) return s;
  return std::unique_ptr<Plugin>(std::make_unique<PrioritySort>());
}

}  // namespace tidal::plugins
