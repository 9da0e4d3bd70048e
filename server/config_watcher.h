// ConfigWatcher: hot reload of the engine config file.
//
// Polls the file's modification time and size every `interval`; on a change it parses the file
// with ParseServedConfig (config_load.h: ParseEngineConfig and the rollout gate's failOn) and, if valid, applies it through Engine::Reconfigure. An invalid file is
// refused: the errors are logged and kept (LastError(), served on /config), and the last good
// config keeps running. Counts of reload results are kept for metrics. A file that cannot be read
// (deleted, no permission) is refused the same way, once when it becomes unreadable (logged,
// counted, decision log config-refused), and read again at every poll until it can be.
//
// Versions (GitOps drift, core/io/document_diff.h): the version of the config the engine runs (the
// file as it was at the start or at the last good reload) and of the file now. They differ (drift)
// when the file holds an edit the engine refused or cannot read: served on /config and as
// tidal_config_info / tidal_config_drift.
//
// Safe rollout (engine/rollout.h): with the running config's rollout.watchSeconds, each activated
// config is watched that long (CheckOnce reads the engine's signals at every poll); a breach rolls
// back to the previous config and version (the file keeps the bad one: drift), counted in
// tidal_config_rollbacks_total and written to the decision log (config-rolled-back, with both
// versions and why). The rolled-back version is not activated again until the file changes.
// Settings read at start only (config_load.h, StartOnlyChanges): a reload that changes one is
// activated for the rest, and the change is reported (a warning, restart_needed in the decision
// log line and on /config) until the engine restarts or a config puts the value back.
// Threading: one polling thread owned by the watcher; LastError/Counts are safe from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/observability.h"
#include "engine/rollout.h"

namespace tidal {

class ConfigWatcher {
 public:
  struct Counts {
    int64_t success = 0, failure = 0, rollbacks = 0;
  };
  struct Versions {
    std::string running;       // DocumentVersion of the config the engine runs
    std::string file;          // of the file now ("" when it cannot be read)
    nlohmann::json running_doc;  // that config as the document it was read from
    bool drift() const { return file != running; }
  };
  ConfigWatcher(Engine& engine, std::string path, std::chrono::milliseconds interval)
      : engine_(engine), path_(std::move(path)), interval_(interval) {}
  ~ConfigWatcher() { Stop(); }
  void Start();
  void Stop();
  // Checks once (the polling thread calls this); returns true if a reload was attempted.
  bool CheckOnce();
  std::string LastError() const;
  Counts counts() const;
  Versions versions() const;
  const std::string& path() const { return path_; }
  // The start-only fields whose value in the running config the engine does not apply yet (it
  // started with another; config_load.h StartOnlyChanges). Empty when nothing waits for a restart.
  std::vector<std::string> RestartNeeded() const;
  // A new config is being watched (its window is open).
  bool Watching() const;
  // Where every reload goes in the decision log (outcome config-activated or config-refused, with
  // the version it runs and the file's); null = nowhere. Safe to set while the watcher runs.
  void set_decision_log(DecisionLog* log) { decision_log_.store(log); }
  // The clock of rollout watches (unix seconds; the system clock by default). Set before Start.
  void set_clock(std::function<int64_t()> clock) { clock_ = std::move(clock); }

 private:
  Engine& engine_;
  std::string path_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::filesystem::file_time_type last_mtime_{};
  uintmax_t last_size_ = 0;
  bool seen_ = false;
  bool unreadable_ = false;  // the last read failed (RefuseUnreadable reported it)
  std::string last_error_;
  Counts counts_;
  Versions versions_;
  // The config the engine runs (parsed), the one before it while a watch is open, the watch.
  struct Running {
    EngineConfig cfg;
    std::string version;
    nlohmann::json doc;
  };
  std::optional<Running> running_, previous_;
  std::optional<EngineConfig> started_;     // the config the engine was started with (the baseline's)
  std::vector<std::string> restart_needed_;  // StartOnlyChanges(started_, running_)
  void NoteRestartNeededLocked();            // recomputes restart_needed_ after running_ changed
  std::optional<RolloutWatch> watch_;
  std::string rolled_back_;  // the version last rolled back: not activated again as it is
  // The file could not be read: refused (counted, logged) once per time it becomes unreadable.
  bool RefuseUnreadable(const Status& why);
  void OpenWatchLocked(const RolloutSignals& before, const nlohmann::json& doc);
  void CheckRollout();
  std::atomic<DecisionLog*> decision_log_{nullptr};
  std::function<int64_t()> clock_ = [] {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  std::thread thread_;
};

}  // namespace tidal
