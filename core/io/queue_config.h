// Queue configuration: the queue tree of the fair-share / quota model, from YAML/JSON.
//
//   resources:
//     gpuModels: [h100, a100]      # optional: per-model GPU resources "gpus.h100", "gpus.a100"
//   usageHalfLife: 7d              # default half-life of usage decay
//   queues:                        # a flat list; the tree comes from `parent`
//     - name: research             # unique; [a-z0-9-], 1..63
//       weight: 2                  # fair-share weight > 0 (default 1)
//       nominal: {gpus: 512}       # per resource; a resource not listed is not limited
//     - name: team-llm
//       parent: research
//       nominal: {gpus: 256, cpu: 2000, memory: 8Ti}
//       borrowingLimit: {gpus: 64} # how far above nominal it may go (default: unlimited)
//       lendingLimit: {gpus: 32}   # how much of its unused nominal others may use (default: all)
//       halfLife: 3d               # overrides usageHalfLife for this subtree
//       formerNames: [llm]         # names it had before a rename: work naming one is this queue's
// Validation reports EVERY problem, each as "file:line: field: reason": unknown parent, cycles,
// children's nominal above the parent's, negative values, unknown resource names, duplicate names,
// bad weights.
#pragma once

#include <string>
#include <vector>

#include "core/io/document.h"
#include "core/state/queues.h"

namespace tidal {

// Decodes the queue part of `root` (keys resources, usageHalfLife, queues), appending located
// errors to `errors`. `used` receives the keys it consumed.
QueueConfig DecodeQueueConfig(const Document& doc, const nlohmann::json& root, std::vector<std::string>* errors);

}  // namespace tidal
