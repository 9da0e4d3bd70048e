// Fuzz target: workload files (core/io/workload_file.cc): YAML/JSON text -> ParseDocument ->
// DecodeWorkloads (names, classes, gang sizes, requests, durations, topology, front doors).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/io/document.h"
#include "core/io/workload_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto doc = tidal::ParseDocument(text, "fuzz.yaml");
  if (!doc.ok()) return 0;
  auto workloads = tidal::DecodeWorkloads(*doc);
  (void)workloads;
  return 0;
}
