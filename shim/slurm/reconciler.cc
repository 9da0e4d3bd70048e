// Reconciler (see reconciler.h). Threading: ReconcileOnce on the adapter's loop thread only.
#include "shim/slurm/reconciler.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "shim/slurm/to_engine.h"

namespace tidal::slurm {

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// AdminComment text: "tidal: <why>", one line, at most 250 characters.
std::string TidalText(const std::string& why) {
  std::string s = std::string(kTidalPrefix) + " " + why;
  for (char& c : s) c = (c == '\n' || c == '\r') ? ' ' : c;
  if (s.size() > 250) s = s.substr(0, 247) + "...";
  return s;
}

}  // namespace

struct Reconciler::Desired {
  std::map<std::string, std::string> pods;   // uid -> serialized member (ordered: stable chunks)
  std::map<std::string, std::string> nodes;  // name -> serialized node
  std::unordered_map<std::string, const JobRecord*> jobs;  // job id -> its record
  std::unordered_map<std::string, std::string> skipped;    // job id -> why it is not sent
  std::vector<std::pair<const JobRecord*, std::string>> rehold;  // job, why
  std::unordered_map<std::string, const NodeRecord*> node_recs;
};

void Reconciler::Convert(const ClusterRecords& rec, Desired& d, ReconcileStats& st) {
  for (const auto& n : rec.nodes) {
    d.node_recs[n.name] = &n;
    d.nodes[n.name] = NodeOf(n, cfg_).SerializeAsString();
  }
  for (const auto& j : rec.jobs) {
    JobStance stance = StanceOf(j);
    if (stance == JobStance::kFinished) continue;
    if (stance == JobStance::kReleased) {
      // A pin on a node that is gone, down or drained would strand the job (or kill it at the next
      // slurmctld restart): hold it again; the engine plans it anew.
      for (const auto& n : j.required_nodes) {
        auto it = d.node_recs.find(n);
        if (it == d.node_recs.end() || !Pinnable(*it->second)) {
          d.rehold.push_back({&j, "pinned node " + n + (it == d.node_recs.end() ? " is gone" : " is not usable") +
                                      "; held again to be placed anew"});
          stance = JobStance::kHeld;
          break;
        }
      }
    }
    if (stance == JobStance::kEscaped) d.rehold.push_back({&j, "released outside Tidal (requeued, or by hand); held again"});
    for (const auto& id : JobIdsOf(j)) {
      ++st.jobs;
      d.jobs[id] = &j;
      std::string skip = stance == JobStance::kActive ? std::string() : SkipReason(j);
      if (skip.empty() && stance != JobStance::kActive) skip = ConstraintError(j);
      if (!skip.empty()) {
        ++st.skipped;
        d.skipped[id] = skip;
        continue;
      }
      JobRecord view = j;  // a re-held job's members are pending, not on its old pin
      if (stance == JobStance::kHeld && StanceOf(j) == JobStance::kReleased) view.priority = 0;
      if (stance == JobStance::kEscaped) view.priority = 0;
      auto members = MembersOf(view, id, cfg_);
      if (stance == JobStance::kActive) {
        ++st.running;
        st.gpus_running += j.gpus_per_node * static_cast<int64_t>(members.size());
      } else {
        ++st.pending;
      }
      for (auto& m : members) d.pods[m.uid()] = m.SerializeAsString();
    }
  }
}

Status Reconciler::SendSync(const Desired& d, ReconcileStats& st) {
  std::vector<v1::SyncRequest> msgs(1);
  auto head = [&]() -> v1::SyncRequest& {
    if (msgs.back().upsert_pods_size() + msgs.back().delete_pods_size() >= kChunk) msgs.emplace_back();
    return msgs.back();
  };
  const bool resync = need_resync_ || !engine_->open();
  if (resync) {
    msgs[0].set_resync(true);
    for (const auto& [name, n] : d.nodes) (void)msgs[0].add_upsert_nodes()->ParseFromString(n);
    for (const auto& [uid, p] : d.pods) (void)head().add_upsert_pods()->ParseFromString(p);
    st.upserts = static_cast<int64_t>(d.nodes.size() + d.pods.size());
  } else {
    for (const auto& [name, n] : d.nodes) {
      auto it = sent_nodes_.find(name);
      if (it != sent_nodes_.end() && it->second == n) continue;
      (void)msgs[0].add_upsert_nodes()->ParseFromString(n);
      ++st.upserts;
    }
    for (const auto& [name, n] : sent_nodes_) {
      if (!d.nodes.count(name)) {
        msgs[0].add_delete_nodes(name);
        ++st.deletes;
      }
    }
    for (const auto& [uid, p] : d.pods) {
      auto it = sent_pods_.find(uid);
      if (it != sent_pods_.end() && it->second == p) continue;
      (void)head().add_upsert_pods()->ParseFromString(p);
      ++st.upserts;
    }
    for (const auto& [uid, p] : sent_pods_) {
      if (!d.pods.count(uid)) {
        head().add_delete_pods(uid);
        ++st.deletes;
      }
    }
  }
  if (jobcomp_ != nullptr) {
    if (Status s = jobcomp_->ReadNew(&finished_); !s.ok()) st.status.AddReason(s.ToString());
  }
  for (const auto& f : finished_) *msgs[0].add_finished() = f;
  msgs[0].set_door(v1::SLURM);
  msgs[0].set_holder(cfg_.holder);
  for (auto& m : msgs) m.set_door(v1::SLURM);
  for (const auto& m : msgs) {
    if (!resync && m.upsert_pods_size() == 0 && m.delete_pods_size() == 0 && m.upsert_nodes_size() == 0 &&
        m.delete_nodes_size() == 0 && m.finished_size() == 0) {
      continue;  // nothing changed
    }
    v1::SyncAck ack;
    if (Status s = engine_->Send(m, &ack); !s.ok()) {
      need_resync_ = true;
      return s;
    }
    if (ack.status().code() != v1::Status::SUCCESS && !ack.status().reasons().empty()) {
      st.status.AddReason("engine refused part of a Sync batch: " + ack.status().reasons(0));
    }
  }
  need_resync_ = false;
  finished_.clear();
  st.resynced = resync;
  sent_nodes_.clear();
  sent_nodes_.insert(d.nodes.begin(), d.nodes.end());
  sent_pods_.clear();
  sent_pods_.insert(d.pods.begin(), d.pods.end());
  return Status::Ok();
}

void Reconciler::Comment(const JobRecord& j, const std::string& id, const std::string& why, int* budget,
                         ReconcileStats& st) {
  const std::string text = TidalText(why);
  // Only Tidal's own words are replaced: an admin's AdminComment is never overwritten.
  if (j.admin_comment == text || (!j.admin_comment.empty() && j.admin_comment.rfind(kTidalPrefix, 0) != 0)) return;
  if (*budget <= 0) return;
  --*budget;
  if (Status s = slurm_->SetComment(id, text); !s.ok()) {
    ++st.apply_errors;
    st.status.AddReason(s.ToString());
    return;
  }
  ++st.comments;
}

void Reconciler::Apply(const ClusterRecords&, const Desired& d, const v1::AdmitResponse& admit, ReconcileStats& st) {
  std::set<const JobRecord*> reheld;
  for (const auto& [j, why] : d.rehold) {
    if (!reheld.insert(j).second) continue;
    if (Status s = slurm_->Hold(j->id, TidalText(why)); !s.ok()) {
      ++st.apply_errors;
      st.status.AddReason(s.ToString());
    } else {
      ++st.held;
    }
  }
  for (const auto& a : admit.admitted()) {
    const std::string id = a.gang().rfind("slurm/", 0) == 0 ? a.gang().substr(6) : std::string();
    auto it = d.jobs.find(id);
    if (id.empty() || it == d.jobs.end()) continue;  // gone since the read: the engine drops its plan
    const JobRecord& j = *it->second;
    const JobStance stance = StanceOf(j);
    if ((stance != JobStance::kHeld && stance != JobStance::kEscaped) || reheld.count(&j) || d.skipped.count(id)) continue;
    std::vector<std::string> nodes(a.nodes().begin(), a.nodes().end());
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    bool ok = !nodes.empty();
    for (const auto& n : nodes) {
      auto nr = d.node_recs.find(n);
      ok = ok && nr != d.node_recs.end() && Pinnable(*nr->second);
    }
    if (!ok) continue;  // never pin to a node Slurm does not offer now; the plan expires
    const std::string text = TidalText(std::string("released to ") + Join(nodes) +
                                       (a.domain().empty() ? "" : " (" + a.domain() + ")")).substr(0, 250);
    if (Status s = slurm_->Release(id, nodes, text); !s.ok()) {
      ++st.apply_errors;
      st.status.AddReason(s.ToString());
      continue;
    }
    ++st.released;
  }
  int budget = kMaxCommentsPerPass;
  for (const auto& w : admit.waiting()) {
    const std::string id = w.gang().rfind("slurm/", 0) == 0 ? w.gang().substr(6) : std::string();
    auto it = d.jobs.find(id);
    if (it == d.jobs.end() || StanceOf(*it->second) != JobStance::kHeld) continue;
    Comment(*it->second, id, w.reason(), &budget, st);
  }
  for (const auto& [id, why] : d.skipped) {
    auto it = d.jobs.find(id);
    if (it != d.jobs.end() && StanceOf(*it->second) == JobStance::kHeld) Comment(*it->second, id, why, &budget, st);
  }
}

ReconcileStats Reconciler::ReconcileOnce() {
  ReconcileStats st;
  const auto t0 = Clock::now();
  ClusterRecords rec;
  auto t = Clock::now();
  Status read = slurm_->Load(&rec);
  st.read_s = Since(t);
  if (!read.ok()) {
    // Unknown, not gone: nothing is sent, nothing applied.
    st.status = read;
  } else {
    st.read_ok = true;
    Desired d;
    Convert(rec, d, st);
    t = Clock::now();
    Status sync = SendSync(d, st);
    st.sync_s = Since(t);
    if (!sync.ok()) {
      st.status = sync;
    } else {
      st.synced = true;
      v1::AdmitRequest req;
      req.set_door(v1::SLURM);
      req.set_holder(cfg_.holder);
      v1::AdmitResponse resp;
      t = Clock::now();
      Status admit = engine_->Admit(req, &resp);
      st.admit_s = Since(t);
      if (!admit.ok()) {
        st.status = admit;
        if (admit.ToString().find("lease") != std::string::npos) need_resync_ = true;
      } else {
        st.admitted = true;
        st.admit_tried = resp.tried();
        t = Clock::now();
        Apply(rec, d, resp, st);
        st.apply_s = Since(t);
      }
    }
  }
  st.total_s = Since(t0);
  std::lock_guard<std::mutex> lock(stats_mu_);
  last_ = st;
  ++totals_.passes;
  totals_.read_errors += st.read_ok ? 0 : 1;
  totals_.sync_errors += st.read_ok && !st.synced ? 1 : 0;
  totals_.admit_errors += st.synced && !st.admitted ? 1 : 0;
  totals_.released += st.released;
  totals_.held += st.held;
  totals_.comments += st.comments;
  totals_.apply_errors += st.apply_errors;
  return st;
}

ReconcileStats Reconciler::LastStats() {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return last_;
}

Reconciler::Totals Reconciler::totals() {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return totals_;
}

}  // namespace tidal::slurm
