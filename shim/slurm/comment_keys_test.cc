// A job's --comment keys (tidal.dev/...=VALUE): a value the engine refuses gives the job a reason
// in its AdminComment (it waited, held, with none: the engine put its members in no gang and
// Admit listed it neither admitted nor waiting), and the keys Slurm's own options replace (queue,
// runtime-limit, gpu-model, the gang keys) are named there, as is a --switches=1 the comment's
// topology-required replaces (TidalKeys, OverrideNote).
//
// Threading: single-threaded tests.
#include <gtest/gtest.h>

#include "shim/slurm/adapter_testing.h"
#include "shim/slurm/reconciler.h"
#include "shim/slurm/to_engine.h"

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

TEST(ToEngine, AGangLeaderInTheCommentMarksOnlyTheBatchHostsMember) {
  AdapterConfig cfg;
  JobRecord run = HeldJob(50, 2, 8);
  run.comment = "tidal.dev/gang-leader=true";
  run.state = JobState::kRunning;
  run.priority = 100;
  run.nodes = {"gpu01", "gpu02"};
  run.batch_host = "gpu02";
  auto m = MembersOf(run, "50", cfg);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].annotations().count("tidal.dev/gang-leader"), 0u) << "gpu01 is not the batch host";
  EXPECT_EQ(m[1].annotations().at("tidal.dev/gang-leader"), "true");
  JobRecord held = HeldJob(51, 2, 8);
  held.comment = run.comment;
  for (const auto& p : MembersOf(held, "51", cfg)) EXPECT_EQ(p.annotations().count("tidal.dev/gang-leader"), 0u);
  EXPECT_TRUE(Has(OverrideNote(held, cfg), "tidal.dev/gang-leader=true (the batch host's member is the leader)"))
      << OverrideNote(held, cfg);
}

TEST(ToEngine, SlurmsOptionsWinOverTheCommentAndTheNoteNamesWhatTheyReplaced) {
  AdapterConfig cfg;
  JobRecord j = HeldJob(52, 1, 8);  // account qa, --time=30, --gres=gpu:a100:8
  j.comment = "tidal.dev/queue=other tidal.dev/runtime-limit=2h tidal.dev/gpu-model=h100 tidal.dev/class=training";
  auto m = MembersOf(j, "52", cfg);
  ASSERT_EQ(m.size(), 1u);
  const auto& a = m[0].annotations();
  EXPECT_EQ(a.at("tidal.dev/queue"), "qa");
  EXPECT_EQ(a.at("tidal.dev/runtime-limit"), "30m");
  EXPECT_EQ(a.at("tidal.dev/gpu-model"), "a100");
  EXPECT_EQ(a.at("tidal.dev/class"), "training");
  const std::string note = OverrideNote(j, cfg);
  EXPECT_TRUE(Has(note, "; --comment keys Slurm's options replace: ")) << note;
  EXPECT_TRUE(Has(note, "tidal.dev/queue=other (the queue of its account/partition/QOS is qa)")) << note;
  EXPECT_TRUE(Has(note, "tidal.dev/runtime-limit=2h (--time is 30m)")) << note;
  EXPECT_TRUE(Has(note, "tidal.dev/gpu-model=h100 (its --gres type is a100)")) << note;
  EXPECT_FALSE(Has(note, "class")) << note;
  // The same values (a limit written another way) are not reported.
  j.comment = "tidal.dev/queue=qa tidal.dev/runtime-limit=1800s tidal.dev/gpu-model=a100";
  EXPECT_EQ(OverrideNote(j, cfg), "");
  // --time=UNLIMITED and no gres type: the comment's values stand, nothing replaced.
  j.time_limit_min = 0;
  j.gpu_model.clear();
  j.comment = "tidal.dev/runtime-limit=2h tidal.dev/gpu-model=h100";
  m = MembersOf(j, "52", cfg);
  EXPECT_EQ(m[0].annotations().at("tidal.dev/runtime-limit"), "2h");
  EXPECT_EQ(m[0].annotations().at("tidal.dev/gpu-model"), "h100");
  EXPECT_EQ(OverrideNote(j, cfg), "");
  // A comment's topology-required wins over --switches=1, and the note says so.
  j.req_switch = 1;
  j.comment = "tidal.dev/topology-required=block";
  m = MembersOf(j, "52", cfg);
  EXPECT_EQ(m[0].annotations().at("tidal.dev/topology-required"), "block");
  EXPECT_TRUE(Has(OverrideNote(j, cfg), "--switches=1 (leaf) gives way to tidal.dev/topology-required=block"))
      << OverrideNote(j, cfg);
  j.comment.clear();
  EXPECT_EQ(MembersOf(j, "52", cfg)[0].annotations().at("tidal.dev/topology-required"), "leaf");
  EXPECT_EQ(OverrideNote(j, cfg), "");
}

TEST_F(ReconcileTest, TheAdminCommentNamesTheCommentKeysSlurmReplaced) {
  JobRecord j = HeldJob(53, 1, 8);
  j.comment = "tidal.dev/queue=other";
  slurm_.state.jobs = {j};
  Reconciler r(acfg_, &slurm_, link_.get());
  ASSERT_EQ(r.ReconcileOnce().released, 1);
  const std::string& c = slurm_.Find("53")->admin_comment;
  EXPECT_EQ(c.rfind("tidal: released to gpu0", 0), 0u) << c;
  EXPECT_TRUE(Has(c, "tidal.dev/queue=other (the queue of its account/partition/QOS is qa)")) << c;
}

}  // namespace
}  // namespace tidal::slurm
