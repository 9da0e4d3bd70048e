#include "plugins/quota/quota.h"

#include "plugins/args.h"

namespace tidal::plugins {
namespace {

struct QuotaCycleData final : CycleStateData {
  int leaf = -1;
};

}  // namespace

Status Quota::Admit(CycleState& state, const Workload& w) {
  if (!Active()) return Status::Ok();
  const QueueTree& t = ledger_->tree();
  const int q = w.queue_id > 0 ? w.queue_id : t.Find(w.queue);
  if (q < 0 || !t.IsLeaf(q)) {
    std::string leaves;
    for (const auto& n : t.LeafNames()) leaves += (leaves.empty() ? "" : ", ") + n;
    return Status::Unresolvable("queue \"" + w.queue + "\" " + (q < 0 ? "is not configured" : "is not a leaf queue") +
                                " (leaf queues: " + leaves + ")");
  }
  const ResVec need = t.Request(w.per_member * w.min_members, w.gpu_model);
  if (refused_version_ != ledger_->version()) {
    refused_.clear();
    refused_version_ = ledger_->version();
  }
  auto key = std::make_pair(q, need);
  if (auto it = refused_.find(key); it != refused_.end()) return it->second;
  AdmissionResult r = ledger_->CheckAdmission(q, need);
  if (!r.status.ok()) return refused_.emplace(std::move(key), r.status).first->second;
  auto data = std::make_unique<QuotaCycleData>();
  data->leaf = q;
  state.Write(kName, std::move(data));
  return Status::Ok();
}

Status Quota::PreFilter(CycleState& state, const Workload& w, const TopologyLevels&, PlacementConstraints& c) {
  if (!Active()) return Status::Ok();
  const auto* d = state.Read<QuotaCycleData>(kName);
  if (d == nullptr) return Status::Error("quota: Admit did not run for workload " + w.id);
  const ResVec one = ledger_->tree().Request(w.per_member, w.gpu_model);
  c.members = std::max(w.min_members, ledger_->MaxAdmissibleMembers(d->leaf, one, c.members));
  return Status::Ok();
}

Status Quota::Reserve(CycleState& state, const Workload& w, const Candidate& c) {
  if (!Active()) return Status::Ok();
  const auto* d = state.Read<QuotaCycleData>(kName);
  if (d == nullptr) return Status::Error("quota: Admit did not run for workload " + w.id);
  const ResVec r = ledger_->tree().Request(w.per_member * c.PlacedMembers(), w.gpu_model);
  const AdmissionResult a = ledger_->CheckAdmission(d->leaf, r);
  if (!a.status.ok()) return a.status;
  return ledger_->Charge(w.id, d->leaf, r, a.borrowing);
}

void Quota::Unreserve(CycleState&, const Workload& w, const Candidate&) {
  if (Active()) ledger_->Uncharge(w.id);
}

StatusOr<std::unique_ptr<Plugin>> Quota::New(const nlohmann::json& args, const PluginContext& ctx) {
  if (Status s = plugin_args::OnlyKeys(args, {}); !s.ok()) return s;
  return std::unique_ptr<Plugin>(std::make_unique<Quota>(ctx.ledger));
}

}  // namespace tidal::plugins
