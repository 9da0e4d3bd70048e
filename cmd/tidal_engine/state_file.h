// The state file (--state-file, docs/operations.md "The state file"): reading it into the engine at
// start, and writing it so that a crash, kill -9 or power loss at any moment leaves either the last
// complete file or the new one, never a part of one.
//
// Threading model: no threads or state of its own. ReadStateFile runs on tidal-engine's main thread
// before the servers start; WriteStateFile on the main thread's save loop and once at shutdown.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/api/status.h"
#include "engine/engine.h"

namespace tidal {

// The format this engine writes ("version" in the file) and the newest it reads. A file without
// "version" is an older engine's and reads as 1. Raise it only for a change an older engine would
// misread; a new key an older engine can ignore keeps it.
inline constexpr int kStateFileVersion = 1;

struct StateFileRead {
  bool found = false;                 // false: no file at the path yet (a first start)
  std::vector<std::string> warnings;  // parts skipped, each naming its field; the rest applied
};

// Reads `path` into `engine`. No file: found = false, nothing loaded. Refused (an error naming the
// file and what is wrong, nothing loaded, and the engine does not start): a path that is not a
// regular file (a directory), a file that cannot be read, is empty, is not a JSON object, comes from
// a newer format version, or whose usage part ("time", "usage") is missing or malformed. Starting
// anyway would run without the usage fair share depends on and without the nodes each door
// reported (their gate against double-booking GPUs), and overwrite the file at the first save.
// A part that is malformed inside a readable file (one value, one queue, one door) is skipped and
// listed in `warnings`.
StatusOr<StateFileRead> ReadStateFile(const std::string& path, Engine& engine);

// The document to write: SaveLedger()'s with "version".
std::string StateFileText(const std::string& saved_ledger);

// Writes `text` to `tmp` (created, or truncated), flushes it to the disk (fsync), renames it over
// `path` and flushes the directory, so a reader finds the old file or the new one, whole. On any
// failure `tmp` is removed, `path` is left as it was, and the error names the step and the file.
Status WriteStateFile(const std::string& path, const std::string& tmp, const std::string& text);

// The temporary file of this process: PATH.tmp.HOST.PID (replicas may share a volume).
std::string StateFileTemporary(const std::string& path, const std::string& host, pid_t pid);
// Removes PATH.tmp.HOST.* files other than this process's: left by a process of this host that
// was killed while it wrote. Returns the paths removed.
std::vector<std::string> RemoveStaleStateTemporaries(const std::string& path, const std::string& host, pid_t own);

}  // namespace tidal
