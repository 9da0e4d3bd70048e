// The state file as tidal-engine reads and writes it (cmd/tidal_engine/state_file.h): a file that
// cannot be read whole refuses the start, naming the file and what is wrong, instead of starting
// without the usage history and the doors' nodes and overwriting the file at the first save (before,
// a file cut short was a warning, and 30 s later, or at SIGTERM, a file of zeros replaced it). A
// part malformed inside a readable file is skipped and named. Writes are temp file + fsync + rename
// + directory fsync; a failed write leaves the last complete file and no temporary beside it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cmd/tidal_engine/state_file.h"

namespace tidal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class StateFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tidal-state-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/ledger.json";
    engine_ = NewEngine();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(dir_, ec);
  }
  std::unique_ptr<Engine> NewEngine() {
    auto cfg = ParseEngineConfig("queues:\n  - name: qa\n    weight: 1\n  - name: qb\n    weight: 1\n", "t.yaml");
    EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto e = Engine::Create(*cfg, [this] { return now_; });
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return std::move(e).value();
  }
  void Write(const std::string& text) { std::ofstream(path_, std::ios::binary) << text; }
  std::string Contents(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::vector<std::string> Files() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string Refusal(const std::string& text) {
    Write(text);
    auto r = ReadStateFile(path_, *engine_);
    EXPECT_FALSE(r.ok()) << "loaded: " << text;
    return r.ok() ? std::string() : r.status().Message();
  }
  double Usage(Engine& e, const std::string& q) {
    return nlohmann::json::parse(e.SaveLedger())["usage"][q]["gpus"].get<double>();
  }
  std::string dir_, path_;
  int64_t now_ = 1000;
  std::unique_ptr<Engine> engine_;
};

TEST_F(StateFileTest, NoFileIsAFirstStart) {
  auto r = ReadStateFile(path_, *engine_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->found);
}

TEST_F(StateFileTest, AFileCutShortRefusesTheStartNamingTheFileAndWhere) {
  const std::string cut = R"({"time": 900, "usage": {"qa": {"gpus": 36)";
  const std::string m = Refusal(cut);
  EXPECT_THAT(m, HasSubstr("--state-file " + path_ + ": not JSON (41 bytes, cut short?): parse error at line 1, column 42"));
  EXPECT_THAT(m, HasSubstr("mv " + path_ + " " + path_ + ".bad"));
  EXPECT_EQ(Contents(path_), cut) << "left as it was, for whoever recovers it";
  EXPECT_EQ(Usage(*engine_, "qa"), 0);
}

TEST_F(StateFileTest, EmptyAndBlankFilesAreRefused) {
  EXPECT_THAT(Refusal(""), HasSubstr(path_ + ": empty (0 bytes;"));
  EXPECT_THAT(Refusal(" \n"), HasSubstr(path_ + ": empty (2 bytes;"));
}

TEST_F(StateFileTest, ShapesThatHoldNoUsageAreRefusedNamingTheField) {
  EXPECT_THAT(Refusal("[1, 2]"), HasSubstr(path_ + ": expected a JSON object, found array"));
  EXPECT_THAT(Refusal(R"({"usage": {}})"), HasSubstr(path_ + ": time: expected an integer (unix seconds), found none"));
  EXPECT_THAT(Refusal(R"({"time": 9.5, "usage": {}})"), HasSubstr("time: expected an integer (unix seconds), found 9.5"));
  EXPECT_THAT(Refusal(R"({"time": 900, "usage": [1]})"), HasSubstr("usage: expected {queue: {resource: number}}, found array"));
  EXPECT_THAT(Refusal(R"({"time": 900, "usage": {}, "doorNodes": {"slurm": ["n1"]}, "version": 2})"),
              HasSubstr(path_ + ": version: 2 (written by a newer engine; this one reads up to 1)"));
  EXPECT_THAT(Refusal(R"({"time": 900, "usage": {}, "version": "1"})"), HasSubstr("version: expected a positive integer"));
  EXPECT_TRUE(engine_->Stats().awaiting_doors.empty()) << "nothing of a refused file is loaded";
}

TEST_F(StateFileTest, ADirectoryOrAnUnreadableFileIsRefused) {
  std::filesystem::create_directory(path_);
  auto r = ReadStateFile(path_, *engine_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().Message(), HasSubstr("--state-file " + path_ + ": is a directory, not a file"));
  std::filesystem::remove(path_);
  if (geteuid() == 0) GTEST_SKIP() << "root reads a file of mode 000";
  Write(R"({"time": 900, "usage": {}})");
  ASSERT_EQ(chmod(path_.c_str(), 0), 0);
  r = ReadStateFile(path_, *engine_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().Message(), HasSubstr(path_ + ": cannot open: Permission denied"));
}

TEST_F(StateFileTest, AMalformedPartIsSkippedAndNamedAndTheRestApplies) {
  Write(R"({"time": 1000, "usage": {"qa": {"gpus": -7}, "qb": {"gpus": 1800}, "old": {"gpus": 5}},)"
        R"( "doorNodes": {"slurm": ["n1"]}, "quotas2": {}})");
  auto r = ReadStateFile(path_, *engine_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->found);
  EXPECT_THAT(r->warnings, ::testing::UnorderedElementsAre(
                               "quotas2: not a key this engine knows (a newer engine's?); ignored",
                               "usage.qa.gpus: -7 is not a usage (>= 0 and finite, at most 1e18); skipped",
                               "usage.old: queue not configured; its usage history dropped"));
  EXPECT_EQ(Usage(*engine_, "qb"), 1800);
  EXPECT_THAT(engine_->Stats().awaiting_doors, ElementsAre("slurm"));
}

TEST_F(StateFileTest, WhatIsWrittenReadsBackWithItsVersion) {
  Write(R"({"time": 1000, "usage": {"qa": {"gpus": 3600}}, "doorNodes": {"slurm": ["n1"]}})");  // an older engine's
  ASSERT_TRUE(ReadStateFile(path_, *engine_).ok());
  const std::string tmp = StateFileTemporary(path_, "h", 42);
  ASSERT_TRUE(WriteStateFile(path_, tmp, StateFileText(engine_->SaveLedger())).ok());
  EXPECT_THAT(Files(), ElementsAre("ledger.json")) << "the temporary is renamed, not left";
  EXPECT_EQ(nlohmann::json::parse(Contents(path_))["version"], kStateFileVersion);
  auto again = NewEngine();
  auto r = ReadStateFile(path_, *again);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->warnings, IsEmpty());
  EXPECT_EQ(Usage(*again, "qa"), 3600);
  EXPECT_THAT(again->Stats().awaiting_doors, ElementsAre("slurm"));
}

TEST_F(StateFileTest, AFailedWriteLeavesTheLastCompleteFileAndNoTemporary) {
  Write("{\"time\": 1, \"usage\": {}}");
  // The rename fails: the path became a directory (the write itself cannot be made to fail as root).
  const std::string over_dir = dir_ + "/sub";
  std::filesystem::create_directory(over_dir);
  std::ofstream(over_dir + "/x") << "x";
  Status s = WriteStateFile(over_dir, over_dir + ".tmp.h.1", "{}");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.Message(), HasSubstr("cannot write state file " + over_dir + ": renaming over it " + over_dir + ".tmp.h.1"));
  // The temporary cannot be created: a directory that is gone.
  s = WriteStateFile(path_, dir_ + "/gone/ledger.json.tmp.h.1", "{}");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.Message(), HasSubstr("creating " + dir_ + "/gone/ledger.json.tmp.h.1: No such file or directory"));
  EXPECT_THAT(Files(), ElementsAre("ledger.json", "sub"));
  EXPECT_EQ(Contents(path_), "{\"time\": 1, \"usage\": {}}");
}

// kill -9 while writing leaves PATH.tmp.HOST.PID: the next start of this host removes its own
// host's leftovers, never another host's (replicas may share a volume) nor its own live one.
TEST_F(StateFileTest, TemporariesLeftByAKilledProcessAreRemovedAtStart) {
  for (const char* f : {"ledger.json.tmp.h.17", "ledger.json.tmp.h.99", "ledger.json.tmp.other.17", "ledger.json.tmp.h.x1",
                        "ledger.json"}) {
    std::ofstream(dir_ + "/" + f) << "{";
  }
  EXPECT_THAT(RemoveStaleStateTemporaries(path_, "h", 99), ElementsAre(dir_ + "/ledger.json.tmp.h.17"));
  EXPECT_THAT(Files(), ElementsAre("ledger.json", "ledger.json.tmp.h.99", "ledger.json.tmp.h.x1", "ledger.json.tmp.other.17"));
}

}  // namespace
}  // namespace tidal
