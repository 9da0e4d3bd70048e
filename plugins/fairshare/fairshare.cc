// fairshare: QueueSort by hierarchical fair share (see fairshare.h for the order and threading).
#include "plugins/fairshare/fairshare.h"

#include "plugins/args.h"

namespace tidal::plugins {

void FairShare::PrepareSort() {
  rank_.clear();
  if (ledger_ == nullptr) return;
  rank_ = ledger_->FairShareRanks();
}

int32_t FairShare::RankOf(const Workload& w) const {
  const int q = w.queue_id > 0 ? w.queue_id : ledger_->tree().Find(w.queue);
  // Unknown queues (and a queue id from before a reload) rank with the inner queues, after every leaf.
  if (q <= 0 || static_cast<size_t>(q) >= rank_.size()) return rank_[0];
  return rank_[static_cast<size_t>(q)];
}

bool FairShare::Less(const Workload& a, const Workload& b) const {
  if (!rank_.empty()) {
    const int32_t ra = RankOf(a), rb = RankOf(b);
    if (ra != rb) return ra < rb;
  }
  if (a.priority != b.priority) return a.priority > b.priority;
  return a.submit_time_s < b.submit_time_s;
}

bool FairShare::SortKey(const Workload& w, std::array<int64_t, 3>* key) const {
  const int64_t rank = rank_.empty() ? 0 : RankOf(w);
  *key = {rank, -static_cast<int64_t>(w.priority), w.submit_time_s};
  return true;
}

bool FairShare::QueueRank(int32_t queue_id, int64_t* rank) const {
  // As RankOf for a workload whose queue_id is set (or <= 0 when its queue is unknown).
  if (rank_.empty()) {
    *rank = 0;
  } else {
    *rank = queue_id <= 0 || static_cast<size_t>(queue_id) >= rank_.size() ? rank_[0] : rank_[static_cast<size_t>(queue_id)];
  }
  return true;
}

StatusOr<std::unique_ptr<Plugin>> FairShare::New(const nlohmann::json& args, const PluginContext& ctx) {
  if (Status s = plugin_args::OnlyKeys(args, {}); !s.ok()) return s;
  return std::unique_ptr<Plugin>(std::make_unique<FairShare>(ctx.ledger));
}

}  // namespace tidal::plugins
