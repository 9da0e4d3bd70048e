// tidalctl subcommands. Each takes the arguments after its name and returns the exit code:
// 0 success, 1 the command ran but found a problem (e.g. an invalid file), 2 bad usage.
#pragma once

#include <string>
#include <vector>

#include "cmd/flags.h"

namespace tidal::cli {


// GET BASE/PATH of tidal-engine's HTTP server (engine_client.cc). BASE is http://HOST:PORT,
// https://HOST:PORT or HOST:PORT; another scheme is refused. False with `err` on a transport error,
// saying what happened: connection refused, timed out, not an HTTP server (the gRPC port?). With
// a token file, sends it as a bearer token.
bool HttpGet(const std::string& base, const std::string& token_file, const std::string& path, int* code,
             std::string* body, std::string* err);
// --token-file, or $TIDAL_ENGINE_TOKEN_FILE.
std::string TokenFile(const Flags& flags);

int Place(const Args& args);
int Config(const Args& args);
int Explain(const Args& args);
int Queues(const Args& args);
int Sim(const Args& args);
int Gen(const Args& args);  // tidalctl gen (gen.cc)
int SimSnapshot(const Args& args);  // tidalctl sim --snapshot (sim_snapshot.cc)
int Snapshot(const Args& args);
int Drain(const Args& args);
int Waves(const Args& args);


}  // namespace tidal::cli
