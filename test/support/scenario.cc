#include "test/support/scenario.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/framework/scheduler.h"
#include "core/io/cluster_file.h"
#include "core/io/fields.h"
#include "core/io/queue_config.h"
#include "core/io/workload_file.h"
#include "plugins/registry.h"

namespace tidal::testing {
namespace {

void CheckInvariants(const ClusterState& before, const ClusterState& after, const std::vector<Workload>& ws,
                     const CycleResult& r, std::vector<std::string>& fail) {
  std::map<std::string, const Workload*> by_id;
  for (const auto& w : ws) by_id[w.id] = &w;
  for (const auto& d : r.decisions) {
    const Workload& w = *by_id.at(d.workload_id);
    const bool placed = d.outcome == Outcome::kPlaced || d.outcome == Outcome::kWaiting;
    const int32_t members = d.placement.PlacedMembers();
    if (placed && (members < w.min_members || members > w.members)) {
      fail.push_back(w.id + ": partial gang: " + std::to_string(members) + " members placed");
    }
    if (!placed && !d.placement.assignments.empty()) fail.push_back(w.id + ": not placed but has assignments");
    if (!placed && after.running().count(w.id)) fail.push_back(w.id + ": not placed but holds capacity");
  }
  for (NodeId n = 0; n < after.node_count(); ++n) {
    const Node& a = after.node(n);
    const Node& b = before.node(n);
    const Resources added = a.allocated - b.allocated;
    const bool grew = added.gpus > 0 || added.cpu_milli > 0 || added.memory_bytes > 0;
    if (grew && !b.Schedulable()) fail.push_back("node " + a.name + " (" + std::string(NodeHealthName(b.health)) + ") received work");
    if (grew && !a.capacity.Covers(a.allocated)) fail.push_back("node " + a.name + " over capacity");
  }
}

void CheckExpectation(const nlohmann::json& e, const std::string& path, const ClusterState& st,
                      const std::map<std::string, const Decision*>& decisions, std::vector<std::string>& fail) {
  Fields f(e, path);
  std::string id, outcome, domain, domain_level, within, reason;
  f.Str("workload", &id, true);
  f.Str("outcome", &outcome);
  f.Str("domain", &domain);
  f.Str("domainLevel", &domain_level);
  f.Str("withinOne", &within);
  f.Str("reasonContains", &reason);
  int32_t members = -1;
  f.Int("members", &members, 0, 1000000);
  const nlohmann::json* spans = f.Get("spans");
  const nlohmann::json* nodes = f.Get("nodes");
  const nlohmann::json* not_nodes = f.Get("notNodes");
  const nlohmann::json* victims = f.Get("victims");
  const nlohmann::json* shrinks = f.Get("shrinks");
  bool want_reserved = false, check_reserved = f.Has("reserved");
  f.Bool("reserved", &want_reserved);
  int64_t eta = -2;
  f.Int("eta", &eta, -1, INT64_MAX / 2);
  if (Status s = f.Done(); !s.ok()) return fail.push_back("bad expectation: " + s.Message());
  auto it = decisions.find(id);
  if (it == decisions.end()) return fail.push_back(path + ": no decision for workload " + id);
  const Decision& d = *it->second;
  const std::string who = id + ": ";
  const std::string got = std::string(OutcomeName(d.outcome));
  if (!outcome.empty() && outcome != got) {
    fail.push_back(who + "outcome " + got + ", want " + outcome + " (" + d.explanation + ")");
  }
  const auto& levels = st.levels();
  if (!domain.empty() && d.placement.domain != domain) fail.push_back(who + "domain " + d.placement.domain + ", want " + domain);
  if (!domain_level.empty()) {
    const std::string l = d.placement.domain_level < 0 ? "cluster" : levels.Name(d.placement.domain_level);
    if (l != domain_level) fail.push_back(who + "domain level " + l + ", want " + domain_level);
  }
  std::set<std::string> placed_nodes;
  for (const auto& a : d.placement.assignments) placed_nodes.insert(st.node(a.node).name);
  if (!within.empty()) {
    const int l = levels.Find(within);
    if (l < 0) {
      fail.push_back(who + "withinOne: unknown level " + within);
    } else {
      std::set<VertexId> vs;
      for (const auto& a : d.placement.assignments) vs.insert(l == levels.node_level() ? a.node : st.AncestorAt(a.node, l));
      if (vs.size() != 1) fail.push_back(who + "members span " + std::to_string(vs.size()) + " " + within + " domains, want 1");
    }
  }
  if (spans != nullptr && spans->is_object()) {
    for (const auto& [lvl, want] : spans->items()) {
      const int l = levels.Find(lvl);
      if (l < 0 || !want.is_number_integer()) {
        fail.push_back(who + "spans." + lvl + ": unknown level or not an integer");
        continue;
      }
      const int32_t have = d.placement.spans.empty() ? 0 : d.placement.spans[static_cast<size_t>(l)];
      if (have != want.get<int32_t>()) {
        fail.push_back(who + "spans " + std::to_string(have) + " " + lvl + ", want " + std::to_string(want.get<int32_t>()));
      }
    }
  }
  if (nodes != nullptr) {
    std::set<std::string> want;
    for (const auto& n : *nodes) want.insert(n.get<std::string>());
    if (want != placed_nodes) {
      std::string g;
      for (const auto& n : placed_nodes) g += n + " ";
      fail.push_back(who + "nodes {" + g + "} differ from expected");
    }
  }
  if (not_nodes != nullptr) {
    for (const auto& n : *not_nodes) {
      if (placed_nodes.count(n.get<std::string>())) fail.push_back(who + "placed on forbidden node " + n.get<std::string>());
    }
  }
  if (victims != nullptr) {
    std::set<std::string> want, have(d.preemption.victims.begin(), d.preemption.victims.end());
    for (const auto& v : *victims) want.insert(v.get<std::string>());
    if (want != have) {
      std::string g;
      for (const auto& v : have) g += v + " ";
      fail.push_back(who + "victims {" + g + "} differ from expected");
    }
  }
  if (shrinks != nullptr) {
    std::set<std::string> want, have;
    for (const auto& v : *shrinks) want.insert(v.get<std::string>());
    for (const auto& sh : d.preemption.shrinks) have.insert(sh.workload);
    if (want != have) fail.push_back(who + "elastic shrinks differ from expected (" + std::to_string(have.size()) + " workload(s))");
  }
  if (check_reserved && d.reserved != want_reserved) fail.push_back(who + "reserved=" + (d.reserved ? "true" : "false"));
  if (eta != -2 && d.eta_s != eta) fail.push_back(who + "eta " + std::to_string(d.eta_s) + ", want " + std::to_string(eta));
  if (members >= 0 && d.placement.PlacedMembers() != members) {
    fail.push_back(who + std::to_string(d.placement.PlacedMembers()) + " members placed, want " + std::to_string(members));
  }
  if (!reason.empty()) {
    const std::string all = d.status.ToString() + " | " + d.explanation;
    if (all.find(reason) == std::string::npos) fail.push_back(who + "reason \"" + all + "\" lacks \"" + reason + "\"");
  }
}

}  // namespace

ScenarioReport RunScenarioFile(const std::string& path) {
  ScenarioReport rep;
  auto doc = LoadDocument(path);
  if (!doc.ok()) return rep.failures.push_back(doc.status().Message()), rep;
  const auto& root = doc->root;
  const std::string expect_error = root.value("expectError", "");
  auto spec = DecodeClusterSpec(*doc, "cluster");
  StatusOr<ClusterState> built = spec.ok() ? ClusterState::Build(spec->levels, std::move(spec->nodes)) : StatusOr<ClusterState>(spec.status());
  if (!expect_error.empty()) {
    if (built.ok()) {
      rep.failures.push_back("cluster loaded, but expected error containing: " + expect_error);
    } else if (built.status().Message().find(expect_error) == std::string::npos) {
      rep.failures.push_back("error \"" + built.status().Message() + "\" lacks \"" + expect_error + "\"");
    }
    return rep;
  }
  if (!built.ok()) return rep.failures.push_back(built.status().Message()), rep;
  ClusterState state = std::move(built).value();
  const int64_t now = root.value("now", int64_t{0});
  // Optional queue tree (same keys as the engine config) and its ledger.
  std::vector<std::string> qerrors;
  const QueueConfig qcfg = DecodeQueueConfig(*doc, root, &qerrors);
  if (!qerrors.empty()) return rep.failures.push_back(qerrors.front()), rep;
  auto tree = QueueTree::Build(qcfg);
  if (!tree.ok()) return rep.failures.push_back(tree.status().Message()), rep;
  QuotaLedger ledger(*tree);
  {
    ResVec cap(static_cast<size_t>(ledger.tree().resources()), 0);
    for (const auto& n : state.nodes()) {
      const ResVec c = ledger.tree().Request(n.capacity, n.gpu_model);
      for (size_t i = 0; i < c.size(); ++i) cap[i] += c[i];
    }
    ledger.SetCapacity(cap);
    ledger.Advance(now);
  }
  // Optional running workloads: a workload entry plus nodes (one member per entry), start, borrowed.
  if (root.contains("running")) {
    const auto& list = root.at("running");
    for (size_t i = 0; i < list.size(); ++i) {
      nlohmann::json wj = list[i];
      const std::string where = "running[" + std::to_string(i) + "]";
      if (!wj.is_object() || !wj.contains("nodes")) return rep.failures.push_back(where + ".nodes: required"), rep;
      const nlohmann::json nodes = wj["nodes"];
      const int64_t start = wj.value("start", int64_t{0});
      const bool borrowed = wj.value("borrowed", false);
      wj.erase("nodes");
      wj.erase("start");
      wj.erase("borrowed");
      if (!wj.contains("members")) wj["members"] = static_cast<int64_t>(nodes.size());
      auto w = DecodeWorkload(wj, where);
      if (!w.ok()) return rep.failures.push_back(doc->Locate(w.status()).Message()), rep;
      std::vector<MemberAssignment> as;
      for (const auto& nn : nodes) {
        const NodeId id = state.FindNode(nn.get<std::string>());
        if (id == kNoNode) return rep.failures.push_back(where + ".nodes: unknown node " + nn.get<std::string>()), rep;
        auto it = std::find_if(as.begin(), as.end(), [id](const MemberAssignment& m) { return m.node == id; });
        if (it == as.end()) {
          as.push_back({id, 1});
        } else {
          it->members++;
        }
      }
      if (Status st = state.AddRunning(Allocation{*w, as, start}); !st.ok()) return rep.failures.push_back(st.Message()), rep;
      const int q = ledger.tree().Find(w->queue);
      if (q > 0) (void)ledger.Charge(w->id, q, ledger.tree().Request(w->Total(), w->gpu_model), borrowed);
    }
  }
  const ClusterState before = state;
  auto workloads = DecodeWorkloads(*doc, "workloads");
  if (!workloads.ok()) return rep.failures.push_back(workloads.status().Message()), rep;
  ProfileSpec pspec = ProfileSpec::Default();
  if (root.contains("profile")) {
    auto ps = ProfileSpec::FromJson(root.at("profile"), "profile");
    if (!ps.ok()) return rep.failures.push_back(doc->Locate(ps.status()).Message()), rep;
    pspec = *ps;
  }
  const Registry registry = plugins::DefaultRegistry();
  auto profile = Profile::Build(pspec, registry, PluginContext{state.levels(), &ledger});
  if (!profile.ok()) return rep.failures.push_back(profile.status().Message()), rep;
  SchedulerOptions opts;
  opts.apply_preemptions = true;
  std::set<std::string> evicted;
  opts.on_evict = [&](const std::string& id, int32_t members) {
    if (members < 0) {
      ledger.Uncharge(id);
      evicted.insert(id);
    }
  };
  Scheduler sched(std::move(profile).value(), opts);
  CycleResult r = sched.RunCycle(state, *workloads, now);
  std::map<std::string, const Decision*> by_id;
  for (const auto& d : r.decisions) {
    by_id[d.workload_id] = &d;
    rep.table += d.workload_id + ": " + std::string(OutcomeName(d.outcome)) + " " + d.placement.domain + " - " +
                 d.explanation + "\n";
  }
  CheckInvariants(before, state, *workloads, r, rep.failures);
  // No running gang is ever left partly evicted: each one that was running is either gone whole
  // (evicted) or keeps at least its minimum.
  for (const auto& [id, a] : before.running()) {
    auto it = state.running().find(id);
    if (it == state.running().end()) {
      if (!evicted.count(id)) rep.failures.push_back(id + ": disappeared without an eviction");
      continue;
    }
    const int32_t now_members = it->second.workload.members;
    if (now_members < a.workload.min_members) rep.failures.push_back(id + ": partly evicted below its minimum");
  }
  if (root.contains("expect")) {
    const auto& ex = root.at("expect");
    for (size_t i = 0; i < ex.size(); ++i) CheckExpectation(ex[i], "expect[" + std::to_string(i) + "]", state, by_id, rep.failures);
  } else {
    rep.failures.push_back("scenario has no expect section");
  }
  return rep;
}

}  // namespace tidal::testing
