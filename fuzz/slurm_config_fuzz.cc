// Fuzz target: the Slurm adapter's config file (shim/slurm/config.cc, YAML/JSON) -> ParseAdapterConfig,
// and QueueFor on what it accepted.
#include <cstddef>
#include <cstdint>
#include <string>

#include "shim/slurm/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto cfg = tidal::slurm::ParseAdapterConfig(text, "tidal-slurm.yaml");
  if (!cfg.ok()) return 0;
  (void)tidal::slurm::QueueFor(*cfg, "acct", "gpu", "normal");
  return 0;
}
