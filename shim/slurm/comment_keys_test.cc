// A job's --comment keys (tidal.dev/...=VALUE): a value the engine refuses gives the job a reason
// in its AdminComment (it waited, held, with none: the engine put its members in no gang and
// Admit listed it neither admitted nor waiting).
//
// Threading: single-threaded tests.
#include <gtest/gtest.h>

#include "shim/slurm/adapter_testing.h"
#include "shim/slurm/reconciler.h"

namespace tidal::slurm {
namespace {

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST_F(ReconcileTest, AJobWhoseCommentHasAValueTheEngineRefusesIsHeldWithTheKeyAndTheAcceptedValues) {
  JobRecord cls = HeldJob(40, 1, 8);
  cls.comment = "mine tidal.dev/class=notebok";
  JobRecord pre = HeldJob(41, 1, 8);
  pre.comment = "tidal.dev/preemptible=True";  // engine keys are exact: only tidal.dev/hold takes any case
  JobRecord topo = HeldJob(42, 2, 8);
  topo.comment = "tidal.dev/topology-required=rack";
  JobRecord ok = HeldJob(43, 1, 8);
  ok.comment = "tidal.dev/class=training";
  slurm_.state.jobs = {cls, pre, topo, ok};
  Reconciler r(acfg_, &slurm_, link_.get());
  ReconcileStats st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(st.released, 1);
  EXPECT_EQ(slurm_.Find("43")->priority, 1000u);
  const std::string& c40 = slurm_.Find("40")->admin_comment;
  EXPECT_TRUE(Has(c40, "tidal: cannot schedule: tidal.dev/class: invalid value \"notebok\"")) << c40;
  EXPECT_TRUE(Has(c40, "training, inference, batch, interactive")) << c40;
  const std::string& c41 = slurm_.Find("41")->admin_comment;
  EXPECT_TRUE(Has(c41, "tidal: cannot schedule: tidal.dev/preemptible: invalid value \"True\"")) << c41;
  EXPECT_TRUE(Has(c41, "true, false")) << c41;
  // A level the adapter cannot check: only the engine knows its topology levels.
  const std::string& c42 = slurm_.Find("42")->admin_comment;
  EXPECT_TRUE(Has(c42, "tidal: cannot schedule: tidal.dev/topology-required")) << c42;
  EXPECT_TRUE(Has(c42, "rack")) << c42;
  for (const char* id : {"40", "41", "42"}) EXPECT_EQ(slurm_.Find(id)->priority, 0u) << id << " stays held";
  // Said once: the next pass writes nothing.
  slurm_.calls.clear();
  ASSERT_TRUE(r.ReconcileOnce().admitted);
  for (const auto& c : slurm_.calls) EXPECT_NE(c.rfind("comment 4", 0), 0u) << c;
  // Its owner fixes the comment: placed and released like any job.
  slurm_.Find("40")->comment = "mine tidal.dev/class=interactive";
  st = r.ReconcileOnce();
  ASSERT_TRUE(st.admitted) << st.status.ToString();
  EXPECT_EQ(slurm_.Find("40")->priority, 1000u) << slurm_.Find("40")->admin_comment;
  EXPECT_TRUE(Has(slurm_.Find("40")->admin_comment, "tidal: released to")) << slurm_.Find("40")->admin_comment;
}

}  // namespace
}  // namespace tidal::slurm
