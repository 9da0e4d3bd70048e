// tidal-engine's gRPC listener flags (server/grpc_listener.h): --tls-cert, --tls-key,
// --tls-client-ca, --insecure, --socket-mode. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "cmd/flags.h"
#include "server/grpc_listener.h"

namespace tidal {

extern const std::vector<std::string> kListenFlags;
extern const char* const kListenUsage;

// The listener options from the parsed flags; errors name the flag.
StatusOr<ListenOptions> ListenOptionsFromFlags(const cli::Flags& flags, const std::string& listen);

}  // namespace tidal
