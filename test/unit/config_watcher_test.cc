// ConfigWatcher (server/config_watcher.h) when the watched file cannot be read: the edit is refused
// once, like an invalid file (counted, in the decision log as config-refused, drift), the running
// config stays, and the file is read again at every poll until it can be, even when it comes back
// with the modification time and size it had. A reload changing a start-only setting names it.
// Threading: single-threaded; the watcher is driven by CheckOnce.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/observability.h"
#include "server/config_watcher.h"

namespace tidal {
namespace {

namespace fs = std::filesystem;

constexpr const char* kConfig = "queues:\n  - {name: team}\n";

class ConfigWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("tidal-watch-" + std::to_string(::getpid()) + ".yaml")).string();
    std::ofstream(path_, std::ios::trunc) << kConfig;
    auto cfg = ParseEngineConfig(kConfig, path_);
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    engine_ = std::move(Engine::Create(*cfg, [] { return int64_t{1000}; })).value();
    log_file_ = std::tmpfile();
    log_ = std::make_unique<DecisionLog>(log_file_, 1000.0);
    watcher_ = std::make_unique<ConfigWatcher>(*engine_, path_, std::chrono::milliseconds(1000));
    watcher_->set_decision_log(log_.get());
    watcher_->CheckOnce();  // the baseline
  }
  void TearDown() override {
    watcher_.reset();
    if (log_file_ != nullptr) std::fclose(log_file_);
    fs::remove(path_);
    fs::remove(path_ + ".bak");
  }
  std::string Log() {
    std::fflush(log_file_);
    std::rewind(log_file_);
    std::string out;
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, log_file_)) out.append(buf, n);
    return out;
  }

  std::string path_;
  std::unique_ptr<Engine> engine_;
  FILE* log_file_ = nullptr;
  std::unique_ptr<DecisionLog> log_;
  std::unique_ptr<ConfigWatcher> watcher_;
};

// Regression: a deleted config file was only a drift: no log line, no tidal_config_reloads_total
// {result="failure"}, nothing in the decision log; and a copy put back with the old modification
// time and size was never read again, so drift stayed 1 with "cannot read" as the last error.
TEST_F(ConfigWatcherTest, AFileThatCannotBeReadIsRefusedOnceAndReadAgainWhenItIsBack) {
  const std::string running = watcher_->versions().running;
  ASSERT_FALSE(running.empty());
  fs::copy_file(path_, path_ + ".bak");
  fs::last_write_time(path_ + ".bak", fs::last_write_time(path_));  // the same mtime and size: cp -p
  fs::remove(path_);
  EXPECT_TRUE(watcher_->CheckOnce()) << "a reload was attempted and refused";
  EXPECT_EQ(watcher_->counts().failure, 1);
  EXPECT_NE(watcher_->LastError().find("cannot read"), std::string::npos) << watcher_->LastError();
  EXPECT_TRUE(watcher_->versions().drift());
  EXPECT_EQ(watcher_->versions().running, running) << "the running config stays";
  EXPECT_NE(Log().find("\"config-refused\""), std::string::npos) << Log();
  EXPECT_FALSE(watcher_->CheckOnce()) << "reported once, not at every poll";
  EXPECT_EQ(watcher_->counts().failure, 1);

  fs::rename(path_ + ".bak", path_);
  EXPECT_TRUE(watcher_->CheckOnce());
  EXPECT_FALSE(watcher_->versions().drift()) << watcher_->LastError();
  EXPECT_EQ(watcher_->versions().running, running);
  EXPECT_EQ(watcher_->LastError(), "");
  EXPECT_EQ(watcher_->counts().success, 1);

  fs::remove(path_);  // unreadable again: reported again
  EXPECT_TRUE(watcher_->CheckOnce());
  EXPECT_EQ(watcher_->counts().failure, 2);
}

// Regression: a reload that changed a start-only setting (reservations.refreshInBackground,
// frontDoors) was activated and served on /config as the running config, while the engine went on
// with the value it started with, and nothing said so. Now the change is named (RestartNeeded,
// restart_needed in the decision log line) until a config puts the value back.
TEST_F(ConfigWatcherTest, AStartOnlySettingChangedByAReloadIsReportedAsNeedingARestart) {
  EXPECT_TRUE(watcher_->RestartNeeded().empty());
  auto write = [&](const std::string& text, int n) {
    std::ofstream(path_, std::ios::trunc) << text;
    fs::last_write_time(path_, fs::file_time_type::clock::now() + std::chrono::seconds(n));
  };
  write(std::string(kConfig) + "reservations: {refreshInBackground: true}\nfrontDoors: [kubernetes]\n", 1);
  ASSERT_TRUE(watcher_->CheckOnce());
  EXPECT_EQ(watcher_->counts().success, 1) << watcher_->LastError();
  EXPECT_EQ(watcher_->RestartNeeded(), (std::vector<std::string>{"reservations.refreshInBackground", "frontDoors"}));
  EXPECT_NE(Log().find("\"restart_needed\":[\"reservations.refreshInBackground\",\"frontDoors\"]"), std::string::npos) << Log();
  write(std::string(kConfig) + "usageHalfLife: 2d\n", 2);  // back to the values it started with
  ASSERT_TRUE(watcher_->CheckOnce());
  EXPECT_TRUE(watcher_->RestartNeeded().empty());
}

}  // namespace
}  // namespace tidal
