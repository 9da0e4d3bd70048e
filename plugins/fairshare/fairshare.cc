#include "plugins/fairshare/fairshare.h"

#include "plugins/args.h"

namespace tidal::plugins {

void FairShare::PrepareSort() {
  if (ledger_ != nullptr) ledger_->RefreshShares();
}

int FairShare::QueueOf(const Workload& w) const {
  if (w.queue_id > 0) return w.queue_id;
  return ledger_->tree().Find(w.queue);
}

bool FairShare::Less(const Workload& a, const Workload& b) const {
  if (ledger_ != nullptr) {
    const int c = ledger_->CompareQueues(QueueOf(a), QueueOf(b));
    if (c != 0) return c < 0;
  }
  if (a.priority != b.priority) return a.priority > b.priority;
  return a.submit_time_s < b.submit_time_s;
}

StatusOr<std::unique_ptr<Plugin>> FairShare::New(const nlohmann::json& args, const PluginContext& ctx) {
  if (Status s = plugin_args::OnlyKeys(args, {}); !s.ok()) return s;
  return std::unique_ptr<Plugin>(std::make_unique<FairShare>(ctx.ledger));
}

}  // namespace tidal::plugins
