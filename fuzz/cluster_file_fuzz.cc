// Fuzz target: cluster files (core/io/cluster_file.cc): YAML/JSON text -> ParseDocument ->
// DecodeClusterSpec (levels, fabric generator, switches tree, nodes, overrides) -> ClusterState::Build.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/io/cluster_file.h"
#include "core/io/document.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto doc = tidal::ParseDocument(text, "fuzz.yaml");
  if (!doc.ok()) return 0;
  auto spec = tidal::DecodeClusterSpec(*doc);
  if (!spec.ok()) return 0;
  auto state = tidal::ClusterState::Build(spec->levels, std::move(spec->nodes));
  (void)state;
  return 0;
}
