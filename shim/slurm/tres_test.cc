// TRES / GRES strings as Slurm 22.05 (and 23.02+) prints them, good and absurd.
//
// Threading: single-threaded tests.
#include "shim/slurm/tres.h"

#include <gtest/gtest.h>

namespace tidal::slurm {
namespace {

GpuRequest Gpus(const std::string& text) {
  GpuRequest r;
  Status st = ParseTresGpus("tres_per_node", text, &r);
  EXPECT_TRUE(st.ok()) << text << ": " << st.Message();
  return r;
}

std::string GpusError(const std::string& text) {
  GpuRequest r;
  Status st = ParseTresGpus("tres_per_node", text, &r);
  EXPECT_FALSE(st.ok()) << text;
  return st.Message();
}

TEST(Tres, GpuRequestForms) {
  struct Case {
    std::string text;
    bool found;
    int64_t count;
    std::string model;
  };
  for (const Case& c : std::vector<Case>{
           {"", false, 0, ""},
           {"gres:gpu:a100:4", true, 4, "a100"},
           {"gres:gpu:4", true, 4, ""},
           {"gres:gpu", true, 1, ""},
           {"gres:gpu:a100", true, 1, "a100"},
           {"gres/gpu:a100=4", true, 4, "a100"},
           {"gres/gpu=8", true, 8, ""},
           {"gpu:2", true, 2, ""},
           {"gres:mps:100", false, 0, ""},
           {"gres:gpu:a100:2,gres:mps:100", true, 2, "a100"},
           {"cpu=4,gres/gpu:h100=8;license/x=1", true, 8, "h100"},
           {"gres:gpu:a100:2,gres:gpu:a100:2", true, 4, "a100"},
           {"gres:gpu:2k", true, 2048, ""},
           {"gres:gpu:0", true, 0, ""},
       }) {
    GpuRequest r = Gpus(c.text);
    EXPECT_EQ(r.found, c.found) << c.text;
    EXPECT_EQ(r.count, c.count) << c.text;
    EXPECT_EQ(r.model, c.model) << c.text;
  }
}

TEST(Tres, AbsurdGpuRequestsAreErrors) {
  EXPECT_EQ(GpusError("gres:gpu:a100:x"), "tres_per_node: gpu count 'x' is not a number");
  EXPECT_EQ(GpusError("gres:gpu:-4"), "tres_per_node: gpu count '-4' is negative");
  EXPECT_EQ(GpusError("gres/gpu=4.5"), "tres_per_node: gpu count '4.5' is not a number");
  EXPECT_EQ(GpusError("gres:gpu:a100:2000000"),
            "tres_per_node: gpu count '2000000' is over the limit of 1000000");
  EXPECT_EQ(GpusError("gres:gpu:99999999999999999999"), "tres_per_node: gpu count '99999999999999999999' overflows");
  EXPECT_EQ(GpusError("gres:gpu:9999999999999p"), "tres_per_node: gpu count '9999999999999p' overflows");
  EXPECT_EQ(GpusError("gres/gpu="), "tres_per_node: gpu count is empty");
  EXPECT_NE(GpusError("gres:gpu:a:b:c").find("cannot read GPU entry"), std::string::npos);
  EXPECT_NE(GpusError("gres:gpu::4").find("is not a name"), std::string::npos);
  EXPECT_NE(GpusError("gres:gpu:a100:2,gres:gpu:v100:2").find("more than one GPU model"), std::string::npos);
  EXPECT_NE(GpusError("gres:gpu:600000,gres:gpu:600000").find("over the limit"), std::string::npos);
}

TEST(Tres, CountsFromTresReqStr) {
  TresCounts t;
  ASSERT_TRUE(ParseTresCounts("tres_req_str", "cpu=4,mem=16G,node=2,billing=4,gres/gpu=8", &t).ok());
  EXPECT_EQ(t.cpus, 4);
  EXPECT_EQ(t.memory_mb, 16384);
  EXPECT_EQ(t.nodes, 2);
  EXPECT_EQ(t.gpus, 8);
  ASSERT_TRUE(ParseTresCounts("tres_req_str", "cpu=1,gres/gpu:a100=2", &t).ok());
  EXPECT_EQ(t.gpus, 2);
  EXPECT_EQ(t.gpu_model, "a100");
  EXPECT_EQ(t.memory_mb, -1);
  ASSERT_TRUE(ParseTresCounts("tres_req_str", "", &t).ok());
  EXPECT_EQ(t.cpus, -1);
  Status st = ParseTresCounts("tres_req_str", "cpu=four", &t);
  EXPECT_EQ(st.Message(), "tres_req_str: count 'four' is not a number");
  st = ParseTresCounts("tres_req_str", "cpu=4,garbage", &t);
  EXPECT_EQ(st.Message(), "tres_req_str: entry 'garbage' is not KEY=VALUE");
  st = ParseTresCounts("tres_req_str", "mem=-1G", &t);
  EXPECT_EQ(st.Message(), "tres_req_str: memory '-1G' is negative");
}

TEST(Tres, MemorySuffixes) {
  struct Case {
    std::string text;
    int64_t mb;
  };
  for (const Case& c : std::vector<Case>{{"512", 512}, {"512M", 512}, {"16G", 16384}, {"1.50G", 1536},
                                         {"2T", 2 * 1024 * 1024}, {"4096K", 4}, {"1K", 1}, {"0", 0},
                                         {"1g", 1024}}) {
    int64_t mb = -1;
    Status st = ParseMemoryMb("mem", c.text, &mb);
    EXPECT_TRUE(st.ok()) << c.text << ": " << st.Message();
    EXPECT_EQ(mb, c.mb) << c.text;
  }
  int64_t mb = 0;
  EXPECT_EQ(ParseMemoryMb("mem", "lots", &mb).Message(), "mem: memory 'lots' is not a number");
  EXPECT_EQ(ParseMemoryMb("mem", "16GB", &mb).Message(), "mem: memory '16GB' is not a number");
  EXPECT_EQ(ParseMemoryMb("mem", "999999999999999999P", &mb).Message(), "mem: memory '999999999999999999P' overflows");
  EXPECT_NE(ParseMemoryMb("mem", "2000P", &mb).Message().find("over the limit"), std::string::npos);
}

TEST(Tres, NodeGres) {
  NodeGpus g;
  ASSERT_TRUE(ParseNodeGres("gres", "gpu:a100:8(S:0-1)", &g).ok());
  EXPECT_EQ(g.count, 8);
  ASSERT_EQ(g.types.size(), 1u);
  EXPECT_EQ(g.types[0], (std::pair<std::string, int64_t>{"a100", 8}));
  ASSERT_TRUE(ParseNodeGres("gres_used", "gpu:a100:2(IDX:0-1,4),mps:0", &g).ok());
  EXPECT_EQ(g.count, 2);
  ASSERT_TRUE(ParseNodeGres("gres_used", "gpu:a100:0(IDX:N/A)", &g).ok());
  EXPECT_EQ(g.count, 0);
  ASSERT_TRUE(ParseNodeGres("gres", "gpu:a100:4,gpu:v100:2(S:1),shard:8", &g).ok());
  EXPECT_EQ(g.count, 6);
  EXPECT_EQ(g.types.size(), 2u);
  ASSERT_TRUE(ParseNodeGres("gres", "gpu:4", &g).ok());
  EXPECT_EQ(g.count, 4);
  EXPECT_EQ(g.types[0].first, "");
  ASSERT_TRUE(ParseNodeGres("gres", "gpu:a100:no_consume:2", &g).ok());
  EXPECT_EQ(g.count, 2);
  for (const char* none : {"", "(null)", "N/A"}) {
    ASSERT_TRUE(ParseNodeGres("gres", none, &g).ok());
    EXPECT_EQ(g.count, 0);
  }
  EXPECT_EQ(ParseNodeGres("gres", "gpu:a100:eight", &g).Message(), "gres: gpu count 'eight' is not a number");
  EXPECT_EQ(ParseNodeGres("gres", "gpu:a100:-8", &g).Message(), "gres: gpu count '-8' is negative");
  EXPECT_NE(ParseNodeGres("gres", "gpu:a100:8(S:0", &g).Message().find("unbalanced"), std::string::npos);
  EXPECT_NE(ParseNodeGres("gres", "gpu:a:b:8", &g).Message().find("cannot read gres entry"), std::string::npos);
}

TEST(Tres, PlainCounts) {
  int64_t v = 0;
  ASSERT_TRUE(ParseCount("cpus", "32", kMaxCount, &v).ok());
  EXPECT_EQ(v, 32);
  EXPECT_EQ(ParseCount("cpus", "", kMaxCount, &v).Message(), "cpus: count is empty");
  EXPECT_EQ(ParseCount("cpus", "12x", kMaxCount, &v).Message(), "cpus: count '12x' is not a number");
}

}  // namespace
}  // namespace tidal::slurm
