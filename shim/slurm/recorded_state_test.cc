// Tidal's recorded-state format round trip, its strictness, and JsonFileApi.
//
// Threading: single-threaded tests.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "shim/slurm/json_state.h"

namespace tidal::slurm {
namespace {

ClusterRecords Sample() {
  ClusterRecords r;
  r.read_unix = 1700000000;
  JobRecord a;
  a.id = "12_3";
  a.job_id = 15;
  a.array_job_id = 12;
  a.array_task_id = 3;
  a.state = JobState::kRunning;
  a.priority = 4294901759u;
  a.nice = -5;
  a.node_count = 2;
  a.gpus_per_node = 8;
  a.gpus_total = 16;
  a.gpu_model = "a100";
  a.nodes = {"gpu01", "gpu02"};
  a.comment = "tidal: placed \"here\"";
  JobRecord b;
  b.id = "20";
  b.job_id = 20;
  b.pending_array_tasks = {0, 1, 2};
  b.array_max_tasks = 2;
  b.state = JobState::kPending;
  b.completing = true;
  b.parse_error = "job 20: bad";
  r.jobs = {a, b};
  NodeRecord n;
  n.name = "gpu01";
  n.state = NodeState::kMixed;
  n.drain = true;
  n.gpus = 8;
  n.gpu_model = "a100";
  n.gpu_types = {{"a100", 8}};
  n.gpus_used = 3;
  n.partitions = {"batch"};
  r.nodes = {n, NodeRecord{}};
  return r;
}

void ExpectSame(const ClusterRecords& x, const ClusterRecords& y) {
  EXPECT_EQ(WriteStateJson(x), WriteStateJson(y));
  ASSERT_EQ(x.jobs.size(), y.jobs.size());
  EXPECT_EQ(x.jobs[0].array_task_id, y.jobs[0].array_task_id);
  EXPECT_EQ(x.jobs[1].pending_array_tasks, y.jobs[1].pending_array_tasks);
  EXPECT_EQ(x.nodes[0].gpu_types, y.nodes[0].gpu_types);
  EXPECT_EQ(x.read_unix, y.read_unix);
  EXPECT_EQ(x.jobs[0].nice, y.jobs[0].nice);
}

TEST(RecordedState, RoundTrips) {
  ClusterRecords in = Sample();
  std::string text = WriteStateJson(in);
  ClusterRecords out;
  Status st = ReadStateJson(text, &out);
  ASSERT_TRUE(st.ok()) << st.Message();
  ExpectSame(in, out);
  EXPECT_EQ(out.jobs[1].node_count, 1u) << "defaults are left out and come back";
  EXPECT_EQ(text.find("\"user\""), std::string::npos) << "compact: default fields are not written";
}

TEST(RecordedState, StrictReading) {
  ClusterRecords out;
  auto error = [&](const std::string& text) { return ReadStateJson(text, &out).Message(); };
  EXPECT_EQ(error(R"({"format":"tidal-slurm-state/2","read_unix":1,"jobs":[],"nodes":[]})"),
            "state: 'format' is not \"tidal-slurm-state/1\"");
  EXPECT_EQ(error(R"({"format":"tidal-slurm-state/1","read_unix":1,"jobs":[{"idd":"1"}],"nodes":[]})"),
            "state: jobs[0]: unknown field 'idd'");
  EXPECT_EQ(error(R"({"format":"tidal-slurm-state/1","read_unix":1,"jobs":[{"priority":-1}],"nodes":[]})"),
            "state: jobs[0]: field 'priority' should be an integer in range, is -1");
  EXPECT_EQ(error(R"({"format":"tidal-slurm-state/1","read_unix":1,"jobs":[{"state":"odd"}],"nodes":[]})"),
            "state: jobs[0]: field 'state' should be a job state name, is \"odd\"");
  EXPECT_EQ(error(R"({"format":"tidal-slurm-state/1","read_unix":1,"jobs":[]})"), "state: no 'nodes' array");
  EXPECT_EQ(error(R"({"format":"tidal-slurm-state/1","read_unix":1,"jobs":[],"nodes":[],"x":1})"),
            "state: unknown key 'x'");
  EXPECT_NE(error("{").find("state: not JSON"), std::string::npos);
}

TEST(JsonFileApi, LoadsAndRecordsWrites) {
  std::string path = ::testing::TempDir() + "/tidal_state_test.json";
  {
    std::ofstream f(path);
    f << WriteStateJson(Sample());
  }
  JsonFileApi api(path);
  ClusterRecords r;
  ASSERT_TRUE(api.Load(&r).ok());
  ExpectSame(Sample(), r);
  api.FailNextLoad(Status::Error("injected"));
  EXPECT_EQ(api.Load(&r).Message(), "injected");
  EXPECT_TRUE(api.Load(&r).ok());

  EXPECT_TRUE(api.Release("12_3", JobPin{{"gpu01"}}, "tidal: go").ok());
  EXPECT_TRUE(api.Hold("20", "tidal: wait", {}).ok());
  api.FailNextWrite(Status::Error("down"));
  EXPECT_FALSE(api.Drain("gpu01", "tidal: k8s").ok());
  EXPECT_TRUE(api.Drain("gpu01", "tidal: k8s").ok());
  EXPECT_TRUE(api.Undrain("gpu01").ok());
  EXPECT_TRUE(api.Requeue("15").ok());
  EXPECT_TRUE(api.SetComment("20", "c").ok());
  using C = JsonFileApi::Call;
  EXPECT_EQ(api.calls(), (std::vector<C>{{"release", "12_3", {"gpu01"}, "tidal: go"},
                                         {"hold", "20", {}, "tidal: wait"},
                                         {"drain", "gpu01", {}, "tidal: k8s"},
                                         {"undrain", "gpu01", {}, ""},
                                         {"requeue", "15", {}, ""},
                                         {"set_comment", "20", {}, "c"}}));
  std::remove(path.c_str());
  JsonFileApi missing(path);
  EXPECT_NE(missing.Load(&r).Message().find("cannot open"), std::string::npos);
}

TEST(JsonFileApi, LoadsSlurmDumps) {
  std::string dir = std::string(TIDAL_SOURCE_DIR) + "/shim/slurm/testdata/";
  JsonFileApi api(dir + "squeue_22.05.json", dir + "sinfo_22.05.json");
  ClusterRecords r;
  Status st = api.Load(&r);
  ASSERT_TRUE(st.ok()) << st.Message();
  EXPECT_EQ(r.jobs.size(), 10u);
  EXPECT_EQ(r.nodes.size(), 4u);
  ClusterRecords again;
  ASSERT_TRUE(ReadStateJson(WriteStateJson(r), &again).ok());
  EXPECT_EQ(WriteStateJson(r), WriteStateJson(again));
  JsonFileApi failing(dir + "squeue_errors.json", dir + "sinfo_22.05.json");
  EXPECT_FALSE(failing.Load(&r).ok());
  EXPECT_EQ(r.jobs.size(), 10u) << "a failed Load leaves *out as it was";
}

}  // namespace
}  // namespace tidal::slurm
