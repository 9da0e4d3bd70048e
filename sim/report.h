// Report of a multi-policy replay: `doc` = {"input": {...}, "policies": [ComputeMetrics(...), ...]}.
//   MarkdownReport  tables comparing the policies (headline metrics, then queueing delay by job size)
//   WriteReport     DIR/report.md and DIR/metrics.json, each write checked (the plots are drawn from metrics.json by
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
// Each file through WriteTextFile: an error names the file that was not written and why.
Status WriteReport(const std::string& dir, const nlohmann::json& doc);
// `doc` as JSON text. A string that is not valid UTF-8 (the trace readers convert theirs, trace.h
// AsUtf8) is written with U+FFFD in place of the bad bytes instead of throwing.
std::string DumpJson(const nlohmann::json& doc, int indent = -1);
// Writes `text` to `path` and checks that all of it reached the file (written, flushed, closed):
// "cannot write PATH: reason" otherwise (a full disk, /dev/full).
Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace tidal::sim
