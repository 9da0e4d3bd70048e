// DisruptionHandler (see disruptions.h). Threading: the reconciler's loop thread only.
#include "shim/slurm/disruptions.h"

#include <algorithm>
#include <csignal>
#include <ctime>
#include <set>
#include <vector>

#include "shim/slurm/job_fields.h"
#include "shim/slurm/reconciler.h"
#include "shim/slurm/to_engine.h"

namespace tidal::slurm {

namespace {

// A problem of the pass: the first makes the pass's status an error (logged by the adapter).
void Problem(ReconcileStats& st, const std::string& what) {
  if (st.status.ok()) {
    st.status = Status::Error(what);
  } else {
    st.status.AddReason(what);
  }
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

bool Running(const JobRecord* j) { return j != nullptr && j->state == JobState::kRunning && !j->completing; }

// The Slurm jobs an action names, in the order of its members, each with its members.
std::vector<std::pair<std::string, std::vector<const v1::PodRef*>>> JobsOf(const v1::Disruption& d) {
  std::vector<std::pair<std::string, std::vector<const v1::PodRef*>>> out;
  for (const auto& p : d.pods()) {
    const std::string id = DisruptionHandler::JobOfMember(p.uid());
    if (id.empty()) continue;  // not a Slurm member (another door's pod in the same workload)
    auto it = out.begin();
    while (it != out.end() && it->first != id) ++it;
    if (it == out.end()) it = out.insert(out.end(), {id, {}});
    it->second.push_back(&p);
  }
  return out;
}

}  // namespace

std::vector<std::string> DisruptionHandler::ShrinkTo(const JobRecord& j, const std::vector<const v1::PodRef*>& victims,
                                                     std::vector<std::string>* leaving) {
  std::set<std::string> named;
  for (const v1::PodRef* p : victims) named.insert(p->uid());
  std::vector<std::string> keep;
  leaving->clear();
  for (const auto& [index, node] : MemberNodes(j)) {
    (named.count("slurm/" + j.id + "#" + std::to_string(index)) ? *leaving : keep).push_back(node);
  }
  if (leaving->empty()) return keep;  // gone already: nothing to take
  const NodeRange r = NodeRangeOf(j);
  const bool batch_stays = j.batch_host.empty() || std::find(keep.begin(), keep.end(), j.batch_host) != keep.end();
  if (!r.Elastic() || keep.size() < r.min || keep.empty() || !batch_stays) return {};
  return keep;
}

std::string DisruptionHandler::JobOfMember(const std::string& uid) {
  if (uid.rfind("slurm/", 0) != 0) return "";
  const size_t hash = uid.find('#', 6);
  if (hash == std::string::npos || hash == 6) return "";
  return uid.substr(6, hash - 6);
}

std::string DisruptionHandler::Rfc3339(int64_t unix_s) {
  const auto t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void DisruptionHandler::KeepAcrossRequeues(std::vector<JobRecord>& jobs) {
  std::unordered_map<std::string, Known> now;
  for (JobRecord& j : jobs) {
    auto it = known_.empty() ? known_.end() : known_.find(j.id);
    bool same = false;  // the job known under this id (not another one after a state reset)
    if (it != known_.end()) {
      const Known& k = it->second;
      if (j.restart_cnt > k.restart_cnt && j.submit_time >= k.submit_time) j.submit_time = k.submit_time;  // requeued since
      same = j.submit_time == k.submit_time;
      if (same && j.warn_signal == 0 && k.signal > 0 && j.comment.find(kSignalKey) == std::string::npos) {
        j.warn_signal = k.signal;
        j.warn_time_s = k.time_s;
        j.warn_batch_only = k.batch_only;
      }
    }
    if (same || j.warn_signal > 0 || StanceOf(j) == JobStance::kActive) {
      now[j.id] = Known{j.submit_time, j.restart_cnt, j.warn_signal, j.warn_time_s, j.warn_batch_only};
    }
  }
  known_.swap(now);
}

void DisruptionHandler::Run(const ReadFn& read, const CommentFn& comment, ReconcileStats& st) {
  v1::DisruptionsRequest req;
  req.set_door(v1::SLURM);
  v1::DisruptionsResponse resp;
  if (Status s = engine_->Disruptions(req, &resp); !s.ok()) {
    Problem(st, s.ToString());
    return;  // unknown: nothing forgotten, nothing done
  }
  int writes = kMaxActionsPerPass, reports = kMaxActionsPerPass;
  std::set<std::string> noticed, evicting;  // jobs the engine names now, by action
  // Evictions first: the engine holds the capacity they free for others.
  for (const auto& d : resp.disruptions()) {
    if (d.action() != v1::Disruption::EVICT) continue;
    for (const auto& [id, members] : JobsOf(d)) {
      evicting.insert(id);
      const JobRecord* j = read(id);
      if (!Running(j)) continue;  // ending, requeued already, or gone: the next Sync tells the engine
      // An elastic job that keeps its minimum (and its batch host) gives back only those nodes.
      std::vector<std::string> leaving;
      if (std::vector<std::string> keep = ShrinkTo(*j, members, &leaving); !keep.empty()) {
        if (leaving.empty() || writes <= 0) continue;  // shrunk already (its report is due), or the next pass
        --writes;
        if (Status s = slurm_->Shrink(id, keep); !s.ok()) {
          ++st.apply_errors;
          Problem(st, s.ToString());
          continue;
        }
        ++st.disruption_shrinks;
        Requeued& r = shrunk_[{id, d.id()}];
        r = Requeued{};
        r.start_time = j->start_time;
        for (const v1::PodRef* p : members) *r.report.add_pods() = *p;
        r.report.set_disruption(d.id());
        r.report.set_reason(d.cause());
        continue;
      }
      auto done = requeued_.find(id);
      if (done != requeued_.end() && done->second.start_time == j->start_time) continue;  // this run is requeued
      if (writes <= 0) continue;  // the next pass
      --writes;
      if (Status s = slurm_->Requeue(id); !s.ok()) {
        ++st.apply_errors;
        Problem(st, s.ToString());
        continue;
      }
      ++st.disruption_requeues;
      Requeued& r = requeued_[id];
      r = Requeued{};
      r.start_time = j->start_time;
      for (const v1::PodRef* p : members) *r.report.add_pods() = *p;
      r.report.set_disruption(d.id());
      r.report.set_reason(d.cause());
    }
  }
  for (const auto& d : resp.disruptions()) {
    if (d.action() != v1::Disruption::NOTICE) continue;
    for (const auto& [id, members] : JobsOf(d)) {
      noticed.insert(id);
      const JobRecord* j = read(id);
      if (!Running(j)) continue;
      const int64_t deadline = d.deadline_unix();
      if (auto sent = signalled_.find(id); sent == signalled_.end() || sent->second != deadline) {
        if (writes <= 0) continue;
        --writes;
        // Declared none (checkpoint-on-notice from its comment alone): SIGUSR1 to its steps.
        const bool declared = j->warn_signal > 0;
        if (Status s = slurm_->Signal(id, declared ? j->warn_signal : SIGUSR1, declared && j->warn_batch_only); !s.ok()) {
          ++st.apply_errors;
          Problem(st, s.ToString());
          continue;
        }
        signalled_[id] = deadline;
        ++st.notices;
      }
      std::vector<std::string> leaving;
      const bool shrink = !ShrinkTo(*j, members, &leaving).empty();
      comment(*j, id, "notice (" + d.cause() + "): " + d.reason() + "; " +
                          (shrink ? Join(leaving) + " given back" : std::string("requeued")) + " at " + Rfc3339(deadline) +
                          " at the latest");
    }
  }
  // Evicted reports the engine does not have yet (at most `reports` calls a pass); an entry goes
  // once reported and no longer named (while the engine still asks for it, the entry keeps the
  // job from a second requeue or shrink).
  auto report_then_prune = [&](auto& entries, auto still_named) {
    for (auto it = entries.begin(); it != entries.end();) {
      Requeued& r = it->second;
      if (!r.reported && reports > 0) {
        --reports;
        if (Status s = engine_->Evicted(r.report); s.ok()) {
          r.reported = true;
        } else {
          Problem(st, s.ToString());
        }
      }
      it = r.reported && !still_named(it->first) ? entries.erase(it) : std::next(it);
    }
  };
  report_then_prune(requeued_, [&](const std::string& id) { return evicting.count(id) > 0; });
  std::set<std::pair<std::string, std::string>> named;  // (job, disruption) EVICT pairs named now
  for (const auto& d : resp.disruptions()) {
    if (d.action() != v1::Disruption::EVICT) continue;
    for (const auto& [id, members] : JobsOf(d)) named.insert({id, d.id()});
  }
  report_then_prune(shrunk_, [&](const std::pair<std::string, std::string>& key) { return named.count(key) > 0; });
  for (auto it = signalled_.begin(); it != signalled_.end();) {
    it = noticed.count(it->first) || evicting.count(it->first) ? std::next(it) : signalled_.erase(it);
  }
}

}  // namespace tidal::slurm
