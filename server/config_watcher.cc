#include "server/config_watcher.h"

#include <spdlog/spdlog.h>

#include "core/io/document.h"
#include "core/io/document_diff.h"
#include "core/state/queues.h"
#include "server/config_load.h"
#include "server/dry_run_gate.h"

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
  CheckRollout();
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(path_, ec);
  const auto size = ec ? 0 : std::filesystem::file_size(path_, ec);
  bool first = false;
  if (!ec) {
    std::lock_guard<std::mutex> lock(mu_);
    // A file that could not be read is read again at every poll: it may come back with the
    // modification time and size it had (a restored copy, a permission fixed).
    const bool changed = !seen_ || unreadable_ || mtime != last_mtime_ || size != last_size_;
    first = !seen_;
    seen_ = true;
    last_mtime_ = mtime;
    last_size_ = size;
    if (!changed) return false;
  }
  // One read of the file for both its version and the reload.
  auto text = ec ? StatusOr<std::string>(Status::Error(path_ + ": cannot read: " + ec.message())) : ReadFile(path_);
  if (!text.ok() && !first) return RefuseUnreadable(text.status());
  nlohmann::json doc;
  std::string version;
  if (text.ok()) {
    auto d = ParseDocument(*text, path_);
    if (d.ok()) doc = d->root;
    version = d.ok() ? DocumentVersion(doc) : BytesVersion(*text);
  }
  StatusOr<EngineConfig> cfg = text.ok() ? ParseServedConfig(*text, path_) : StatusOr<EngineConfig>(text.status());
  if (first) {  // what the engine was started with
    std::lock_guard<std::mutex> lock(mu_);
    versions_ = Versions{version, version, doc};
    if (cfg.ok()) running_ = Running{*cfg, version, doc}, started_ = *cfg;
    return false;
  }
  std::string again;
  std::optional<Running> running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!rolled_back_.empty() && version == rolled_back_) again = rolled_back_;
    running = running_;
  }
  // The running config's dry-run gate first (dry_run_gate.h): the new one on the live snapshot.
  nlohmann::json gate;
  const Status gated = cfg.ok() && again.empty() && running ? RunDryRunGate(engine_, {&running->cfg, running->version},
                                                                             {&*cfg, version}, &gate)
                                                            : Status::Ok();
  // Signals before the activation: what the watch compares with (rejections the old config made).
  const bool watched = running && running->cfg.rollout.watch_s > 0;  // the running config's policy watches the next
  const RolloutSignals before = watched && cfg.ok() && again.empty() && gated.ok() ? engine_.RolloutSignalsNow() : RolloutSignals{};
  Status applied = !again.empty() ? Status::Error("version " + again + " was rolled back; it is not activated again "
                                                  "until the file changes")
                   : !cfg.ok()    ? cfg.status()
                   : !gated.ok()  ? gated
                                  : engine_.Reconfigure(*cfg);
  std::lock_guard<std::mutex> lock(mu_);
  unreadable_ = false;
  versions_.file = version;
  if (DecisionLog* log = decision_log_.load(); log != nullptr) {
    nlohmann::json line{{"outcome", applied.ok() ? "config-activated" : "config-refused"},
                        {"file", path_},
                        {"version", version},
                        {"previous", versions_.running}};
    if (!applied.ok()) line["reason"] = applied.reasons();
    if (!gate.is_null()) line["dry_run"] = gate;
    if (applied.ok() && started_) {
      if (auto r = StartOnlyChanges(*started_, *cfg); !r.empty()) line["restart_needed"] = r;
    }
    log->Write(std::move(line));
  }
  if (applied.ok()) {
    counts_.success++;
    last_error_.clear();
    rolled_back_.clear();
    previous_ = running_;
    running_ = Running{*cfg, version, doc};
    NoteRestartNeededLocked();
    OpenWatchLocked(before, doc);
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

void ConfigWatcher::NoteRestartNeededLocked() {
  std::vector<std::string> now = started_ && running_ ? StartOnlyChanges(*started_, running_->cfg) : std::vector<std::string>{};
  if (!now.empty() && now != restart_needed_) {
    std::string fields;
    for (const auto& f : now) fields += (fields.empty() ? "" : ", ") + f;
    spdlog::warn("config {} (version {}): {} changed; read at start only, so the engine keeps the value it started "
                 "with until it restarts",
                 path_, running_->version, fields);
  }
  restart_needed_ = std::move(now);
}

std::vector<std::string> ConfigWatcher::RestartNeeded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return restart_needed_;
}

bool ConfigWatcher::RefuseUnreadable(const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  versions_.file.clear();
  if (unreadable_) return false;  // reported when it became unreadable; nothing new
  unreadable_ = true;
  counts_.failure++;
  last_error_ = why.Message() + "\n";
  if (DecisionLog* log = decision_log_.load(); log != nullptr) {
    log->Write({{"outcome", "config-refused"}, {"file", path_}, {"version", ""}, {"previous", versions_.running},
                {"reason", why.reasons()}});
  }
  spdlog::error("config {} cannot be read, keeping the last good config (version {}): {}", path_, versions_.running,
                why.Message());
  return true;
}

void ConfigWatcher::OpenWatchLocked(const RolloutSignals& before, const nlohmann::json& doc) {
  watch_.reset();
  if (!previous_ || previous_->cfg.rollout.watch_s <= 0) return;  // the running config's policy watches the next
  const int64_t now = clock_();
  RolloutWatch w;
  w.since_s = now;
  w.until_s = now + previous_->cfg.rollout.watch_s;
  w.policy = previous_->cfg.rollout;
  w.at_start = before;
  if (auto tree = QueueTree::Build(previous_->cfg.queues); tree.ok()) {
    for (const auto& q : (*tree)->LeafNames()) w.previous_leaves.insert(q);
  }
  auto section = [](const nlohmann::json& d, const char* k) { return d.is_object() && d.contains(k) ? d.at(k) : nlohmann::json(); };
  w.placement_changed = section(previous_->doc, "topology") != section(doc, "topology") ||
                        section(previous_->doc, "profile") != section(doc, "profile");
  watch_ = std::move(w);
}

void ConfigWatcher::CheckRollout() {
  std::optional<RolloutWatch> w;
  {
    std::lock_guard<std::mutex> lock(mu_);
    w = watch_;
  }
  if (!w) return;
  const RolloutSignals now = engine_.RolloutSignalsNow();
  const std::string breach = w->Breach(now);
  const int64_t t = clock_();
  std::optional<Running> back;
  std::string bad;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!watch_ || watch_->since_s != w->since_s) return;  // replaced meanwhile
    if (breach.empty()) {
      if (t < w->until_s) return;
      watch_.reset();  // the window passed: the config stays
      if (DecisionLog* log = decision_log_.load(); log != nullptr) {
        log->Write({{"outcome", "config-watch-passed"}, {"file", path_}, {"version", versions_.running},
                    {"watched_s", w->until_s - w->since_s}});
      }
      return;
    }
    watch_.reset();
    back = previous_;
    bad = versions_.running;
  }
  if (!back) return;
  const Status rolled = engine_.Reconfigure(back->cfg);
  std::lock_guard<std::mutex> lock(mu_);
  if (DecisionLog* log = decision_log_.load(); log != nullptr) {
    nlohmann::json line{{"outcome", rolled.ok() ? "config-rolled-back" : "config-rollback-failed"},
                        {"file", path_},
                        {"version", back->version},
                        {"rolled_back", bad},
                        {"reason", breach},
                        {"after_s", t - w->since_s}};
    const auto newly = w->NewlyRejected(now);
    if (!newly.empty()) line["newly_rejected"] = newly;
    log->Write(std::move(line));
  }
  if (!rolled.ok()) {
    spdlog::error("config {}: version {} breached its watch ({}); rolling back to {} failed: {}", path_, bad, breach,
                  back->version, rolled.ToString());
    return;
  }
  counts_.rollbacks++;
  rolled_back_ = bad;
  running_ = back;
  NoteRestartNeededLocked();
  previous_.reset();
  versions_.running = back->version;
  versions_.running_doc = back->doc;
  last_error_ = "version " + bad + " rolled back to " + back->version + " after " + std::to_string(t - w->since_s) + " s: " + breach;
  spdlog::error("config {}: {}", path_, last_error_);
}

bool ConfigWatcher::Watching() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watch_.has_value();
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
