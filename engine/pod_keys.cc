// The keys pods already carry for other schedulers and workload controllers, as tables: which
// key names a gang, a queue or a topology level, and in which order they are read.
//
// Precedence (per field):
//   1. tidal.dev/*                       (Tidal's own: when set it wins, the others are ignored;
//                                         it is how a user overrides or maps a peer's value)
//   2. the upstream PodGroup             (scheduling.k8s.io/v1alpha2, pod spec.schedulingGroup;
//                                         handed over by the shim as podgroup.internal.tidal.dev/*)
//   3. scheduler-plugins, 4. Volcano, 5. KAI, 6. Kueue, 7. JobSet, 8. LeaderWorkerSet
// Without Tidal's key, the sources 2-6 that set a field must agree (gang name and own size, queue,
// topology level): two that disagree are an error naming both keys and values, never a pick
// (Disagree). JobSet's and LeaderWorkerSet's labels are bookkeeping, not a request: they never
// disagree with a source above them (Kueue names an LWS group its own way, for example).
// A gang's size is tidal.dev/gang-size when set, else the size its own source gives (PodGroup
// minCount, Kueue pod-group-total-count, LeaderWorkerSet size). scheduler-plugins', Volcano's and
// KAI's sizes live in PodGroup objects of theirs; the engine does not read them (the shim fills in
// tidal.dev/gang-size from Volcano's and KAI's minMember when it can): such a gang needs
// tidal.dev/gang-size (an error naming the key otherwise, so a gang never runs short). JobSet's and
// LeaderWorkerSet's labels are bookkeeping, not a request to gang: without a size they form no
// gang, and under exclusive topology never (see ExclusiveTopologyOf).
//
// Threading: pure functions over constant tables.
#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

#include "core/api/limits.h"
#include "engine/pod_spec.h"

namespace tidal {
namespace {

constexpr int64_t kMaxGang = limits::kMaxGangMembers;

// A gang name source. The gang is named by the values of `name` (all must be set), joined by "-".
struct GangSource {
  const char* from;                // for messages
  std::vector<const char*> name;
  const char* size = nullptr;      // the key that gives the size; nullptr = none on the pod
  const char* size_elsewhere = nullptr;  // where the peer keeps the size (message when missing)
  bool needs_size = true;          // no size: an error (true) or no gang at all (false)
  bool workload = false;           // a workload controller's labels: no gang under exclusive topology
};

// Volcano's and KAI's PodGroups are watched by the shim, which fills in tidal.dev/gang-size from
// their minMember (shim/kube/pkg/convert/peergroup.go); a size still missing has one of these causes.
constexpr const char* kPeerSizeUnread =
    "its PodGroup's minMember, which Tidal could not read: the PodGroup does not exist yet, its API is not served, "
    "or minMember is outside 1..10000";

// Row 1 (the upstream PodGroup) is read by UpstreamPodGroup(); it sits between rows 0 and 2.
const std::vector<GangSource>& GangSources() {
  static const std::vector<GangSource> kRows = {
      {"Tidal", {kLabelGang}, nullptr, nullptr, true, false},
      {"scheduler-plugins", {kLabelPodGroup}, nullptr, "its PodGroup's minMember, which Tidal does not read", true, false},
      {"Volcano", {"scheduling.k8s.io/group-name"}, nullptr, kPeerSizeUnread, true, false},
      {"KAI", {"pod-group-name"}, nullptr, kPeerSizeUnread, true, false},
      {"Kueue", {"kueue.x-k8s.io/pod-group-name"}, "kueue.x-k8s.io/pod-group-total-count", nullptr, true, false},
      {"JobSet", {"jobset.sigs.k8s.io/jobset-name"}, nullptr, nullptr, false, true},
      {"LeaderWorkerSet", {"leaderworkerset.sigs.k8s.io/name", "leaderworkerset.sigs.k8s.io/group-index"},
       "leaderworkerset.sigs.k8s.io/size", nullptr, false, true},
  };
  return kRows;
}

// Queue names, first set wins. Peers' names are used as Tidal queue names as they are.
const std::vector<const char*>& QueueKeys() {
  static const std::vector<const char*> kKeys = {kLabelQueue, "scheduling.volcano.sh/queue-name", "kai.scheduler/queue",
                                                 "runai/queue", "kueue.x-k8s.io/queue-name"};
  return kKeys;
}

// Topology: a level name (Tidal's keys) or a node label key (everybody else's).
struct TopologyKey {
  const char* key;
  bool label_key;  // the value is a node label key, mapped to the level that reads that label
};
const std::vector<TopologyKey>& RequiredKeys() {
  static const std::vector<TopologyKey> kKeys = {{kLabelTopologyRequired, false},
                                                 {kPodGroupTopologyKey, true},
                                                 {"kai.scheduler/topology-required-placement", true},
                                                 {"kueue.x-k8s.io/podset-required-topology", true}};
  return kKeys;
}
const std::vector<TopologyKey>& PreferredKeys() {
  static const std::vector<TopologyKey> kKeys = {{kLabelTopologyPreferred, false},
                                                 {"kai.scheduler/topology-preferred-placement", true},
                                                 {"kueue.x-k8s.io/podset-preferred-topology", true}};
  return kKeys;
}

// Exclusive topology: the key names a node label; the group is one JobSet child Job or one
// LeaderWorkerSet group.
struct ExclusiveSource {
  const char* key;
  const char* tag;
  std::vector<const char*> group;
};
const std::vector<ExclusiveSource>& ExclusiveSources() {
  static const std::vector<ExclusiveSource> kRows = {
      {kJobSetExclusiveTopology,
       "jobset",
       {"jobset.sigs.k8s.io/jobset-name", "jobset.sigs.k8s.io/replicatedjob-name", "jobset.sigs.k8s.io/job-index"}},
      {kLwsExclusiveTopology, "lws", {"leaderworkerset.sigs.k8s.io/name", "leaderworkerset.sigs.k8s.io/group-index"}},
  };
  return kRows;
}

constexpr const char* kHostnameKey = "kubernetes.io/hostname";

// Joins the values of `keys` with `sep`; false when one is missing or empty.
bool JoinValues(const std::map<std::string, std::string>& labels, const std::map<std::string, std::string>& annotations,
                const std::vector<const char*>& keys, const char* sep, std::string* out) {
  out->clear();
  for (const char* k : keys) {
    const std::string* v = podkeys::Lookup(labels, annotations, k);
    if (v == nullptr || v->empty()) return false;
    if (!out->empty()) *out += sep;
    *out += *v;
  }
  return true;
}

// A gang name: what a label value or an object name may be (1-253 letters, digits, '-', '_', '.',
// starting and ending with a letter or digit). No '/', so a gang's key "<ns>/<gang>" never equals a
// lone pod's "<ns>/pod/<name>" (Engine::GangKeyLocked); no spaces or newlines in events and explain.
constexpr const char* kGangNameAccepted =
    "a name of 1-253 letters, digits, '-', '_' or '.', starting and ending with a letter or digit";
bool IsGangName(const std::string& name) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (name.empty() || name.size() > 253 || !alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A gang key (tidal.dev/gang-size, gang-min) on a pod that names no gang.
Status WithoutGang(const char* key) {
  return Status::Unresolvable(std::string(key) + ": set without a gang name (accepted: add " + kLabelGang +
                                  " naming the gang)",
                              "podspec");
}

std::string AcceptedLabelKeys(const TopologyLevels& levels) {
  std::string out = "a node label key of a topology level: ";
  for (const auto& l : levels.levels) out += l.label_key + ", ";
  return out + kHostnameKey;
}

// Two sources (neither Tidal's) set a field to different values: an error naming both, so that
// neither is silently picked. `field` is what they set ("gang name", "queue", ...).
Status Disagree(const std::string& key_a, const std::string& a, const std::string& key_b, const std::string& b,
                const std::string& field, const char* tidal_key) {
  return Status::Unresolvable(key_a + ": \"" + a + "\" disagrees with " + key_b + ": \"" + b + "\" (accepted: the same " +
                                  field + " in both, or " + tidal_key + " to choose)",
                              "podspec");
}

// The upstream PodGroup (row 1). *named: the pod names one; then *s has its gang, or a status.
Status UpstreamPodGroup(const std::map<std::string, std::string>& labels,
                        const std::map<std::string, std::string>& annotations, PodSchedulingSpec* s, bool* named) {
  const std::string* name = podkeys::Lookup(labels, annotations, kPodGroupName);
  *named = name != nullptr && !name->empty();
  if (!*named) return Status::Ok();
  const std::string* state = podkeys::Lookup(labels, annotations, kPodGroupState);
  const std::string st = state == nullptr ? "missing" : *state;
  if (st == "missing") {
    return Status::Wait("PodGroup " + *name + " (spec.schedulingGroup.podGroupName) does not exist yet", "gang");
  }
  if (st == "basic") return Status::Ok();  // schedulingPolicy.basic: each pod on its own
  if (st != "gang") return podkeys::Bad(kPodGroupState, st, "gang, basic, missing");
  s->gang = *name;
  s->gang_from = "PodGroup " + *name;
  const std::string* min = podkeys::Lookup(labels, annotations, kPodGroupMinCount);
  int64_t n = 0;
  if (min == nullptr || !podkeys::ParseCount(*min, kMaxGang, &n)) {
    return podkeys::Bad("PodGroup " + *name + " spec.schedulingPolicy.gang.minCount", min == nullptr ? "" : *min,
                        "an integer 1..10000");
  }
  s->gang_size = static_cast<int32_t>(n);
  return Status::Ok();
}

// A topology key as a message names it: the PodGroup's field for the shim's reserved key.
std::string Shown(const std::map<std::string, std::string>& labels, const std::map<std::string, std::string>& annotations,
                  const char* key) {
  if (std::string(key) != kPodGroupTopologyKey) return key;
  const std::string* pg = podkeys::Lookup(labels, annotations, kPodGroupName);
  return "PodGroup " + (pg == nullptr ? std::string() : *pg) + " spec.schedulingConstraints.topology[0].key";
}

// The level the first set key of `keys` names (a level name, or a node label key mapped to its
// level) into *level, and that key into *key; both untouched when none is set. Tidal's own key (the
// first) overrides the others; without it, every other key set must name the same level.
Status ResolveLevel(const std::map<std::string, std::string>& labels, const std::map<std::string, std::string>& annotations,
                    const TopologyLevels& levels, const std::vector<TopologyKey>& keys, std::string* level,
                    const char** key) {
  for (const auto& k : keys) {
    const std::string* v = podkeys::Lookup(labels, annotations, k.key);
    if (v == nullptr) continue;
    const std::string shown = Shown(labels, annotations, k.key);
    std::string found;
    if (!k.label_key) {
      if (levels.Find(*v) < 0) return podkeys::Bad(k.key, *v, levels.Accepted());
      found = *v;
    } else {
      found = podkeys::LevelOfLabelKey(levels, *v);
      if (found.empty()) return podkeys::Bad(shown, *v, AcceptedLabelKeys(levels));
    }
    if (*key == nullptr) {
      *key = k.key;
      *level = found;
      if (!k.label_key) return Status::Ok();  // Tidal's level name overrides the node label keys
    } else if (found != *level) {
      return Disagree(Shown(labels, annotations, *key), *podkeys::Lookup(labels, annotations, *key), shown, *v,
                      "topology level", keys.front().key);
    }
  }
  return Status::Ok();
}

// A preferred level means "closer than the required domain": one outer to or equal to the required
// level asks for nothing, so it is refused rather than silently meaningless.
Status PreferredInsideRequired(const TopologyLevels& levels, const PodSchedulingSpec& s, const char* required_key,
                               const std::string& preferred_value, const char* preferred_key) {
  const int required = levels.Find(s.required_level);
  if (levels.Find(s.preferred_level) > required) return Status::Ok();
  std::string inner;
  for (int l = required + 1; l < levels.size(); ++l) inner += (inner.empty() ? "" : ", ") + levels.Name(l);
  const std::string within = "the required level " + s.required_level + " (" + required_key + ")";
  return podkeys::Bad(preferred_key, preferred_value,
                      inner.empty() ? "none: " + within + " is the innermost; remove this key"
                                    : "a level inside " + within + ": " + inner);
}

}  // namespace

namespace podkeys {

const std::string* Lookup(const std::map<std::string, std::string>& labels,
                          const std::map<std::string, std::string>& annotations, const std::string& key) {
  if (auto it = annotations.find(key); it != annotations.end()) return &it->second;
  if (auto it = labels.find(key); it != labels.end()) return &it->second;
  return nullptr;
}

Status Bad(const std::string& key, const std::string& value, const std::string& accepted) {
  return Status::Unresolvable(key + ": invalid value \"" + value + "\" (accepted: " + accepted + ")", "podspec");
}

bool ParseCount(const std::string& s, int64_t max, int64_t* out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  *out = std::stoll(s);
  return *out >= 1 && *out <= max;
}

const std::vector<std::string>& KeysRead() {
  static const std::vector<std::string> kKeys = [] {
    std::set<std::string> k = {kLabelQueue,         kLabelGang,          kLabelGangSize,     kLabelGangMin,
                               kLabelTopologyRequired, kLabelTopologyPreferred, kLabelPreemptible,
                               kLabelRuntimeLimit,  kLabelCheckpointInterval, kLabelCheckpointOnNotice, kLabelLastCheckpoint,
                               kLabelClass, kLabelGpuModel, kLabelGangLeader,
                               kPodGroupName,       kPodGroupState,      kPodGroupMinCount,  kPodGroupTopologyKey,
                               limits::kOversizeAnnotation};
    for (const auto& row : GangSources()) {
      k.insert(row.name.begin(), row.name.end());
      if (row.size != nullptr) k.insert(row.size);
    }
    k.insert(QueueKeys().begin(), QueueKeys().end());
    for (const auto& t : RequiredKeys()) k.insert(t.key);
    for (const auto& t : PreferredKeys()) k.insert(t.key);
    for (const auto& row : ExclusiveSources()) {
      k.insert(row.key);
      k.insert(row.group.begin(), row.group.end());
    }
    return std::vector<std::string>(k.begin(), k.end());
  }();
  return kKeys;
}

Status CheckSizes(const std::map<std::string, std::string>& labels,
                  const std::map<std::string, std::string>& annotations) {
  if (const std::string* v = Lookup(labels, annotations, limits::kOversizeAnnotation)) {
    return Status::Unresolvable("pod: " + *v + " bytes as a Sync message, over the limit of " +
                                    std::to_string(limits::kMaxObjectBytes) +
                                    " (the front door sent it without its labels, annotations and constraints; "
                                    "shorten its node affinity, tolerations or labels)",
                                "podspec");
  }
  for (const auto& key : KeysRead()) {
    const std::string* v = Lookup(labels, annotations, key);
    if (v != nullptr && v->size() > limits::kMaxValueBytes) {
      return Status::Unresolvable(key + ": a value of " + std::to_string(v->size()) + " bytes, over the limit of " +
                                      std::to_string(limits::kMaxValueBytes),
                                  "podspec");
    }
  }
  return Status::Ok();
}

std::string LevelOfLabelKey(const TopologyLevels& levels, const std::string& key) {
  for (const auto& l : levels.levels) {
    if (l.label_key == key) return l.name;
  }
  return key == kHostnameKey ? "node" : "";
}

Status ResolveGang(const std::map<std::string, std::string>& labels, const std::map<std::string, std::string>& annotations,
                   PodSchedulingSpec* s) {
  const bool exclusive = !s->exclusive_key.empty();
  const GangSource* source = nullptr;
  bool upstream = false;
  const auto& rows = GangSources();
  for (size_t i = 0; i < rows.size() && source == nullptr && !upstream; ++i) {
    if (i == 1) {  // the upstream PodGroup comes right after Tidal's own key
      if (Status st = UpstreamPodGroup(labels, annotations, s, &upstream); !st.ok()) return st;
      if (upstream) break;
    }
    if (rows[i].workload && exclusive) continue;
    std::string name;
    if (JoinValues(labels, annotations, rows[i].name, "-", &name)) {
      source = &rows[i];
      s->gang = name;
      s->gang_from = rows[i].name.front();
    }
  }
  if (!s->gang.empty() && !IsGangName(s->gang)) return Bad(s->gang_from, s->gang, kGangNameAccepted);
  const std::string* tidal_size = Lookup(labels, annotations, kLabelGangSize);
  // Without tidal.dev/gang, every other source (upstream PodGroup, scheduler-plugins, Volcano, KAI,
  // Kueue) that names a gang must name this one, and those that carry a size must agree on it.
  const std::string* pg = Lookup(labels, annotations, kPodGroupName);
  const std::string pg_key = "spec.schedulingGroup.podGroupName";
  std::string size_key;  // the first own size seen, and its key
  int64_t size = 0;
  if (upstream && !s->gang.empty()) {
    size_key = "PodGroup " + *pg + " spec.schedulingPolicy.gang.minCount";
    size = s->gang_size;
  }
  if (source != &rows[0] && (upstream || source != nullptr)) {
    for (const auto& row : rows) {
      std::string name;
      if (&row == &rows[0] || row.workload || !JoinValues(labels, annotations, row.name, "-", &name)) continue;
      if (upstream && s->gang.empty()) {
        return Disagree(row.name.front(), name, pg_key, *pg + " (a PodGroup of schedulingPolicy.basic: no gang)",
                        "gang", kLabelGang);
      }
      if (name != s->gang) {
        return Disagree(upstream ? pg_key : s->gang_from, s->gang, row.name.front(), name, "gang name", kLabelGang);
      }
      const std::string* own = row.size != nullptr ? Lookup(labels, annotations, row.size) : nullptr;
      if (own == nullptr) continue;
      int64_t n = 0;
      if (!ParseCount(*own, kMaxGang, &n)) return Bad(row.size, *own, "an integer 1..10000");
      if (tidal_size != nullptr) continue;  // tidal.dev/gang-size wins over every own size
      if (size_key.empty()) {
        size_key = row.size;
        size = n;
      } else if (n != size) {
        return Disagree(size_key, std::to_string(size), row.size, *own, "gang size", kLabelGangSize);
      }
    }
  }
  if (tidal_size != nullptr) {
    int64_t n = 0;
    if (!ParseCount(*tidal_size, kMaxGang, &n)) return Bad(kLabelGangSize, *tidal_size, "an integer 1..10000");
    if (s->gang.empty()) return WithoutGang(kLabelGangSize);
    s->gang_size = static_cast<int32_t>(n);
  } else if (source != nullptr) {
    const std::string* own = source->size != nullptr ? Lookup(labels, annotations, source->size) : nullptr;
    int64_t n = 0;
    if (own != nullptr) {
      if (!ParseCount(*own, kMaxGang, &n)) return Bad(source->size, *own, "an integer 1..10000");
      s->gang_size = static_cast<int32_t>(n);
    } else if (!size_key.empty()) {
      s->gang_size = static_cast<int32_t>(size);  // another source naming the same gang gives its size
    } else if (source->needs_size) {
      std::string why = std::string(kLabelGangSize) + ": missing; required with " + source->name.front();
      if (source->size != nullptr) why += std::string(" unless ") + source->size + " is set";
      if (source->size_elsewhere != nullptr) why += std::string(" (") + source->from + " keeps the size in " + source->size_elsewhere + ")";
      return Status::Unresolvable(why + " (accepted: an integer 1..10000)", "podspec");
    } else {
      s->gang.clear();  // a workload controller's labels without a size: no gang
      s->gang_from.clear();
    }
  }
  if (s->gang.empty()) s->gang_size = 1;
  s->gang_min = s->gang_size;
  if (const std::string* v = Lookup(labels, annotations, kLabelGangMin)) {
    if (s->gang.empty()) return WithoutGang(kLabelGangMin);  // not silently 1, nor "accepted: 1..1"
    int64_t n = 0;
    if (!ParseCount(*v, s->gang_size, &n)) return Bad(kLabelGangMin, *v, "an integer 1.." + std::to_string(s->gang_size));
    s->gang_min = static_cast<int32_t>(n);
  }
  return Status::Ok();
}

Status ResolveQueue(const std::map<std::string, std::string>& labels,
                    const std::map<std::string, std::string>& annotations, PodSchedulingSpec* s) {
  const char* from = nullptr;  // the first key set; the peers' keys after it must agree with it
  for (const char* k : QueueKeys()) {
    const std::string* v = Lookup(labels, annotations, k);
    if (v == nullptr) continue;
    if (v->empty() || v->size() > 63) return Bad(k, *v, "a queue name of 1-63 characters");
    if (from == nullptr) {
      from = k;
      s->queue = *v;
      if (k == kLabelQueue) return Status::Ok();  // Tidal's own key overrides (or maps) the peers'
    } else if (*v != s->queue) {
      return Disagree(from, s->queue, k, *v, "queue", kLabelQueue);
    }
  }
  return Status::Ok();
}

Status ResolveTopology(const std::map<std::string, std::string>& labels,
                       const std::map<std::string, std::string>& annotations, const TopologyLevels& levels,
                       PodSchedulingSpec* s) {
  const char* required_key = nullptr;
  const char* preferred_key = nullptr;
  if (Status st = ResolveLevel(labels, annotations, levels, RequiredKeys(), &s->required_level, &required_key); !st.ok()) {
    return st;
  }
  if (Status st = ResolveLevel(labels, annotations, levels, PreferredKeys(), &s->preferred_level, &preferred_key); !st.ok()) {
    return st;
  }
  if (s->required_level.empty() || s->preferred_level.empty()) return Status::Ok();
  return PreferredInsideRequired(levels, *s, required_key, *Lookup(labels, annotations, preferred_key), preferred_key);
}

}  // namespace podkeys

ExclusiveTopology ExclusiveTopologyOf(const std::string& ns, const std::map<std::string, std::string>& labels,
                                      const std::map<std::string, std::string>& annotations) {
  for (const auto& row : ExclusiveSources()) {
    const std::string* key = podkeys::Lookup(labels, annotations, row.key);
    if (key == nullptr) continue;
    std::string group;
    if (!JoinValues(labels, annotations, row.group, "/", &group) || !limits::IsLabelKey(*key)) return {};
    return {*key, ns + "/" + row.tag + "/" + group};
  }
  return {};
}

namespace podkeys {

Status ResolveExclusive(const std::map<std::string, std::string>& labels,
                        const std::map<std::string, std::string>& annotations, PodSchedulingSpec* s) {
  for (const auto& row : ExclusiveSources()) {
    const std::string* key = podkeys::Lookup(labels, annotations, row.key);
    if (key == nullptr) continue;
    if (!limits::IsLabelKey(*key)) return podkeys::Bad(row.key, *key, "a node label key, e.g. topology.tidal.dev/leaf");
    std::string group, names;
    for (const char* g : row.group) names += (names.empty() ? "" : ", ") + std::string(g);
    if (!JoinValues(labels, annotations, row.group, "/", &group)) {
      return Status::Unresolvable(std::string(row.key) + ": set without the group's labels (accepted: with " + names + ")",
                                  "podspec");
    }
    s->exclusive_key = *key;
    s->exclusive_group = std::string(row.tag) + "/" + group;
    return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace podkeys
}  // namespace tidal
