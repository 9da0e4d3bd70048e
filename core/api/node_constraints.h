// NodeConstraints: which nodes a workload's members may use beyond capacity, pool and GPU model:
// the node-static constraints of a Kubernetes pod (spec.nodeSelector, required and preferred node
// affinity, tolerations against node taints), a per-node member cap (a gang whose members repel
// each other by pod anti-affinity on kubernetes.io/hostname), and nodes the front door's own
// filters refused (fed back by the shim: never planned again while excluded).
//
// The engine evaluates these itself, before it plans, with kube-scheduler's semantics:
//   - nodeSelector: every key equals the node's label;
//   - required node affinity: terms are ORed, the requirements of a term ANDed; operators In,
//     NotIn, Exists, DoesNotExist, Gt, Lt (integers); matchFields only knows metadata.name;
//     an empty term list means no constraint, a term with no requirements matches nothing;
//   - taints: a NoSchedule or NoExecute taint must be tolerated; PreferNoSchedule is soft (it
//     only lowers the node's preference); a taint with an unknown effect counts as NoSchedule;
//   - a cordoned node (spec.unschedulable, NodeHealth::kCordoned) admits only a pod that tolerates
//     the taint node.kubernetes.io/unschedulable:NoSchedule, whether or not the node carries it
//     (kube-scheduler's NodeUnschedulable; DaemonSet pods tolerate it);
//   - preferred node affinity: the sum of matching terms' weights ranks nodes inside a domain.
//
// Thread-safety: plain value, immutable once built (shared between a gang's members by
// shared_ptr<const NodeConstraints>).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/status.h"

namespace tidal {

struct Node;

// The taint kube-scheduler checks a cordoned node's pods against (node.kubernetes.io/unschedulable).
inline constexpr const char* kTaintUnschedulable = "node.kubernetes.io/unschedulable";

enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };
// Unknown effects are NoSchedule (the strict reading: an unknown is never "free").
TaintEffect ParseTaintEffect(std::string_view text);
std::string_view TaintEffectName(TaintEffect e);

struct Taint {
  std::string key, value;
  TaintEffect effect = TaintEffect::kNoSchedule;
  bool operator==(const Taint&) const = default;
  std::string ToString() const;  // "key=value:NoSchedule"
};

struct Toleration {
  std::string key;    // "" with exists = every taint
  std::string value;
  bool exists = false;                // operator Exists (else Equal)
  std::optional<TaintEffect> effect;  // nullopt = every effect
  bool operator==(const Toleration&) const = default;
  bool Tolerates(const Taint& t) const;
};

enum class SelectorOp { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };
StatusOr<SelectorOp> ParseSelectorOp(std::string_view text, std::string_view field);

struct SelectorRequirement {
  std::string key;
  SelectorOp op = SelectorOp::kIn;
  std::vector<std::string> values;
  bool operator==(const SelectorRequirement&) const = default;
  bool Matches(const std::map<std::string, std::string>& labels) const;
};

struct SelectorTerm {
  std::vector<SelectorRequirement> expressions;  // on node labels
  std::vector<SelectorRequirement> fields;       // on node fields (metadata.name)
  bool operator==(const SelectorTerm&) const = default;
  bool Matches(const Node& n) const;
};

struct PreferredTerm {
  int32_t weight = 0;
  SelectorTerm term;
  bool operator==(const PreferredTerm&) const = default;
};

struct NodeConstraints {
  std::map<std::string, std::string> node_selector;
  std::vector<SelectorTerm> required;  // ORed; empty = any node
  std::vector<PreferredTerm> preferred;
  std::vector<Toleration> tolerations;
  int32_t max_members_per_node = 0;       // 0 = no cap
  std::set<std::string> excluded_nodes;   // refused by the front door's own filters
  // node_selector keys the engine set, not the pod (the rest of a running gang joins its members'
  // domain: engine_gang.cc PinToDomain): key -> whose domain it is, for Refusal's words.
  std::map<std::string, std::string> pinned;
  bool operator==(const NodeConstraints&) const = default;  // every field above

  // Canonical text of everything above: equal signatures admit the same nodes (memo keys).
  std::string Signature() const;
  bool Empty() const;
  // "" when the node admits a member, otherwise why not ("node selector gpu=a100 does not match",
  // "not in gang ml/a's domain, where its running members are (topology.tidal.dev/nvlink=nv-2)"
  // for a pinned key, "untolerated taint dedicated=infer:NoSchedule", "node is cordoned ...", ...).
  // Health other than cordoned is not judged here (Node::Schedulable).
  std::string Refusal(const Node& n) const;
  // Tolerates node.kubernetes.io/unschedulable:NoSchedule: may use cordoned nodes.
  bool ToleratesUnschedulable() const;
  // Preference of a node that admits a member: preferred-term weights, minus one per untolerated
  // PreferNoSchedule taint (higher is better).
  int64_t Preference(const Node& n) const;
};

}  // namespace tidal
