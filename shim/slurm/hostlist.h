// Slurm hostlist expressions in plain C++ (no libslurm): "gpu[01-03,07],cpu1" <-> the names.
// Used by the JSON reader, the recorded-state driver and the libslurm reader alike, so every reader
// expands a NodeList the same way.
//
// Grammar (what slurmctld prints and accepts): items separated by ',' or whitespace outside
// brackets; an item is text with zero or more "[ranges]" groups, ranges "N" or "LO-HI" separated by
// ','; the width of LO sets zero padding ("[08-10]" -> 08 09 10, "[8-10]" -> 8 9 10). Several
// groups expand as a cartesian product ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2). Empty items are
// skipped. Anything else is an error naming the expression.
//
// Threading: pure functions; no shared state.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/status.h"

namespace tidal::slurm {

// Expansions larger than this are refused (a typo like "n[1-999999999]" must not eat the heap).
inline constexpr size_t kMaxHostlistNames = 100000;

// Appends the names of `expr` to *out, in order, duplicates kept. On error *out is unchanged and
// the message starts with `field`: "nodes: unbalanced '[' in 'gpu[01-'".
Status ExpandHostlist(std::string_view expr, std::vector<std::string>* out,
                      std::string_view field = "hostlist", size_t max_names = kMaxHostlistNames);

// The shortest usual form of `names`: names sharing a prefix and a numeric suffix of one width are
// merged into a bracket ("gpu01,gpu02,gpu03,gpu07" -> "gpu[01-03,07]"); duplicates are dropped,
// numbers sorted within a bracket, prefixes kept in order of first appearance. Names without a
// numeric suffix are written as they are. ExpandHostlist(CompressHostlist(v)) is v as a set.
std::string CompressHostlist(const std::vector<std::string>& names);

}  // namespace tidal::slurm
