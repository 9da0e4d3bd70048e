#include "plugins/quota/quota.h"

#include <algorithm>

#include "core/state/cluster_state.h"
#include "core/state/headroom.h"
#include "plugins/args.h"

namespace tidal::plugins {
namespace {

struct QuotaCycleData final : CycleStateData {
  int leaf = -1;
};

// The request of the placed members, each member charged with the GPU model of its node (as the
// engine charges a bound pod), so a plan's gpus.<model> charge is exact before its pods bind.
ResVec PlacedRequest(const QueueTree& t, const ClusterState& cluster, const Workload& w, const Candidate& c) {
  ResVec total(static_cast<size_t>(t.resources()), 0);
  for (const auto& a : c.assignments) {
    const bool known = a.node >= 0 && a.node < cluster.node_count();
    const ResVec r = t.Request(w.per_member * a.members, known ? cluster.node(a.node).gpu_model : w.gpu_model);
    for (size_t i = 0; i < total.size(); ++i) total[i] += r[i];
  }
  return total;
}

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
  SyncMemo();
  const MemoKey key{q, -1, t.ModelResource(w.gpu_model), w.per_member * w.min_members};
  auto it = admitted_.find(key);
  if (it == admitted_.end()) {
    AdmissionResult r = ledger_->CheckAdmission(q, t.Request(key.request, w.gpu_model));
    it = admitted_.emplace(key, std::move(r.status)).first;
  }
  if (!it->second.ok()) return it->second;
  auto data = std::make_unique<QuotaCycleData>();
  data->leaf = q;
  state.Write(kName, std::move(data));
  return Status::Ok();
}

Status Quota::PreFilter(CycleState& state, const Workload& w, const TopologyLevels&, PlacementConstraints& c) {
  if (!Active()) return Status::Ok();
  const auto* d = state.Read<QuotaCycleData>(kName);
  if (d == nullptr) return Status::Error("quota: Admit did not run for workload " + w.id);
  const QueueTree& t = ledger_->tree();
  SyncMemo();
  const MemoKey key{d->leaf, c.members, t.ModelResource(w.gpu_model), w.per_member};
  auto it = admissible_.find(key);
  if (it == admissible_.end()) {
    const int32_t n = ledger_->MaxAdmissibleMembers(d->leaf, t.Request(key.request, w.gpu_model), c.members);
    it = admissible_.emplace(key, n).first;
  }
  c.members = std::max(w.min_members, it->second);
  // Any GPU model: each member is charged with its node's model (Reserve), so a gpus.<model>
  // quota caps the members the search may put on that model's nodes. Resources are admitted one by
  // one, so checking gpus.<model> alone is exact (the rest is what capped c.members above).
  c.model_caps.clear();
  if (!w.gpu_model.empty() || w.per_member.gpus <= 0) return Status::Ok();
  const auto& names = t.config().resources;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].rfind("gpus.", 0) != 0) continue;
    ResVec on_model(names.size(), 0);
    on_model[i] = w.per_member.gpus;
    const int32_t cap = ledger_->MaxAdmissibleMembers(d->leaf, on_model, c.members);
    if (cap < c.members) c.model_caps.push_back({names[i].substr(5), cap});
  }
  std::sort(c.model_caps.begin(), c.model_caps.end(),
            [](const PlacementConstraints::ModelCap& a, const PlacementConstraints::ModelCap& b) { return a.model < b.model; });
  return Status::Ok();
}

void Quota::SyncMemo() {
  if (memo_version_ == ledger_->version()) return;
  admitted_.clear();
  admissible_.clear();
  memo_version_ = ledger_->version();
}

Status Quota::Reserve(CycleState& state, const ClusterState& cluster, const Workload& w, const Candidate& c) {
  if (!Active()) return Status::Ok();
  const auto* d = state.Read<QuotaCycleData>(kName);
  if (d == nullptr) return Status::Error("quota: Admit did not run for workload " + w.id);
  const ResVec r = PlacedRequest(ledger_->tree(), cluster, w, c);
  const AdmissionResult a = ledger_->CheckAdmission(d->leaf, r);
  if (!a.status.ok()) return a.status;
  if (Status h = CheckHeadroom(*ledger_, cluster, w, d->leaf); !h.ok()) return h;
  return ledger_->Charge(w.id, d->leaf, r, a.borrowing);
}

void Quota::Unreserve(CycleState&, const ClusterState&, const Workload& w, const Candidate&) {
  // Releases exactly what Reserve charged (per node model), by the workload's id.
  if (Active()) ledger_->Uncharge(w.id);
}

StatusOr<std::unique_ptr<Plugin>> Quota::New(const nlohmann::json& args, const PluginContext& ctx) {
  if (Status s = plugin_args::OnlyKeys(args, {}); !s.ok()) return s;
  return std::unique_ptr<Plugin>(std::make_unique<Quota>(ctx.ledger));
}

}  // namespace tidal::plugins
