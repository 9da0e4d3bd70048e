// The node constraints of a gang whose members do not all carry the same ones (a launcher and its
// workers in one Kueue pod group or JobSet, a LeaderWorkerSet leader with its own template, pods
// made by hand): the engine places a gang with one NodeConstraints for every member, so it plans
// on the nodes that admit *every* pending member. Planning with one member's constraints, as
// before, put the others on nodes kube-scheduler's own filters then refused, one
// TidalPlannedNodeRefused and one re-plan per node, and never said which member could not go where.
//
// AllOf is exact where kube-scheduler's semantics allow it (node_constraints.h):
//   - nodeSelector: both maps (a key the two set to different values admits no node);
//   - required node affinity: the terms of both, ANDed pairwise (a term with no requirement
//     matches nothing, so a pair with one is dropped; no pair left admits no node);
//   - tolerations: a taint is tolerated when both tolerate it (pairwise intersections);
//   - preferred terms: both; members per node: the smaller cap; refused nodes: both.
// Beyond kMaxTerms terms (affinity or tolerations) it keeps `a`'s, which is what was done before.
// Threading: pure functions.
#pragma once

#include <memory>

#include "core/api/node_constraints.h"

namespace tidal {

// Whether a and b admit the same nodes the same way (nullptr = none, same as an empty value).
bool SameNodeConstraints(const NodeConstraints* a, const NodeConstraints* b);

// The constraints that admit a node exactly when both a and b do (nullptr = none).
std::shared_ptr<const NodeConstraints> AllOf(const std::shared_ptr<const NodeConstraints>& a,
                                             const std::shared_ptr<const NodeConstraints>& b);

}  // namespace tidal
