// The queue tree and the quota / fair-share ledger (see queues.h for the rules and threading).
#include "core/state/queues.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <set>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tidal {
namespace {

std::string Amount(const QueueConfig& cfg, int r, int64_t v) {
  if (v >= kUnlimited) return "unlimited";
  if (cfg.resources[static_cast<size_t>(r)] == "cpu") return FormatMilli(v);
  if (cfg.resources[static_cast<size_t>(r)] == "memory") return FormatBytes(v);
  return std::to_string(v);
}

}  // namespace

std::map<std::string, std::string> QueueConfig::FormerNames() const {
  std::map<std::string, std::string> out;
  for (const QueueSpec& q : queues) {
    for (const std::string& f : q.former_names) out.emplace(f, q.name);
  }
  return out;
}

int QueueConfig::ResourceIndex(const std::string& name) const {
  for (size_t i = 0; i < resources.size(); ++i) {
    if (resources[i] == name) return static_cast<int>(i);
  }
  return -1;
}

StatusOr<std::shared_ptr<const QueueTree>> QueueTree::Build(const QueueConfig& cfg) {
  auto t = std::make_shared<QueueTree>();
  t->cfg_ = cfg;
  const size_t nr = cfg.resources.size();
  constexpr std::string_view kModelPrefix = "gpus.";
  for (size_t i = 0; i < nr; ++i) {
    const std::string& name = cfg.resources[i];
    if (name.size() > kModelPrefix.size() && name.compare(0, kModelPrefix.size(), kModelPrefix) == 0) {
      t->model_resources_.emplace_back(name.substr(kModelPrefix.size()), static_cast<int>(i));
    }
  }
  Node root;
  root.spec.name = "";
  root.spec.nominal.assign(nr, kUnlimited);
  root.spec.borrowing_limit.assign(nr, kUnlimited);
  root.spec.lending_limit.assign(nr, kUnlimited);
  t->nodes_.push_back(root);
  for (const auto& q : cfg.queues) {
    if (t->index_.count(q.name)) return Status::Error("queues: duplicate queue " + q.name);
    t->index_[q.name] = static_cast<int>(t->nodes_.size());
    Node n;
    n.spec = q;
    n.spec.nominal.resize(nr, kUnlimited);
    n.spec.borrowing_limit.resize(nr, kUnlimited);
    n.spec.lending_limit.resize(nr, kUnlimited);
    t->nodes_.push_back(std::move(n));
  }
  for (size_t i = 1; i < t->nodes_.size(); ++i) {
    const std::string& parent = t->nodes_[i].spec.parent;
    int p = 0;
    if (!parent.empty()) {
      auto it = t->index_.find(parent);
      if (it == t->index_.end()) return Status::Error("queue " + t->nodes_[i].spec.name + ": unknown parent " + parent);
      p = it->second;
    }
    t->nodes_[i].parent = p;
    t->nodes_[static_cast<size_t>(p)].children.push_back(static_cast<int>(i));
  }
  for (size_t i = 1; i < t->nodes_.size(); ++i) {
    for (const std::string& f : t->nodes_[i].spec.former_names) {
      if (t->index_.count(f) || !t->former_.emplace(f, static_cast<int>(i)).second) {
        return Status::Error("queue " + t->nodes_[i].spec.name + ": former name " + f + " is another queue's name or former name");
      }
    }
  }
  // Every queue must reach the root.
  for (size_t i = 1; i < t->nodes_.size(); ++i) {
    std::set<int> seen;
    for (int q = static_cast<int>(i); q != 0; q = t->nodes_[static_cast<size_t>(q)].parent) {
      if (!seen.insert(q).second) return Status::Error("queue " + t->nodes_[i].spec.name + ": parent chain has a cycle");
    }
  }
  return std::shared_ptr<const QueueTree>(std::move(t));
}

int QueueTree::Find(const std::string& name) const {
  if (auto it = index_.find(name); it != index_.end()) return it->second;
  auto it = former_.find(name);
  return it == former_.end() ? -1 : it->second;
}

int64_t QueueTree::HalfLife(int q) const {
  for (int a = q; a > 0; a = Parent(a)) {
    if (Spec(a).half_life_s > 0) return Spec(a).half_life_s;
  }
  return cfg_.default_half_life_s;
}

std::vector<std::string> QueueTree::LeafNames() const {
  std::vector<std::string> out;
  for (int q = 1; q < size(); ++q) {
    if (IsLeaf(q)) out.push_back(Name(q));
  }
  return out;
}

ResVec QueueTree::Request(const Resources& total, const std::string& gpu_model) const {
  ResVec r(cfg_.resources.size(), 0);
  if (!r.empty()) r[0] = total.gpus;
  if (r.size() > 1) r[1] = total.cpu_milli;
  if (r.size() > 2) r[2] = total.memory_bytes;
  if (const int i = ModelResource(gpu_model); i >= 0) r[static_cast<size_t>(i)] = total.gpus;
  return r;
}

int QueueTree::ModelResource(const std::string& gpu_model) const {
  if (gpu_model.empty()) return -1;
  for (const auto& [model, i] : model_resources_) {
    if (model == gpu_model) return i;
  }
  return -1;
}

QuotaLedger::QuotaLedger(std::shared_ptr<const QueueTree> tree) : tree_(std::move(tree)) {
  const size_t n = static_cast<size_t>(tree_->size()), r = static_cast<size_t>(tree_->resources());
  alloc_.assign(n, ResVec(r, 0));
  borrowed_.assign(n, ResVec(r, 0));
  usage_.assign(n, std::vector<double>(r, 0.0));
  capacity_.assign(r, 0);
}

void QuotaLedger::Reconfigure(std::shared_ptr<const QueueTree> tree) {
  QuotaLedger next(tree);
  next.capacity_ = capacity_;
  next.capacity_.resize(static_cast<size_t>(tree->resources()), 0);
  next.now_ = now_;
  next.started_ = started_;
  auto remap = [&](const ResVec& v) {
    ResVec out(static_cast<size_t>(tree->resources()), 0);
    for (int r = 0; r < tree_->resources(); ++r) {
      const int nr = tree->config().ResourceIndex(tree_->config().resources[static_cast<size_t>(r)]);
      if (nr >= 0) out[static_cast<size_t>(nr)] = v[static_cast<size_t>(r)];
    }
    return out;
  };
  // Usage by queue name; charges of workloads whose queue still exists as a leaf. Charges of a
  // removed queue are dropped from the ledger (their workloads keep running).
  for (int q = 1; q < tree_->size(); ++q) {
    const int nq = tree->Find(tree_->Name(q));
    if (nq < 0) continue;
    for (int r = 0; r < tree_->resources(); ++r) {
      const int nr = tree->config().ResourceIndex(tree_->config().resources[static_cast<size_t>(r)]);
      if (nr >= 0) next.usage_[static_cast<size_t>(nq)][static_cast<size_t>(nr)] = usage_[static_cast<size_t>(q)][static_cast<size_t>(r)];
    }
  }
  for (const auto& [id, c] : charges_) {
    const int nq = tree->Find(tree_->Name(c.leaf));
    if (nq > 0 && tree->IsLeaf(nq)) (void)next.Charge(id, nq, remap(c.amount), c.borrowed);
  }
  *this = std::move(next);
}

AdmissionResult QuotaLedger::CheckAdmission(int leaf, const ResVec& req) const {
  AdmissionResult res;
  const QueueTree& t = *tree_;
  const QueueConfig& cfg = t.config();
  // The leaf's path to the root (a few queues): judged for every workload, so no allocation.
  absl::InlinedVector<int, 8> path;
  for (int a = leaf; a > 0; a = t.Parent(a)) path.push_back(a);
  auto U = [&](int q, int r) {
    const bool on_path = std::find(path.begin(), path.end(), q) != path.end();
    return alloc_[static_cast<size_t>(q)][static_cast<size_t>(r)] + (on_path ? req[static_cast<size_t>(r)] : 0);
  };
  for (int r = 0; r < t.resources(); ++r) {
    if (req[static_cast<size_t>(r)] <= 0) continue;
    const std::string& rn = cfg.resources[static_cast<size_t>(r)];
    // Rule 2's premise at the leaf itself: a leaf within its nominal is always entitled to it,
    // whatever its ancestors use. Its ancestors' nominals hold their children's (QueueTree::Build
    // checks that), so an ancestor over its nominal or borrowing limit got there through other
    // queues' borrowing, which preemption reclaims; judging the leaf by it refused the entitlement.
    if (const int64_t ln = t.Spec(leaf).nominal[static_cast<size_t>(r)]; ln < kUnlimited && U(leaf, r) <= ln) continue;
    for (int a = leaf; a > 0; a = t.Parent(a)) {
      const QueueSpec& s = t.Spec(a);
      const int64_t n = s.nominal[static_cast<size_t>(r)];
      if (n >= kUnlimited) continue;
      const int64_t u = U(a, r);
      const int64_t b = s.borrowing_limit[static_cast<size_t>(r)];
      if (b < kUnlimited && u > n + b) {
        res.status = Status::Unschedulable("queue " + s.name + " would use " + Amount(cfg, r, u) + " " + rn +
                                               ", over nominal " + Amount(cfg, r, n) + " + borrowing limit " +
                                               Amount(cfg, r, b) + "; " + Describe(leaf),
                                           "quota");
        return res;
      }
      if (u > n && a == leaf) res.borrowing = true;
      // Rule 2 at a's parent, only when a would borrow: a queue within its nominal quota is always
      // entitled to it; if others borrowed it meanwhile, preemption reclaims it.
      if (u <= n) continue;
      const int p = t.Parent(a);
      int64_t borrow = 0, lend = 0, child_nominal = 0;
      for (int c : t.Children(p)) {
        const int64_t cn = t.Spec(c).nominal[static_cast<size_t>(r)];
        if (cn >= kUnlimited) continue;
        const int64_t cu = U(c, r);
        child_nominal += cn;
        borrow += std::max<int64_t>(0, cu - cn);
        lend += std::min<int64_t>(t.Spec(c).lending_limit[static_cast<size_t>(r)], std::max<int64_t>(0, cn - cu));
      }
      int64_t spare = 0, p_borrow = 0;
      if (p == 0) {
        spare = std::max<int64_t>(0, capacity_[static_cast<size_t>(r)] - child_nominal);
      } else {
        const int64_t pn = t.Spec(p).nominal[static_cast<size_t>(r)];
        spare = pn >= kUnlimited ? kUnlimited : std::max<int64_t>(0, pn - child_nominal);
        p_borrow = pn >= kUnlimited ? 0 : std::max<int64_t>(0, U(p, r) - pn);
      }
      if (spare < kUnlimited && borrow > lend + spare + p_borrow) {
        res.status = Status::Unschedulable("queue " + s.name + " would borrow beyond what its cohort " +
                                               (p == 0 ? std::string("cluster") : t.Name(p)) + " can lend; " +
                                               Describe(leaf),
                                           "quota");
        return res;
      }
    }
  }
  return res;
}

int32_t QuotaLedger::MaxAdmissibleMembers(int leaf, const ResVec& per_member, int32_t max_count) const {
  auto ok = [&](int32_t n) {
    ResVec r(per_member.size());
    for (size_t i = 0; i < r.size(); ++i) r[i] = per_member[i] * n;
    return CheckAdmission(leaf, r).status.ok();
  };
  if (ok(max_count)) return max_count;
  int32_t lo = 0, hi = max_count;  // lo admissible, hi not
  while (hi - lo > 1) {
    const int32_t mid = lo + (hi - lo) / 2;
    (ok(mid) ? lo : hi) = mid;
  }
  return lo;
}

uint64_t QuotaLedger::NextVersion() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void QuotaLedger::Apply(int leaf, const ResVec& r, int sign, bool borrowed) {
  version_ = NextVersion();
  for (int a = leaf; a >= 0; a = a == 0 ? -1 : tree_->Parent(a)) {
    for (size_t i = 0; i < r.size(); ++i) alloc_[static_cast<size_t>(a)][i] += sign * r[i];
  }
  if (borrowed) {
    for (size_t i = 0; i < r.size(); ++i) {
      auto& b = borrowed_[static_cast<size_t>(leaf)][i];
      b = std::max<int64_t>(0, b + sign * r[i]);
    }
  }
}

Status QuotaLedger::Charge(const std::string& id, int leaf, const ResVec& r, bool borrowed) {
  if (leaf <= 0 || leaf >= tree_->size()) return Status::Error("ledger: charge " + id + ": unknown queue index");
  if (r.size() != static_cast<size_t>(tree_->resources())) return Status::Error("ledger: charge " + id + ": wrong resource count");
  auto [it, inserted] = charges_.try_emplace(id, ChargeInfo{leaf, ResVec(r.size(), 0), borrowed});
  if (!inserted && it->second.leaf != leaf) return Status::Error("ledger: " + id + " is already charged to another queue");
  for (size_t i = 0; i < r.size(); ++i) it->second.amount[i] += r[i];
  it->second.borrowed = it->second.borrowed || borrowed;
  Apply(leaf, r, +1, borrowed);
  return Status::Ok();
}

void QuotaLedger::Uncharge(const std::string& id) {
  auto it = charges_.find(id);
  if (it == charges_.end()) return;
  Apply(it->second.leaf, it->second.amount, -1, it->second.borrowed);
  charges_.erase(it);
}

void QuotaLedger::Reduce(const std::string& id, const ResVec& r) {
  auto it = charges_.find(id);
  if (it == charges_.end()) return;
  ResVec take(r.size(), 0);
  bool empty = true;
  for (size_t i = 0; i < r.size() && i < it->second.amount.size(); ++i) {
    take[i] = std::min(r[i], it->second.amount[i]);
    it->second.amount[i] -= take[i];
    empty = empty && it->second.amount[i] == 0;
  }
  Apply(it->second.leaf, take, -1, it->second.borrowed);
  if (empty) charges_.erase(it);
}

void QuotaLedger::Advance(int64_t now_s) {
  if (!started_) {
    started_ = true;
    now_ = now_s;
    return;
  }
  const int64_t dt = now_s - now_;
  if (dt < 0) now_ = now_s;  // the clock stepped back: start again from it, never freeze until it catches up
  if (dt <= 0) return;
  now_ = now_s;
  for (int q = 0; q < tree_->size(); ++q) {
    const double k = std::log(2.0) / static_cast<double>(tree_->HalfLife(q));
    const double f = std::exp(-k * static_cast<double>(dt));
    auto& u = usage_[static_cast<size_t>(q)];
    for (size_t r = 0; r < u.size(); ++r) {
      u[r] = u[r] * f + static_cast<double>(alloc_[static_cast<size_t>(q)][r]) * (1.0 - f) / k;
    }
  }
}

void QuotaLedger::AddPastUsage(int leaf, const ResVec& r, int64_t start_s, int64_t end_s) {
  end_s = std::min(end_s, now_);
  if (leaf <= 0 || leaf >= tree_->size() || end_s <= start_s) return;
  for (int q = leaf; q > 0; q = tree_->Parent(q)) {
    const double k = std::log(2.0) / static_cast<double>(tree_->HalfLife(q));
    // The integral of r * exp(-k (now - t)) over [start, end].
    const double f = (std::exp(-k * static_cast<double>(now_ - end_s)) - std::exp(-k * static_cast<double>(now_ - start_s))) / k;
    auto& u = usage_[static_cast<size_t>(q)];
    for (size_t i = 0; i < u.size() && i < r.size(); ++i) u[i] += static_cast<double>(r[i]) * f;
  }
  version_ = NextVersion();
}

double QuotaLedger::Share(int q) const {
  const double k = std::log(2.0) / static_cast<double>(tree_->HalfLife(q));
  const double w = std::max(1e-9, tree_->Spec(q).weight);
  double best = 0;
  for (size_t r = 0; r < capacity_.size(); ++r) {
    if (capacity_[r] <= 0) continue;
    const double eff = 0.5 * static_cast<double>(alloc_[static_cast<size_t>(q)][r]) + 0.5 * k * usage_[static_cast<size_t>(q)][r];
    best = std::max(best, eff / static_cast<double>(capacity_[r]));
  }
  return best / w;
}

ResVec QuotaLedger::OverNominal(int q) const {
  ResVec over(static_cast<size_t>(tree_->resources()), 0);
  if (q <= 0 || q >= tree_->size()) return over;
  const ResVec& nominal = tree_->Spec(q).nominal;
  const ResVec& alloc = alloc_[static_cast<size_t>(q)];
  for (size_t r = 0; r < over.size(); ++r) {
    if (nominal[r] < kUnlimited) over[r] = std::max<int64_t>(0, alloc[r] - nominal[r]);
  }
  return over;
}

std::vector<int32_t> QuotaLedger::FairShareRanks() const {
  const QueueTree& t = *tree_;
  std::vector<double> share(static_cast<size_t>(t.size()), 0.0);
  for (int q = 1; q < t.size(); ++q) share[static_cast<size_t>(q)] = Share(q);
  auto share_of = [&](int q) { return share[static_cast<size_t>(q)]; };
  // Depth-first from the root, children by (share, name): every leaf's path (root's child first).
  std::vector<std::vector<int>> leaves;
  std::vector<int> path;
  auto walk = [&](auto& self, int q) -> void {
    std::vector<int> kids = t.Children(q);
    std::sort(kids.begin(), kids.end(), [&](int a, int b) {
      if (share_of(a) != share_of(b)) return share_of(a) < share_of(b);
      return t.Name(a) < t.Name(b);
    });
    for (int c : kids) {
      path.push_back(c);
      if (t.IsLeaf(c)) {
        leaves.push_back(path);
      } else {
        self(self, c);
      }
      path.pop_back();
    }
  };
  walk(walk, 0);
  auto same = [](double a, double b) { return std::abs(a - b) <= 1e-12; };
  // Consecutive leaves tie when their paths have the same length and equal shares at every level
  // from their lowest common ancestor down.
  auto ties = [&](const std::vector<int>& a, const std::vector<int>& b) {
    if (a.size() != b.size()) return false;
    size_t i = 0;
    while (i < a.size() && a[i] == b[i]) ++i;
    for (; i < a.size(); ++i) {
      if (!same(share_of(a[i]), share_of(b[i]))) return false;
    }
    return true;
  };
  std::vector<int32_t> rank(static_cast<size_t>(t.size()), 0);
  int32_t r = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (i > 0 && !ties(leaves[i - 1], leaves[i])) ++r;
    rank[static_cast<size_t>(leaves[i].back())] = r;
  }
  const int32_t after = leaves.empty() ? 0 : r + 1;
  for (int q = 0; q < t.size(); ++q) {
    if (q == 0 || !t.IsLeaf(q)) rank[static_cast<size_t>(q)] = after;
  }
  return rank;
}

int64_t QuotaLedger::Lendable(int q, int r) const {
  const QueueTree& t = *tree_;
  const int p = t.Parent(q);
  int64_t lend = 0, child_nominal = 0, borrow = 0;
  for (int c : t.Children(p)) {
    const int64_t cn = t.Spec(c).nominal[static_cast<size_t>(r)];
    if (cn >= kUnlimited) continue;
    const int64_t cu = alloc_[static_cast<size_t>(c)][static_cast<size_t>(r)];
    child_nominal += cn;
    if (c != q) lend += std::min<int64_t>(t.Spec(c).lending_limit[static_cast<size_t>(r)], std::max<int64_t>(0, cn - cu));
    if (c != q) borrow += std::max<int64_t>(0, cu - cn);
  }
  int64_t spare = 0;
  if (p == 0) {
    spare = std::max<int64_t>(0, capacity_[static_cast<size_t>(r)] - child_nominal);
  } else {
    const int64_t pn = t.Spec(p).nominal[static_cast<size_t>(r)];
    spare = pn >= kUnlimited ? 0 : std::max<int64_t>(0, pn - child_nominal);
  }
  return std::max<int64_t>(0, lend + spare - borrow);
}

std::string QuotaLedger::Describe(int q) const {
  const QueueTree& t = *tree_;
  const QueueConfig& cfg = t.config();
  std::string out;
  for (int r = 0; r < t.resources(); ++r) {
    const int64_t n = t.Spec(q).nominal[static_cast<size_t>(r)];
    if (n >= kUnlimited) continue;
    const std::string& rn = cfg.resources[static_cast<size_t>(r)];
    if (!out.empty()) out += "; ";
    out += "queue " + t.Name(q) + " uses " + Amount(cfg, r, alloc_[static_cast<size_t>(q)][static_cast<size_t>(r)]) +
           "/" + Amount(cfg, r, n) + " " + rn;
    // Over nominal now (what the borrowing limit caps), and, apart, the work admitted while over it:
    // all of such a workload is "on borrowed quota" (reclaim may take it), not only the part above.
    const int64_t b = t.Spec(q).borrowing_limit[static_cast<size_t>(r)];
    const int64_t over = std::max<int64_t>(0, alloc_[static_cast<size_t>(q)][static_cast<size_t>(r)] - n);
    const int64_t on_borrowed = borrowed_[static_cast<size_t>(q)][static_cast<size_t>(r)];
    out += " (" + (over > 0 ? Amount(cfg, r, over) + " over nominal, " : std::string()) + "borrowing limit " + Amount(cfg, r, b);
    if (on_borrowed > 0) out += "; " + Amount(cfg, r, on_borrowed) + " " + rn + " in work admitted on borrowed quota, which reclaim may take";
    out += ")";
    const int p = t.Parent(q);
    out += "; cohort " + (p == 0 ? std::string("cluster") : t.Name(p)) + " has " + Amount(cfg, r, Lendable(q, r)) +
           " " + rn + " lendable";
  }
  return out.empty() ? "queue " + t.Name(q) + " has no quota limits" : out;
}

std::string QuotaLedger::SaveState() const {
  nlohmann::json j;
  j["time"] = now_;
  nlohmann::json u = nlohmann::json::object();
  for (int q = 1; q < tree_->size(); ++q) {
    nlohmann::json per = nlohmann::json::object();
    for (int r = 0; r < tree_->resources(); ++r) {
      per[tree_->config().resources[static_cast<size_t>(r)]] = usage_[static_cast<size_t>(q)][static_cast<size_t>(r)];
    }
    u[tree_->Name(q)] = per;
  }
  j["usage"] = u;
  return j.dump();
}

Status QuotaLedger::LoadState(const std::string& text, std::vector<std::string>* skipped) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return Status::Error(std::string("ledger state: not JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("time") || !j["time"].is_number_integer() || !j.contains("usage") ||
      !j["usage"].is_object()) {
    return Status::Error("ledger state: expected {\"time\": int, \"usage\": {queue: {resource: number}}}");
  }
  auto skip = [skipped](std::string why) {
    if (skipped != nullptr) skipped->push_back(std::move(why));
  };
  // Largest usage kept: far above any cluster's GPU-seconds over a half-life, below where shares overflow.
  constexpr double kMaxUsage = 1e18;
  for (const auto& [name, per] : j["usage"].items()) {
    const std::string at = "usage." + name.substr(0, 100);
    const int q = tree_->Find(name);
    if (q < 0) {  // a queue removed from config: its history is dropped
      skip(at + ": queue not configured; its usage history dropped");
      continue;
    }
    if (!per.is_object()) {
      skip(at + ": expected {resource: number}; skipped");
      continue;
    }
    for (const auto& [res, v] : per.items()) {
      const int r = tree_->config().ResourceIndex(res);
      if (r < 0) continue;  // a resource no longer tracked
      const std::string field = at + "." + res.substr(0, 100);
      if (!v.is_number()) {
        skip(field + ": expected a number; skipped");
        continue;
      }
      const double x = v.get<double>();
      if (!std::isfinite(x) || x < 0 || x > kMaxUsage) {
        std::ostringstream shown;
        shown << x;
        skip(field + ": " + shown.str() + " is not a usage (>= 0 and finite, at most 1e18); skipped");
        continue;
      }
      usage_[static_cast<size_t>(q)][static_cast<size_t>(r)] = x;
    }
  }
  // Inner queues' usage is the sum of what was saved for them; nothing else to rebuild.
  now_ = j["time"].get<int64_t>();
  started_ = true;
  return Status::Ok();
}

}  // namespace tidal
