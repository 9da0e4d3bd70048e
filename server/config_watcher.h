// ConfigWatcher: hot reload of the engine config file.
//
// Polls the file's modification time and size every `interval`; on a change it parses the file
// with LoadEngineConfig and, if valid, applies it through Engine::Reconfigure. An invalid file is
// refused: the errors are logged and kept (LastError(), served on /config), and the last good
// config keeps running. Counts of reload results are kept for metrics.
// Threading: one polling thread owned by the watcher; LastError/Counts are safe from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "engine/engine.h"

namespace tidal {

class ConfigWatcher {
 public:
  struct Counts {
    int64_t success = 0, failure = 0;
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
  std::string last_error_;
  Counts counts_;
  std::thread thread_;
};

}  // namespace tidal
