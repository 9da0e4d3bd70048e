#include "plugins/fairshare/fairshare.h"

#include <algorithm>

#include "plugins/args.h"

namespace tidal::plugins {

void FairShare::PrepareSort() {
  rank_.clear();
  if (ledger_ == nullptr) return;
  ledger_->RefreshShares();
  const QueueTree& t = ledger_->tree();
  std::vector<int> qs;
  for (int q = 1; q < t.size(); ++q) qs.push_back(q);
  std::stable_sort(qs.begin(), qs.end(), [&](int a, int b) { return ledger_->CompareQueues(a, b) < 0; });
  rank_.assign(static_cast<size_t>(t.size()), 0);
  int32_t r = 0;
  for (size_t i = 0; i < qs.size(); ++i) {
    if (i > 0 && ledger_->CompareQueues(qs[i - 1], qs[i]) != 0) ++r;
    rank_[static_cast<size_t>(qs[i])] = r;
  }
}

int FairShare::QueueOf(const Workload& w) const {
  if (w.queue_id > 0) return w.queue_id;
  return ledger_->tree().Find(w.queue);
}

bool FairShare::Less(const Workload& a, const Workload& b) const {
  if (ledger_ != nullptr) {
    const int qa = QueueOf(a), qb = QueueOf(b);
    if (qa != qb) {
      int c = 0;
      if (!rank_.empty() && qa > 0 && qb > 0) {
        c = rank_[static_cast<size_t>(qa)] - rank_[static_cast<size_t>(qb)];
      } else {
        c = ledger_->CompareQueues(qa, qb);
      }
      if (c != 0) return c < 0;
    }
  }
  if (a.priority != b.priority) return a.priority > b.priority;
  return a.submit_time_s < b.submit_time_s;
}

bool FairShare::SortKey(const Workload& w, std::array<int64_t, 3>* key) const {
  int64_t rank = 0;
  if (ledger_ != nullptr) {
    const int q = QueueOf(w);
    if (rank_.empty() || q <= 0) return false;  // unknown queue: only Less can order it
    rank = rank_[static_cast<size_t>(q)];
  }
  *key = {rank, -static_cast<int64_t>(w.priority), w.submit_time_s};
  return true;
}

StatusOr<std::unique_ptr<Plugin>> FairShare::New(const nlohmann::json& args, const PluginContext& ctx) {
  if (Status s = plugin_args::OnlyKeys(args, {}); !s.ok()) return s;
  return std::unique_ptr<Plugin>(std::make_unique<FairShare>(ctx.ledger));
}

}  // namespace tidal::plugins
