#include "server/config_watcher.h"

#include <spdlog/spdlog.h>

namespace tidal {

void ConfigWatcher::Start() {
  CheckOnce();  // record the current version as the baseline
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, interval_, [this] { return stop_; });
      if (stop_) break;
      lock.unlock();
      CheckOnce();
      lock.lock();
    }
  });
}

void ConfigWatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool ConfigWatcher::CheckOnce() {
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(path_, ec);
  const auto size = ec ? 0 : std::filesystem::file_size(path_, ec);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ec) {
      last_error_ = path_ + ": cannot read: " + ec.message();
      return false;
    }
    const bool changed = !seen_ || mtime != last_mtime_ || size != last_size_;
    const bool first = !seen_;
    seen_ = true;
    last_mtime_ = mtime;
    last_size_ = size;
    if (!changed || first) return false;
  }
  auto cfg = LoadEngineConfig(path_);
  Status applied = cfg.ok() ? engine_.Reconfigure(*cfg) : cfg.status();
  std::lock_guard<std::mutex> lock(mu_);
  if (applied.ok()) {
    counts_.success++;
    last_error_.clear();
    spdlog::info("config {} reloaded", path_);
  } else {
    counts_.failure++;
    last_error_.clear();
    for (const auto& r : applied.reasons()) last_error_ += r + "\n";
    spdlog::error("config {} refused, keeping the last good config:\n{}", path_, last_error_);
  }
  return true;
}

std::string ConfigWatcher::LastError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

ConfigWatcher::Counts ConfigWatcher::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

}  // namespace tidal
