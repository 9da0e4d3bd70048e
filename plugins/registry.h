// The explicit list of Tidal's built-in plugins. Adding a plugin = one line in registry.cc.
#pragma once

#include "core/framework/registry.h"

namespace tidal::plugins {

// Registers every built-in plugin; fails (naming it) if a name is already taken.
Status RegisterAll(Registry& registry);
Registry DefaultRegistry();

}  // namespace tidal::plugins
