#include "server/config_watcher.h"

#include <spdlog/spdlog.h>

#include "core/io/document.h"
#include "core/io/document_diff.h"

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
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ec) {
      last_error_ = path_ + ": cannot read: " + ec.message();
      versions_.file.clear();
      return false;
    }
    const bool changed = !seen_ || mtime != last_mtime_ || size != last_size_;
    first = !seen_;
    seen_ = true;
    last_mtime_ = mtime;
    last_size_ = size;
    if (!changed) return false;
  }
  // One read of the file for both its version and the reload.
  auto text = ReadFile(path_);
  nlohmann::json doc;
  std::string version;
  if (text.ok()) {
    auto d = ParseDocument(*text, path_);
    if (d.ok()) doc = d->root;
    version = d.ok() ? DocumentVersion(doc) : BytesVersion(*text);
  }
  if (first) {  // what the engine was started with
    std::lock_guard<std::mutex> lock(mu_);
    versions_ = Versions{version, version, doc};
    return false;
  }
  StatusOr<EngineConfig> cfg = text.ok() ? ParseEngineConfig(*text, path_) : StatusOr<EngineConfig>(text.status());
  Status applied = cfg.ok() ? engine_.Reconfigure(*cfg) : cfg.status();
  std::lock_guard<std::mutex> lock(mu_);
  versions_.file = version;
  if (DecisionLog* log = decision_log_.load(); log != nullptr) {
    nlohmann::json line{{"outcome", applied.ok() ? "config-activated" : "config-refused"},
                        {"file", path_},
                        {"version", version},
                        {"previous", versions_.running}};
    if (!applied.ok()) line["reason"] = applied.reasons();
    log->Write(std::move(line));
  }
  if (applied.ok()) {
    counts_.success++;
    last_error_.clear();
    versions_.running = version;
    versions_.running_doc = std::move(doc);
    spdlog::info("config {} reloaded (version {})", path_, version);
  } else {
    counts_.failure++;
    last_error_.clear();
    for (const auto& r : applied.reasons()) last_error_ += r + "\n";
    spdlog::error("config {} refused, keeping the last good config (version {}; the file is {}):\n{}", path_,
                  versions_.running, version, last_error_);
  }
  return true;
}

ConfigWatcher::Versions ConfigWatcher::versions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return versions_;
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
