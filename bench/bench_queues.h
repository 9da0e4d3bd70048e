// The queue tree every engine and cycle benchmark uses: 3 orgs (research, product, infra) with
// 50% / 35% / 15% of the fleet's GPUs as nominal quota, each with 4 teams of weights 1-4 sharing
// its quota equally. Header-only; no state.
#pragma once

#include <cstdint>
#include <string>

#include "core/state/queues.h"

namespace tidal::bench {

inline QueueConfig BenchQueues(int64_t gpus) {
  QueueConfig qc;
  int org_i = 0;
  for (const char* org : {"research", "product", "infra"}) {
    QueueSpec o;
    o.name = org;
    // 40,000 / 28,000 / 12,000 at 10k nodes.
    o.nominal = {org_i == 0 ? gpus / 2 : org_i == 1 ? gpus * 35 / 100 : gpus * 15 / 100, kUnlimited, kUnlimited};
    qc.queues.push_back(o);
    for (int t = 0; t < 4; ++t) {
      QueueSpec q;
      q.name = std::string(org) + "-team-" + std::to_string(t);
      q.parent = org;
      q.weight = 1 + t;
      q.nominal = {o.nominal[0] / 4, kUnlimited, kUnlimited};
      qc.queues.push_back(q);
    }
    ++org_i;
  }
  return qc;
}

}  // namespace tidal::bench
