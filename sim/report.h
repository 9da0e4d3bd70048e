// Report of a multi-policy replay: `doc` = {"input": {...}, "policies": [ComputeMetrics(...), ...]}.
//   MarkdownReport  tables comparing the policies (headline metrics, then queueing delay by job size)
//   WriteReport     DIR/report.md and DIR/metrics.json (the plots are drawn from metrics.json by
//                   tools/plot/sim_report.py; see cmd/tidalctl/sim.cc)
// Threading: plain functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/api/status.h"

namespace tidal::sim {

// "42 s", "12.5 min", "3.2 h", "4.1 d".
std::string HumanSeconds(double s);
std::string MarkdownReport(const nlohmann::json& doc);
Status WriteReport(const std::string& dir, const nlohmann::json& doc);

}  // namespace tidal::sim
