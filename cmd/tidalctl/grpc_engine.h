// The gRPC link of the tidalctl commands that call tidal-engine's RPCs (drain, waves): the
// --engine address and the mutual TLS flags, the same as tidal-slurm's engine link
// (server/grpc_client_tls.h). Threading: single-threaded use by one command.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "cmd/flags.h"
#include "core/api/status.h"
#include "tidal/v1/engine.grpc.pb.h"

namespace tidal::cli {

// The flags EngineStub reads, for Flags::Parse (append the command's own).
std::vector<std::string> EngineFlagNames();
// The address of the engine the flags name (default unix:///tmp/tidal-engine.sock).
std::string EngineAddress(const Flags& flags);
// Ok for a gRPC address (unix:///PATH, HOST:PORT, or a gRPC target such as dns:///HOST:PORT);
// an error for a URL of another scheme (http://, ftp://), which is the engine's HTTP port or no engine.
Status CheckGrpcAddress(const std::string& address);
// A stub on the engine the flags name; an error naming the flag otherwise.
StatusOr<std::unique_ptr<v1::Engine::Stub>> EngineStub(const Flags& flags);

}  // namespace tidal::cli
