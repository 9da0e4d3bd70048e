#include "core/api/node_constraints.h"

#include <algorithm>
#include <charconv>

#include "core/api/node.h"

namespace tidal {

namespace {

std::optional<int64_t> ParseInt(const std::string& s) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

std::string_view OpName(SelectorOp op) {
  switch (op) {
    case SelectorOp::kIn: return "In";
    case SelectorOp::kNotIn: return "NotIn";
    case SelectorOp::kExists: return "Exists";
    case SelectorOp::kDoesNotExist: return "DoesNotExist";
    case SelectorOp::kGt: return "Gt";
    case SelectorOp::kLt: return "Lt";
  }
  return "In";
}

std::string RequirementString(const SelectorRequirement& r) {
  std::string out = r.key + " " + std::string(OpName(r.op));
  if (!r.values.empty()) {
    out += " [";
    for (size_t i = 0; i < r.values.size(); ++i) out += (i ? "," : "") + r.values[i];
    out += "]";
  }
  return out;
}

std::string TermString(const SelectorTerm& t) {
  std::string out = "{";
  for (const auto& r : t.expressions) out += RequirementString(r) + ";";
  for (const auto& r : t.fields) out += "field " + RequirementString(r) + ";";
  return out + "}";
}

// Blocks placement: NoSchedule and NoExecute (PreferNoSchedule only lowers the preference).
bool Hard(const Taint& t) { return t.effect != TaintEffect::kPreferNoSchedule; }

bool Tolerated(const std::vector<Toleration>& ts, const Taint& t) {
  return std::any_of(ts.begin(), ts.end(), [&](const Toleration& x) { return x.Tolerates(t); });
}

}  // namespace

TaintEffect ParseTaintEffect(std::string_view text) {
  if (text == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (text == "NoExecute") return TaintEffect::kNoExecute;
  return TaintEffect::kNoSchedule;
}

std::string_view TaintEffectName(TaintEffect e) {
  switch (e) {
    case TaintEffect::kNoSchedule: return "NoSchedule";
    case TaintEffect::kPreferNoSchedule: return "PreferNoSchedule";
    case TaintEffect::kNoExecute: return "NoExecute";
  }
  return "NoSchedule";
}

std::string Taint::ToString() const {
  return key + (value.empty() ? "" : "=" + value) + ":" + std::string(TaintEffectName(effect));
}

bool Toleration::Tolerates(const Taint& t) const {
  if (effect && *effect != t.effect) return false;
  if (key.empty()) return exists;  // an empty key only tolerates everything with Exists
  if (key != t.key) return false;
  return exists || value == t.value;
}

StatusOr<SelectorOp> ParseSelectorOp(std::string_view text, std::string_view field) {
  for (SelectorOp op : {SelectorOp::kIn, SelectorOp::kNotIn, SelectorOp::kExists, SelectorOp::kDoesNotExist,
                        SelectorOp::kGt, SelectorOp::kLt}) {
    if (text == OpName(op)) return op;
  }
  return Status::Unresolvable(std::string(field) + ": unknown operator \"" + std::string(text) +
                                  "\" (accepted: In, NotIn, Exists, DoesNotExist, Gt, Lt)",
                              "podspec");
}

bool SelectorRequirement::Matches(const std::map<std::string, std::string>& labels) const {
  auto it = labels.find(key);
  const bool has = it != labels.end();
  switch (op) {
    case SelectorOp::kIn: return has && std::find(values.begin(), values.end(), it->second) != values.end();
    case SelectorOp::kNotIn: return !has || std::find(values.begin(), values.end(), it->second) == values.end();
    case SelectorOp::kExists: return has;
    case SelectorOp::kDoesNotExist: return !has;
    case SelectorOp::kGt:
    case SelectorOp::kLt: {
      if (!has || values.size() != 1) return false;
      auto a = ParseInt(it->second), b = ParseInt(values[0]);
      if (!a || !b) return false;
      return op == SelectorOp::kGt ? *a > *b : *a < *b;
    }
  }
  return false;
}

bool SelectorTerm::Matches(const Node& n) const {
  if (expressions.empty() && fields.empty()) return false;  // kube-scheduler: an empty term matches nothing
  for (const auto& r : expressions) {
    if (!r.Matches(n.labels)) return false;
  }
  for (const auto& r : fields) {
    // matchFields supports metadata.name only (the API server refuses other keys).
    if (r.key != "metadata.name" || !r.Matches({{r.key, n.name}})) return false;
  }
  return true;
}

bool NodeConstraints::Empty() const {
  return node_selector.empty() && required.empty() && preferred.empty() && tolerations.empty() &&
         max_members_per_node == 0 && excluded_nodes.empty();
}

std::string NodeConstraints::Signature() const {
  if (Empty()) return {};
  std::string s = "sel{";
  for (const auto& [k, v] : node_selector) s += k + "=" + v + ";";
  s += "}req[";
  for (const auto& t : required) s += TermString(t);
  s += "]pref[";
  for (const auto& p : preferred) s += std::to_string(p.weight) + TermString(p.term);
  s += "]tol[";
  for (const auto& t : tolerations) {
    s += t.key + (t.exists ? "?" : "=" + t.value) + ":" + (t.effect ? std::string(TaintEffectName(*t.effect)) : "*") + ";";
  }
  s += "]max" + std::to_string(max_members_per_node) + "ex[";
  for (const auto& n : excluded_nodes) s += n + ";";
  s += "]pin[";  // the same nodes, other words: a memo of refusals keeps them apart
  for (const auto& [k, why] : pinned) s += k + "=" + why + ";";
  return s + "]";
}

bool NodeConstraints::ToleratesUnschedulable() const {
  return Tolerated(tolerations, Taint{kTaintUnschedulable, "", TaintEffect::kNoSchedule});
}

std::string NodeConstraints::Refusal(const Node& n) const {
  if (!excluded_nodes.empty() && excluded_nodes.count(n.name)) {
    return "node " + n.name + " was refused by the front door's own filters";
  }
  if (n.health == NodeHealth::kCordoned && !ToleratesUnschedulable()) {
    return std::string("node is cordoned (spec.unschedulable) and the pod does not tolerate ") + kTaintUnschedulable +
           ":NoSchedule";
  }
  for (const auto& [k, v] : node_selector) {
    auto it = n.labels.find(k);
    if (it != n.labels.end() && it->second == v) continue;
    if (auto pin = pinned.find(k); pin != pinned.end()) return "not in " + pin->second + " (" + k + "=" + v + ")";
    return "node selector " + k + "=" + v + " does not match";
  }
  if (!required.empty() &&
      std::none_of(required.begin(), required.end(), [&](const SelectorTerm& t) { return t.Matches(n); })) {
    return "required node affinity does not match";
  }
  for (const auto& t : n.taints) {
    if (Hard(t) && !Tolerated(tolerations, t)) return "untolerated taint " + t.ToString();
  }
  return {};
}

int64_t NodeConstraints::Preference(const Node& n) const {
  int64_t score = 0;
  for (const auto& p : preferred) {
    if (p.term.Matches(n)) score += p.weight;
  }
  for (const auto& t : n.taints) {
    if (!Hard(t) && !Tolerated(tolerations, t)) --score;
  }
  return score;
}

}  // namespace tidal
