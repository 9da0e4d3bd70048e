// Fuzz target: the simulator's trace readers (sim/trace.cc, sim/trace_sacct.cc): philly and generic
// CSV job tables, the YAML/JSON job list and sacct output. The first byte picks the format (auto by
// file name and header, philly, csv, json; its top bit: sacct),
// the bad-row policy and the options (GPUs per node, limit factor, window, load scale, max jobs);
// the rest is the file's text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t sel = data[0], opt = data[1];
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  static const char* const kFormats[] = {"auto", "philly", "csv", "json"};
  static const char* const kFiles[] = {"trace.csv", "trace.json", "trace.yaml", "trace"};
  static const char* const kBounds[] = {"", "3600", "30d", "2017-10-01", "2017-10-03 12:00", "1h", "0", "x"};
  tidal::sim::TraceOptions o;
  o.format = (sel & 128) ? "sacct" : kFormats[sel & 3];
  o.on_bad_row = (sel & 4) ? tidal::sim::TraceOptions::OnBadRow::kFail : tidal::sim::TraceOptions::OnBadRow::kSkip;
  o.gpus_per_node = (sel & 8) ? 4 : 8;
  o.limit_factor = (sel & 16) ? 1.0 : 2.0;
  o.load_scale = (sel & 32) ? 2.5 : 1.0;
  o.max_jobs = (sel & 64) ? 3 : 0;
  o.from = kBounds[opt & 7];
  o.to = kBounds[(opt >> 3) & 7];
  auto t = tidal::sim::ParseTrace(text, kFiles[(opt >> 6) & 3], o);
  (void)t;
  return 0;
}
