// Hostlist expansion / compression: Slurm's forms, malformed input, the expansion bound.
//
// Threading: single-threaded tests.
#include "shim/slurm/hostlist.h"

#include <gtest/gtest.h>

namespace tidal::slurm {
namespace {

std::vector<std::string> Expand(const std::string& expr) {
  std::vector<std::string> out;
  Status st = ExpandHostlist(expr, &out, "nodes");
  EXPECT_TRUE(st.ok()) << expr << ": " << st.Message();
  return out;
}

std::string ExpandError(const std::string& expr, size_t max = kMaxHostlistNames) {
  std::vector<std::string> out{"kept"};
  Status st = ExpandHostlist(expr, &out, "nodes", max);
  EXPECT_FALSE(st.ok()) << expr;
  EXPECT_EQ(out, std::vector<std::string>{"kept"}) << "an error leaves *out unchanged";
  return st.Message();
}

using V = std::vector<std::string>;

TEST(Hostlist, ExpandsSlurmForms) {
  EXPECT_EQ(Expand(""), V{});
  EXPECT_EQ(Expand("gpu01"), V{"gpu01"});
  EXPECT_EQ(Expand("gpu[01-03,07],cpu1"), (V{"gpu01", "gpu02", "gpu03", "gpu07", "cpu1"}));
  EXPECT_EQ(Expand("n[8-10]"), (V{"n8", "n9", "n10"}));
  EXPECT_EQ(Expand("n[08-10]"), (V{"n08", "n09", "n10"}));
  EXPECT_EQ(Expand("n[098-100]"), (V{"n098", "n099", "n100"}));
  EXPECT_EQ(Expand("r[1-2]n[1-2]"), (V{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(Expand("gpu[1-2]-ib"), (V{"gpu1-ib", "gpu2-ib"}));
  EXPECT_EQ(Expand("a,,b c\tgpu[3]"), (V{"a", "b", "c", "gpu3"}));
  EXPECT_EQ(Expand("a,a"), (V{"a", "a"}));
}

TEST(Hostlist, AppendsToOut) {
  std::vector<std::string> out{"x"};
  ASSERT_TRUE(ExpandHostlist("y[1-2]", &out).ok());
  EXPECT_EQ(out, (V{"x", "y1", "y2"}));
}

TEST(Hostlist, MalformedIsAClearError) {
  EXPECT_EQ(ExpandError("gpu[01-"), "nodes: unbalanced '[' in 'gpu[01-'");
  EXPECT_EQ(ExpandError("gpu01]"), "nodes: unbalanced ']' in 'gpu01]'");
  EXPECT_EQ(ExpandError("gpu[[1]]"), "nodes: nested '[' in 'gpu[[1]]'");
  EXPECT_EQ(ExpandError("gpu[]"), "nodes: empty '[]' in 'gpu[]'");
  EXPECT_EQ(ExpandError("gpu[3-1]"), "nodes: range '3-1' runs backwards in 'gpu[3-1]'");
  EXPECT_NE(ExpandError("gpu[a-b]").find("bad range 'a-b'"), std::string::npos);
  EXPECT_NE(ExpandError("gpu[1,,2]").find("bad range ''"), std::string::npos);
  EXPECT_NE(ExpandError("gpu[-1]").find("bad range '-1'"), std::string::npos);
  EXPECT_NE(ExpandError("gpu[1-2-3]").find("bad range"), std::string::npos);
  EXPECT_NE(ExpandError("gpu[1234567890123456789]").find("up to 18 digits"), std::string::npos);
}

TEST(Hostlist, RefusesHugeExpansions) {
  EXPECT_NE(ExpandError("n[1-999999999]").find("more than 100000 names"), std::string::npos);
  EXPECT_NE(ExpandError("a[1-1000]b[1-1000]").find("more than 100000 names"), std::string::npos);
  EXPECT_NE(ExpandError("a[1-60000],b[1-60000]").find("more than 100000 names"), std::string::npos);
  EXPECT_NE(ExpandError("n[1-11]", 10).find("more than 10 names"), std::string::npos);
  std::vector<std::string> out;
  ASSERT_TRUE(ExpandHostlist("n[1-100000]", &out).ok());
  EXPECT_EQ(out.size(), 100000u);
  std::string long_expr(5000, 'x');
  EXPECT_LT(ExpandError(long_expr + "[").size(), 400u) << "long input is shortened in the message";
}

TEST(Hostlist, Compresses) {
  EXPECT_EQ(CompressHostlist({}), "");
  EXPECT_EQ(CompressHostlist({"gpu01"}), "gpu01");
  EXPECT_EQ(CompressHostlist({"gpu01", "gpu02", "gpu03", "gpu07", "cpu1"}), "gpu[01-03,07],cpu1");
  EXPECT_EQ(CompressHostlist({"gpu03", "gpu01", "gpu02", "gpu01"}), "gpu[01-03]");
  EXPECT_EQ(CompressHostlist({"n8", "n9", "n10"}), "n[8-10]");
  EXPECT_EQ(CompressHostlist({"n08", "n09", "n10"}), "n[08-10]");
  EXPECT_EQ(CompressHostlist({"login", "n1", "login"}), "login,n1");
  EXPECT_EQ(CompressHostlist({"r1n1", "r1n2", "r2n1"}), "r1n[1-2],r2n1");
}

TEST(Hostlist, RoundTrips) {
  for (const std::string expr : {"gpu[01-03,07],cpu1", "n[8-10],n[08-09]", "a,b,c[1-5,9,11-12]", "x[0001-0100]"}) {
    V names = Expand(expr);
    V again = Expand(CompressHostlist(names));
    std::sort(names.begin(), names.end());
    std::sort(again.begin(), again.end());
    EXPECT_EQ(names, again) << expr << " -> " << CompressHostlist(names);
  }
}

}  // namespace
}  // namespace tidal::slurm
