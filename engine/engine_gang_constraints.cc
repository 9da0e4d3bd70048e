// AllOf and SameNodeConstraints: one gang's node constraints from members that differ
// (engine_gang_constraints.h has why and the rules).
// Threading: pure functions.
#include "engine/engine_gang_constraints.h"

#include <optional>
#include <vector>

namespace tidal {
namespace {

constexpr size_t kMaxTerms = 64;  // affinity terms or tolerations of a combination

bool MatchesNothing(const SelectorTerm& t) { return t.expressions.empty() && t.fields.empty(); }

// The taints both s and t tolerate, as one toleration; nullopt when there are none.
std::optional<Toleration> BothTolerate(const Toleration& s, const Toleration& t) {
  if ((s.key.empty() && !s.exists) || (t.key.empty() && !t.exists)) return std::nullopt;  // tolerates nothing
  if (s.effect && t.effect && *s.effect != *t.effect) return std::nullopt;
  Toleration r;
  r.effect = s.effect ? s.effect : t.effect;
  const Toleration* narrow = nullptr;  // a key-wildcard (empty key, Exists) takes the other's key and value
  if (s.key.empty()) narrow = &t;
  if (t.key.empty()) narrow = &s;
  if (narrow != nullptr) {
    r.key = narrow->key;
    r.value = narrow->value;
    r.exists = narrow->exists;
    return r;
  }
  if (s.key != t.key) return std::nullopt;
  r.key = s.key;
  if (s.exists && t.exists) {
    r.exists = true;
  } else if (s.exists || t.exists) {
    r.value = s.exists ? t.value : s.value;
  } else if (s.value == t.value) {
    r.value = s.value;
  } else {
    return std::nullopt;
  }
  return r;
}

}  // namespace

bool SameNodeConstraints(const NodeConstraints* a, const NodeConstraints* b) {
  if (a == b) return true;
  static const NodeConstraints kNone;
  return (a != nullptr ? *a : kNone) == (b != nullptr ? *b : kNone);
}

std::shared_ptr<const NodeConstraints> AllOf(const std::shared_ptr<const NodeConstraints>& a,
                                             const std::shared_ptr<const NodeConstraints>& b) {
  if (SameNodeConstraints(a.get(), b.get())) return a != nullptr ? a : b;
  static const NodeConstraints kNone;
  const NodeConstraints& x = a != nullptr ? *a : kNone;
  const NodeConstraints& y = b != nullptr ? *b : kNone;
  auto c = std::make_shared<NodeConstraints>(x);

  // Required node affinity: (x's terms ORed) AND (y's terms ORed) = the pairs ORed.
  if (c->required.empty()) {
    c->required = y.required;
  } else if (!y.required.empty() && x.required.size() * y.required.size() <= kMaxTerms) {
    std::vector<SelectorTerm> pairs;
    for (const auto& s : x.required) {
      for (const auto& t : y.required) {
        if (MatchesNothing(s) || MatchesNothing(t)) continue;
        SelectorTerm both = s;
        both.expressions.insert(both.expressions.end(), t.expressions.begin(), t.expressions.end());
        both.fields.insert(both.fields.end(), t.fields.begin(), t.fields.end());
        pairs.push_back(std::move(both));
      }
    }
    if (pairs.empty()) pairs.push_back(SelectorTerm{});  // no pair matches: no node
    c->required = std::move(pairs);
  }
  // nodeSelector: both; a key y sets to another value goes into every term as `key In (y's)`,
  // which no node that has x's value matches: no node at all, and its refusal names the key.
  for (const auto& [k, v] : y.node_selector) {
    auto [it, added] = c->node_selector.emplace(k, v);
    if (added || it->second == v) continue;
    if (c->required.empty()) c->required.push_back(SelectorTerm{});
    for (auto& t : c->required) t.expressions.push_back(SelectorRequirement{k, SelectorOp::kIn, {v}});
  }
  // Tolerations: a taint both tolerate.
  if (x.tolerations.size() * y.tolerations.size() <= kMaxTerms) {
    c->tolerations.clear();
    for (const auto& s : x.tolerations) {
      for (const auto& t : y.tolerations) {
        if (auto both = BothTolerate(s, t)) c->tolerations.push_back(std::move(*both));
      }
    }
  }
  c->preferred.insert(c->preferred.end(), y.preferred.begin(), y.preferred.end());
  if (y.max_members_per_node > 0 && (c->max_members_per_node == 0 || y.max_members_per_node < c->max_members_per_node)) {
    c->max_members_per_node = y.max_members_per_node;
  }
  c->excluded_nodes.insert(y.excluded_nodes.begin(), y.excluded_nodes.end());
  return c;
}

}  // namespace tidal
