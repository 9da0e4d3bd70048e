// The keys Tidal reads (engine/pod_keys.cc): precedence between Tidal's own, the upstream
// PodGroup's and the peers' keys, their errors, and JobSet's exclusive topology in the engine.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/api/duration.h"
#include "engine/engine.h"
#include "engine/pod_spec.h"

namespace tidal {
namespace {

using Map = std::map<std::string, std::string>;

StatusOr<PodSchedulingSpec> Parse(const Map& labels, const Map& annotations = {}) {
  return ParsePodSchedulingSpec(labels, annotations, TopologyLevels::Default());
}

Map PodGroupGang(const std::string& name, const std::string& min, const std::string& topology = "") {
  Map a = {{kPodGroupName, name}, {kPodGroupState, "gang"}, {kPodGroupMinCount, min}};
  if (!topology.empty()) a[kPodGroupTopologyKey] = topology;
  return a;
}

TEST(PodKeysTest, TidalKeysComeFirst) {
  Map labels = {{kLabelGang, "mine"}, {"scheduling.x-k8s.io/pod-group", "theirs"}, {"kueue.x-k8s.io/pod-group-name", "k"}};
  Map ann = PodGroupGang("pg", "4", "topology.tidal.dev/nvlink");
  ann[kLabelGangSize] = "2";
  ann[kLabelTopologyRequired] = "leaf";
  auto s = Parse(labels, ann);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang, "mine");
  EXPECT_EQ(s->gang_size, 2);
  EXPECT_EQ(s->required_level, "leaf");
}

TEST(PodKeysTest, UpstreamPodGroupGivesGangSizeAndTopology) {
  auto s = Parse({{"scheduling.x-k8s.io/pod-group", "pg"}}, PodGroupGang("pg", "4", "topology.tidal.dev/leaf"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang, "pg");
  EXPECT_EQ(s->gang_size, 4);
  EXPECT_EQ(s->gang_min, 4);
  EXPECT_EQ(s->required_level, "leaf");
  EXPECT_EQ(s->gang_from, "PodGroup pg");
  // tidal.dev/gang-size and gang-min still refine it.
  Map ann = PodGroupGang("pg", "4");
  ann[kLabelGangSize] = "6";
  ann[kLabelGangMin] = "3";
  s = Parse({}, ann);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang_size, 6);
  EXPECT_EQ(s->gang_min, 3);
}

TEST(PodKeysTest, MissingPodGroupWaitsAndBasicIsAlone) {
  auto s = Parse({}, {{kPodGroupName, "pg"}, {kPodGroupState, "missing"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kWait);
  EXPECT_NE(s.status().Message().find("PodGroup pg"), std::string::npos) << s.status().Message();
  s = Parse({}, {{kPodGroupName, "pg"}, {kPodGroupState, "basic"}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang, "");
  EXPECT_EQ(s->gang_size, 1);
  // A basic PodGroup beside a peer's gang key: the gang is neither dropped nor picked over it.
  s = Parse({{"scheduling.x-k8s.io/pod-group", "theirs"}}, {{kPodGroupName, "pg"}, {kPodGroupState, "basic"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message(),
            "scheduling.x-k8s.io/pod-group: \"theirs\" disagrees with spec.schedulingGroup.podGroupName: \"pg (a "
            "PodGroup of schedulingPolicy.basic: no gang)\" (accepted: the same gang in both, or tidal.dev/gang to "
            "choose)");
}

TEST(PodKeysTest, PodGroupErrorsNameTheField) {
  auto s = Parse({}, PodGroupGang("pg", "0"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnschedulableAndUnresolvable);
  EXPECT_NE(s.status().Message().find("PodGroup pg spec.schedulingPolicy.gang.minCount: invalid value \"0\""),
            std::string::npos)
      << s.status().Message();
  s = Parse({}, PodGroupGang("pg", "4", "topology.kubernetes.io/rack"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("PodGroup pg spec.schedulingConstraints.topology[0].key: invalid value "
                                      "\"topology.kubernetes.io/rack\""),
            std::string::npos)
      << s.status().Message();
  EXPECT_NE(s.status().Message().find("topology.tidal.dev/leaf"), std::string::npos) << s.status().Message();
}

TEST(PodKeysTest, PeersInTheirFixedOrder) {
  // scheduler-plugins before Volcano before KAI before Kueue: each alone names the gang.
  for (const char* key : {"scheduling.x-k8s.io/pod-group", "scheduling.k8s.io/group-name", "pod-group-name",
                          "kueue.x-k8s.io/pod-group-name"}) {
    auto s = Parse({}, {{key, "g"}, {kLabelGangSize, "3"}});
    ASSERT_TRUE(s.ok()) << key << ": " << s.status().ToString();
    EXPECT_EQ(s->gang, "g");
    EXPECT_EQ(s->gang_from, key);
  }
  // Several that agree name one gang: the first names it.
  auto s = Parse({{"scheduling.x-k8s.io/pod-group", "g"}, {"kueue.x-k8s.io/pod-group-name", "g"}},
                 {{"scheduling.k8s.io/group-name", "g"}, {kLabelGangSize, "3"}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang_from, "scheduling.x-k8s.io/pod-group");
}

// Two systems' gang keys on one pod that name different gangs: neither is picked (was: the first
// in the fixed order, silently; a migrated manifest with a leftover key joined the wrong gang).
TEST(PodKeysTest, PeersThatDisagreeOnTheGangAreAConflict) {
  Map labels = {{"scheduling.x-k8s.io/pod-group", "sp"}, {"kueue.x-k8s.io/pod-group-name", "kq"}};
  Map ann = {{"scheduling.k8s.io/group-name", "vc"}, {"pod-group-name", "kai"}, {kLabelGangSize, "3"}};
  auto s = Parse(labels, ann);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.status().plugin(), "podspec");
  EXPECT_EQ(s.status().Message(),
            "scheduling.x-k8s.io/pod-group: \"sp\" disagrees with scheduling.k8s.io/group-name: \"vc\" (accepted: the "
            "same gang name in both, or tidal.dev/gang to choose)");
  ann.erase("scheduling.k8s.io/group-name");
  ann.erase("pod-group-name");
  s = Parse(labels, ann);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("kueue.x-k8s.io/pod-group-name: \"kq\""), std::string::npos) << s.status().Message();
  // The upstream PodGroup against a peer.
  s = Parse({{"kueue.x-k8s.io/pod-group-name", "kq"}}, PodGroupGang("pg", "4"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message().rfind("spec.schedulingGroup.podGroupName: \"pg\" disagrees with "
                                       "kueue.x-k8s.io/pod-group-name: \"kq\"", 0),
            0u)
      << s.status().Message();
  // Tidal's own key chooses: the peers' keys are then ignored.
  labels[kLabelGang] = "mine";
  s = Parse(labels, ann);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang, "mine");
  // JobSet's and LeaderWorkerSet's labels are bookkeeping: Kueue names an LWS group its own way.
  s = Parse({{"kueue.x-k8s.io/pod-group-name", "kq"}, {"leaderworkerset.sigs.k8s.io/name", "vllm"},
             {"leaderworkerset.sigs.k8s.io/group-index", "0"}, {"jobset.sigs.k8s.io/jobset-name", "js"}},
            {{"kueue.x-k8s.io/pod-group-total-count", "4"}, {"leaderworkerset.sigs.k8s.io/size", "4"}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang, "kq");
}

// Sources that name the same gang must agree on its size too; one that has none takes the other's.
TEST(PodKeysTest, SourcesOfOneGangAgreeOnItsSize) {
  auto s = Parse({{"kueue.x-k8s.io/pod-group-name", "pg"}},
                 [] {
                   Map a = PodGroupGang("pg", "4");
                   a["kueue.x-k8s.io/pod-group-total-count"] = "8";
                   return a;
                 }());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message(),
            "PodGroup pg spec.schedulingPolicy.gang.minCount: \"4\" disagrees with kueue.x-k8s.io/pod-group-total-count: "
            "\"8\" (accepted: the same gang size in both, or tidal.dev/gang-size to choose)");
  // Volcano names the gang and keeps no size on the pod; Kueue's count for the same gang gives it.
  s = Parse({{"kueue.x-k8s.io/pod-group-name", "g"}},
            {{"scheduling.k8s.io/group-name", "g"}, {"kueue.x-k8s.io/pod-group-total-count", "6"}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang_size, 6);
  // tidal.dev/gang-size chooses.
  Map a = PodGroupGang("pg", "4");
  a["kueue.x-k8s.io/pod-group-total-count"] = "8";
  a[kLabelGangSize] = "8";
  s = Parse({{"kueue.x-k8s.io/pod-group-name", "pg"}}, a);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang_size, 8);
}

TEST(PodKeysTest, PeerWithoutSizeNeedsTidalGangSize) {
  auto s = Parse({}, {{"scheduling.k8s.io/group-name", "vc"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnschedulableAndUnresolvable);
  EXPECT_NE(s.status().Message().find("tidal.dev/gang-size: missing; required with scheduling.k8s.io/group-name"),
            std::string::npos)
      << s.status().Message();
  EXPECT_NE(s.status().Message().find("Volcano keeps the size in its PodGroup's minMember"), std::string::npos)
      << s.status().Message();
  s = Parse({{kLabelGang, "g"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message(),
            "tidal.dev/gang-size: missing; required with tidal.dev/gang (accepted: an integer 1..10000)");
}

TEST(PodKeysTest, KueueAndLeaderWorkerSetCarryTheirSize) {
  auto s = Parse({{"kueue.x-k8s.io/pod-group-name", "kq"}, {"kueue.x-k8s.io/queue-name", "team-a"}},
                 {{"kueue.x-k8s.io/pod-group-total-count", "5"}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang, "kq");
  EXPECT_EQ(s->gang_size, 5);
  EXPECT_EQ(s->queue, "team-a");
  s = Parse({{"kueue.x-k8s.io/pod-group-name", "kq"}}, {{"kueue.x-k8s.io/pod-group-total-count", "five"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message(),
            "kueue.x-k8s.io/pod-group-total-count: invalid value \"five\" (accepted: an integer 1..10000)");
  s = Parse({{"leaderworkerset.sigs.k8s.io/name", "vllm"}, {"leaderworkerset.sigs.k8s.io/group-index", "2"}},
            {{"leaderworkerset.sigs.k8s.io/size", "4"}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang, "vllm-2");
  EXPECT_EQ(s->gang_size, 4);
}

TEST(PodKeysTest, JobSetLabelsAloneAreNoGang) {
  Map labels = {{"jobset.sigs.k8s.io/jobset-name", "js"}, {"jobset.sigs.k8s.io/replicatedjob-name", "workers"},
                {"jobset.sigs.k8s.io/job-index", "0"}};
  auto s = Parse(labels);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang, "");
  // With a size the whole JobSet is one gang.
  s = Parse(labels, {{kLabelGangSize, "8"}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang, "js");
  EXPECT_EQ(s->gang_size, 8);
}

TEST(PodKeysTest, ExclusiveTopologyIsADomainGroupNotAGang) {
  Map labels = {{"jobset.sigs.k8s.io/jobset-name", "js"}, {"jobset.sigs.k8s.io/replicatedjob-name", "workers"},
                {"jobset.sigs.k8s.io/job-index", "1"}};
  Map ann = {{kJobSetExclusiveTopology, "topology.tidal.dev/leaf"}};
  auto s = Parse(labels, ann);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gang, "");
  EXPECT_EQ(s->exclusive_key, "topology.tidal.dev/leaf");
  EXPECT_EQ(s->exclusive_group, "jobset/js/workers/1");
  ExclusiveTopology ex = ExclusiveTopologyOf("team", labels, ann);
  EXPECT_EQ(ex.key, "topology.tidal.dev/leaf");
  EXPECT_EQ(ex.group, "team/jobset/js/workers/1");
  labels.erase("jobset.sigs.k8s.io/job-index");
  s = Parse(labels, ann);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("alpha.jobset.sigs.k8s.io/exclusive-topology: set without the group's labels"),
            std::string::npos)
      << s.status().Message();
  EXPECT_TRUE(ExclusiveTopologyOf("team", labels, ann).key.empty());
  s = Parse({}, {{kLwsExclusiveTopology, "not a key"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("leaderworkerset.sigs.k8s.io/exclusive-topology: invalid value \"not a key\""),
            std::string::npos)
      << s.status().Message();
}

TEST(PodKeysTest, QueueKeysInOrder) {
  for (const char* key : {"scheduling.volcano.sh/queue-name", "kai.scheduler/queue", "runai/queue",
                          "kueue.x-k8s.io/queue-name"}) {
    auto s = Parse({{key, "q"}});
    ASSERT_TRUE(s.ok()) << key << ": " << s.status().ToString();
    EXPECT_EQ(s->queue, "q");
  }
  Map labels = {{"kueue.x-k8s.io/queue-name", "q"}, {"kai.scheduler/queue", "q"}};
  EXPECT_EQ(Parse(labels, {{"scheduling.volcano.sh/queue-name", "q"}})->queue, "q") << "they agree";
  labels[kLabelQueue] = "tidal";
  labels["runai/queue"] = "other";
  EXPECT_EQ(Parse(labels)->queue, "tidal") << "Tidal's key overrides (maps) the peers'";
  auto s = Parse({{"kueue.x-k8s.io/queue-name", ""}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message(),
            "kueue.x-k8s.io/queue-name: invalid value \"\" (accepted: a queue name of 1-63 characters)");
}

// Two queue keys that disagree: neither queue is charged (was: Volcano's, then KAI's, silently).
TEST(PodKeysTest, QueueKeysThatDisagreeAreAConflict) {
  auto s = Parse({{"kueue.x-k8s.io/queue-name", "kq"}, {"kai.scheduler/queue", "kai"}},
                 {{"scheduling.volcano.sh/queue-name", "vc"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.status().Message(),
            "scheduling.volcano.sh/queue-name: \"vc\" disagrees with kai.scheduler/queue: \"kai\" (accepted: the same "
            "queue in both, or tidal.dev/queue to choose)");
  s = Parse({{"kai.scheduler/queue", "a"}, {"runai/queue", "b"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("runai/queue: \"b\""), std::string::npos) << s.status().Message();
  // Case matters: queue names are compared as they are.
  EXPECT_FALSE(Parse({{"kai.scheduler/queue", "Team"}, {"kueue.x-k8s.io/queue-name", "team"}}).ok());
}

TEST(PodKeysTest, TopologyLabelKeysMapToLevels) {
  auto s = Parse({}, {{"kueue.x-k8s.io/podset-required-topology", "topology.tidal.dev/nvlink"},
                      {"kai.scheduler/topology-preferred-placement", "kubernetes.io/hostname"}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->required_level, "nvlink");
  EXPECT_EQ(s->preferred_level, "node");
  // KAI and Kueue naming different levels: neither is picked (was KAI's, silently).
  s = Parse({}, {{"kueue.x-k8s.io/podset-required-topology", "topology.tidal.dev/nvlink"},
                 {"kai.scheduler/topology-required-placement", "topology.tidal.dev/block"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message(),
            "kai.scheduler/topology-required-placement: \"topology.tidal.dev/block\" disagrees with "
            "kueue.x-k8s.io/podset-required-topology: \"topology.tidal.dev/nvlink\" (accepted: the same topology level "
            "in both, or tidal.dev/topology-required to choose)");
  s = Parse({}, [] {
    Map a = PodGroupGang("pg", "2", "topology.tidal.dev/leaf");
    a["kueue.x-k8s.io/podset-required-topology"] = "topology.tidal.dev/block";
    return a;
  }());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message().rfind("PodGroup pg spec.schedulingConstraints.topology[0].key: \"topology.tidal.dev/leaf\" "
                                       "disagrees with kueue.x-k8s.io/podset-required-topology",
                                       0),
            0u)
      << s.status().Message();
  s = Parse({}, {{"kueue.x-k8s.io/podset-preferred-topology", "kubernetes.io/hostname"},
                 {"kai.scheduler/topology-preferred-placement", "topology.tidal.dev/nvlink"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("tidal.dev/topology-preferred to choose"), std::string::npos) << s.status().Message();
  // Keys that name the same level agree; Tidal's level name overrides them.
  s = Parse({}, {{"kueue.x-k8s.io/podset-required-topology", "topology.tidal.dev/nvlink"},
                 {"kai.scheduler/topology-required-placement", "topology.tidal.dev/nvlink"}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->required_level, "nvlink");
  s = Parse({}, {{"kueue.x-k8s.io/podset-required-topology", "topology.tidal.dev/nvlink"},
                 {"kai.scheduler/topology-required-placement", "topology.tidal.dev/block"},
                 {kLabelTopologyRequired, "block"}});
  EXPECT_EQ(s->required_level, "block");
  s = Parse({}, {{"kueue.x-k8s.io/podset-preferred-topology", "cloud.example.com/rack"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message(),
            "kueue.x-k8s.io/podset-preferred-topology: invalid value \"cloud.example.com/rack\" (accepted: a node label "
            "key of a topology level: topology.tidal.dev/block, topology.tidal.dev/leaf, topology.tidal.dev/nvlink, "
            "kubernetes.io/hostname)");
}

TEST(PodKeysTest, GangSizeWithoutAnyGangIsRefused) {
  auto s = Parse({}, {{kLabelGangSize, "4"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("tidal.dev/gang-size: set without a gang name"), std::string::npos);
}

// gang-min without a gang is refused like gang-size (was silently accepted as "1", and "4" got
// "accepted: an integer 1..1").
TEST(PodKeysTest, GangMinWithoutAnyGangIsRefused) {
  for (const char* min : {"1", "4"}) {
    auto s = Parse({{kLabelGangMin, min}});
    ASSERT_FALSE(s.ok()) << min;
    EXPECT_EQ(s.status().code(), StatusCode::kUnschedulableAndUnresolvable);
    EXPECT_EQ(s.status().Message(),
              "tidal.dev/gang-min: set without a gang name (accepted: add tidal.dev/gang naming the gang)");
  }
  // JobSet labels without a size are no gang either.
  EXPECT_FALSE(Parse({{"jobset.sigs.k8s.io/jobset-name", "js"}, {kLabelGangMin, "1"}}).ok());
}

// A gang name is a label value or an object name: no '/', so "pod/foo" can no longer join the
// lone pod foo's gang ("<ns>/pod/foo"), and no spaces or newlines in events. Errors name the key
// that named the gang.
TEST(PodKeysTest, GangNamesAreValidated) {
  for (const std::string& bad : std::vector<std::string>{"pod/foo", "a b", "x\ny", "-a", "a.", std::string(254, 'a')}) {
    auto s = Parse({}, {{kLabelGang, bad}, {kLabelGangSize, "2"}});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().plugin(), "podspec");
    EXPECT_EQ(s.status().Message().rfind("tidal.dev/gang: invalid value", 0), 0u) << s.status().Message();
    EXPECT_NE(s.status().Message().find("letters, digits"), std::string::npos) << s.status().Message();
  }
  auto s = Parse({}, {{"scheduling.k8s.io/group-name", "pod/foo"}, {kLabelGangSize, "2"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message().rfind("scheduling.k8s.io/group-name: invalid value \"pod/foo\"", 0), 0u)
      << s.status().Message();
  for (const std::string& good : std::vector<std::string>{"llm", "1002_3", "train.v2-A_b", std::string(253, 'a')}) {
    auto ok = Parse({}, {{kLabelGang, good}, {kLabelGangSize, "2"}});
    ASSERT_TRUE(ok.ok()) << good << ": " << ok.status().ToString();
    EXPECT_EQ(ok->gang, good);
  }
}

// Volcano's and KAI's missing size states why the shim could not fill it in (was "which Tidal does
// not read", while the shim does read minMember).
TEST(PodKeysTest, PeerSizeMissingNamesTheRealCauses) {
  for (const char* key : {"scheduling.k8s.io/group-name", "pod-group-name"}) {
    auto s = Parse({}, {{key, "pg"}});
    ASSERT_FALSE(s.ok()) << key;
    EXPECT_NE(s.status().Message().find("which Tidal could not read: the PodGroup does not exist yet, its API is not "
                                        "served, or minMember is outside 1..10000"),
              std::string::npos)
        << s.status().Message();
  }
  auto s = Parse({{kLabelPodGroup, "pg"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("which Tidal does not read"), std::string::npos) << s.status().Message();
}

// A preferred level outer to or equal to the required one asks for nothing: refused, naming the
// preferred key and the levels inside the required one (was accepted silently).
TEST(PodKeysTest, PreferredLevelMustBeInsideTheRequiredOne) {
  auto s = Parse({{kLabelTopologyRequired, "leaf"}, {kLabelTopologyPreferred, "block"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message(),
            "tidal.dev/topology-preferred: invalid value \"block\" (accepted: a level inside the required level leaf "
            "(tidal.dev/topology-required): nvlink, node)");
  EXPECT_FALSE(Parse({{kLabelTopologyRequired, "leaf"}, {kLabelTopologyPreferred, "leaf"}}).ok()) << "equal";
  s = Parse({{kLabelTopologyRequired, "node"}, {kLabelTopologyPreferred, "nvlink"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().Message().find("none: the required level node (tidal.dev/topology-required) is the innermost"),
            std::string::npos)
      << s.status().Message();
  s = Parse({}, {{"kai.scheduler/topology-required-placement", "topology.tidal.dev/nvlink"},
                 {"kai.scheduler/topology-preferred-placement", "topology.tidal.dev/leaf"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().Message().rfind("kai.scheduler/topology-preferred-placement: invalid value \"topology.tidal.dev/leaf\"", 0),
            0u)
      << s.status().Message();
  s = Parse({{kLabelTopologyRequired, "leaf"}, {kLabelTopologyPreferred, "nvlink"}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->preferred_level, "nvlink");
}

// tidal.dev/gang-leader is a key the engine reads, so the Kubernetes shim forwards it
// (engine_keys.txt; LimitsTest.ShimForwardsExactlyTheKeysTheEngineReads keeps the two equal).
TEST(PodKeysTest, GangLeaderIsAKeyRead) {
  const auto& keys = podkeys::KeysRead();
  EXPECT_TRUE(std::find(keys.begin(), keys.end(), kLabelGangLeader) != keys.end());
}

// Durations: each unit once, largest first; anything else is refused with the reason.
TEST(PodKeysTest, DurationsWithRepeatedOrUnorderedUnitsAreRefused) {
  for (const char* bad : {"30m30m", "5s1h", "1h1d", "1m2m"}) {
    auto s = Parse({{kLabelRuntimeLimit, bad}});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.status().Message().find("each unit at most once and largest first"), std::string::npos)
        << s.status().Message();
    auto d = ParseDurationSeconds(bad, "f");
    ASSERT_FALSE(d.ok()) << bad << " read as " << *d;
    EXPECT_NE(d.status().Message().find("repeated or out of order (units go d, h, m, s, each at most once)"),
              std::string::npos)
        << d.status().Message();
  }
  EXPECT_EQ(*ParseDurationSeconds("1d2h3m4s", "f"), 93784);
  EXPECT_EQ(*ParseDurationSeconds("1d4s", "f"), 86404);
}

// --- the engine: exclusive topology and the upstream PodGroup ---------------------------------------

NodeInfo Node8(const std::string& name, const std::string& leaf) {
  NodeInfo n;
  n.name = name;
  n.labels = {{"topology.tidal.dev/block", "b0"}, {"topology.tidal.dev/leaf", leaf}, {"topology.tidal.dev/nvlink", name}};
  n.capacity = Resources{8, 64000, int64_t{512} << 30};
  return n;
}

PodInfo JobSetPod(const std::string& job, int index) {
  PodInfo p;
  p.name = job + "-" + std::to_string(index);
  p.uid = "uid-" + p.name;
  p.ns = "team";
  p.scheduler_name = "tidal-scheduler";
  p.request = Resources{8, 1000, 1 << 30};
  p.labels = {{"jobset.sigs.k8s.io/jobset-name", "js"}, {"jobset.sigs.k8s.io/replicatedjob-name", "rj"},
              {"jobset.sigs.k8s.io/job-index", job}};
  p.annotations = {{kJobSetExclusiveTopology, "topology.tidal.dev/leaf"}};
  return p;
}

class ExclusiveEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = Engine::Create(EngineConfig{}, [] { return int64_t{1000}; });
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    SyncBatch b;
    b.resync = true;
    for (int i = 0; i < 8; ++i) b.upsert_nodes.push_back(Node8("n" + std::to_string(i), i < 4 ? "l0" : "l1"));
    ASSERT_TRUE(Sync(b).ok());
  }
  Status Sync(const SyncBatch& b) {
    uint64_t gen = 0;
    return engine_->Sync(b, &gen);
  }
  void Add(const PodInfo& p) {
    SyncBatch b;
    b.upsert_pods = {p};
    ASSERT_TRUE(Sync(b).ok());
  }
  // Plans, reserves, permits and binds one pod; "" when it was not placed (*why says why).
  std::string Place(const PodInfo& p, std::string* why = nullptr) {
    std::string gang;
    Status st = engine_->CheckPod(p.uid, &gang);
    if (!st.ok()) return why ? (*why = st.Message(), "") : "";
    PlanResult r = engine_->PlanPod(p.uid);
    if (!r.status.ok()) return why ? (*why = r.status.Message(), "") : "";
    EXPECT_TRUE(engine_->Reserve(p.uid, r.node).ok());
    EXPECT_TRUE(engine_->Permit(p.uid).status.ok());
    EXPECT_TRUE(engine_->Bound(p.uid, r.node).ok());
    PodInfo bound = p;
    bound.node_name = r.node;
    bound.phase = PodPhase::kRunning;
    Add(bound);
    return r.node;
  }
  static std::string Leaf(const std::string& node) { return std::stoi(node.substr(1)) < 4 ? "l0" : "l1"; }
  std::unique_ptr<Engine> engine_;
};

TEST_F(ExclusiveEngineTest, LeaderFirstThenFollowersPinnedIntoItsDomain) {
  // Something else already uses a node of l0: the leader picks the domain with the most room.
  PodInfo other = JobSetPod("x", 0);
  other.annotations.clear();
  other.labels.clear();
  other.name = other.uid = "plain";
  other.scheduler_name = "default-scheduler";
  other.node_name = "n0";
  other.phase = PodPhase::kRunning;
  Add(other);
  PodInfo leader = JobSetPod("0", 0);
  Add(leader);
  const std::string at = Place(leader);
  ASSERT_FALSE(at.empty());
  EXPECT_EQ(Leaf(at), "l1");
  // Followers arrive only now (JobSet's webhook); each runs at once, in the leader's leaf.
  for (int i = 1; i < 4; ++i) {
    PodInfo f = JobSetPod("0", i);
    Add(f);
    std::string why;
    const std::string n = Place(f, &why);
    ASSERT_FALSE(n.empty()) << why;
    EXPECT_EQ(Leaf(n), "l1") << n;
  }
  // The leaf is full: a 5th follower waits rather than leave the domain.
  PodInfo extra = JobSetPod("0", 4);
  Add(extra);
  std::string why;
  EXPECT_TRUE(Place(extra, &why).empty());
  EXPECT_NE(why.find("topology.tidal.dev/leaf"), std::string::npos) << why;
}

TEST_F(ExclusiveEngineTest, OtherGroupsStayOutOfAClaimedDomain) {
  Add(JobSetPod("0", 0));
  ASSERT_FALSE(Place(JobSetPod("0", 0)).empty());
  Add(JobSetPod("1", 0));
  const std::string b = Place(JobSetPod("1", 0));
  ASSERT_FALSE(b.empty());
  std::string why;
  PodInfo a1 = JobSetPod("0", 1);
  Add(a1);
  const std::string a = Place(a1);
  ASSERT_FALSE(a.empty());
  EXPECT_NE(Leaf(a), Leaf(b)) << "job 0 and job 1 share a leaf";
  // A third job finds no leaf free of the other two: it waits, and says so.
  PodInfo c = JobSetPod("2", 0);
  Add(c);
  EXPECT_TRUE(Place(c, &why).empty());
  EXPECT_NE(why.find("no-free-exclusive-domain"), std::string::npos) << why;
}

TEST_F(ExclusiveEngineTest, PodGroupGangWaitsForItsPodGroupThenPlansWhole) {
  PodInfo p = JobSetPod("x", 0);
  p.labels.clear();
  p.annotations = {{kPodGroupName, "pg"}, {kPodGroupState, "missing"}};
  Add(p);
  std::string gang;
  Status st = engine_->CheckPod(p.uid, &gang);
  EXPECT_EQ(st.code(), StatusCode::kWait) << st.ToString();
  EXPECT_FALSE(engine_->PlanPod(p.uid).status.ok());
  for (int i = 0; i < 2; ++i) {
    PodInfo m = p;
    m.name = "pg-" + std::to_string(i);
    m.uid = "uid-" + m.name;
    m.annotations = PodGroupGang("pg", "2", "topology.tidal.dev/leaf");
    Add(m);
  }
  p.annotations = PodGroupGang("pg", "2", "topology.tidal.dev/leaf");
  Add(p);  // now three pods of a gang of 2: the first two planned, the third surplus or waiting
  EXPECT_TRUE(engine_->CheckPod("uid-pg-0", &gang).ok());
  EXPECT_EQ(gang, "team/pg");
  PlanResult r0 = engine_->PlanPod("uid-pg-0");
  PlanResult r1 = engine_->PlanPod("uid-pg-1");
  ASSERT_TRUE(r0.status.ok()) << r0.status.ToString();
  ASSERT_TRUE(r1.status.ok()) << r1.status.ToString();
  EXPECT_EQ(Leaf(r0.node), Leaf(r1.node));
}

}  // namespace
}  // namespace tidal
