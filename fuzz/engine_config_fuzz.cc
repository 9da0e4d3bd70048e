// Fuzz target: the engine config file (YAML/JSON text) -> ParseEngineConfig (engine/engine_config.cc:
// document, fields, topology levels, profile, queue config and its validation) and, when it is
// accepted, Engine::Create on it (queue tree, plugin profile). Any input must give a config or a
// Status naming the field, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/engine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto cfg = tidal::ParseEngineConfig(text, "fuzz.yaml");
  if (!cfg.ok()) return 0;
  auto engine = tidal::Engine::Create(std::move(cfg).value(), [] { return int64_t{1700000000}; });
  (void)engine;
  return 0;
}
