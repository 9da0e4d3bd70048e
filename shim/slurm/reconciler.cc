// Reconciler (see reconciler.h). Threading: ReconcileOnce on the adapter's loop thread only.
#include "shim/slurm/reconciler.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "shim/slurm/plan_view.h"
#include "shim/slurm/to_engine.h"
#include "shim/slurm/waiting.h"

namespace tidal::slurm {

namespace {

// The bytes compared against what the last pass sent: deterministic (map fields such as a node's
// labels in key order). SerializeAsString writes a map in its hash order, which differs between two
// equal messages, so every node would read as changed and be sent again at every pass.
std::string Canonical(const google::protobuf::Message& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream s(&out);
    google::protobuf::io::CodedOutputStream c(&s);
    c.SetSerializationDeterministic(true);
    (void)m.SerializeToCodedStream(&c);
  }
  return out;
}

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// The engine's "in 9m58s (2026-12-01T13:26:00Z)" as "at 2026-12-01T13:26:00Z": the countdown
// changes every second, so a reason carrying it (a reserved start) would rewrite the AdminComment
// of every waiting job at every pass; the time it names stays the same.
std::string AbsoluteTimes(std::string s) {
  for (size_t i = s.find("in "); i != std::string::npos; i = s.find("in ", i + 1)) {
    if (i > 0 && s[i - 1] != ' ') continue;
    size_t k = i + 3;
    while (k < s.size() && (std::isdigit(static_cast<unsigned char>(s[k])) || (s[k] != '\0' && std::strchr("dhms", s[k]) != nullptr))) ++k;
    if (k == i + 3 || s.compare(k, 2, " (") != 0) continue;
    const size_t close = s.find(')', k + 2);
    if (close == std::string::npos || close - (k + 2) != 20 || s[close - 1] != 'Z') continue;  // 2026-12-01T13:26:00Z
    s.replace(i, close + 1 - i, "at " + s.substr(k + 2, 20));
  }
  return s;
}

// The index of member uid "slurm/<id>#<i>" (to_engine.h MemberNodes).
uint32_t MemberIndex(const std::string& uid) {
  const size_t hash = uid.rfind('#');
  return hash == std::string::npos ? 0 : static_cast<uint32_t>(std::strtoul(uid.c_str() + hash + 1, nullptr, 10));
}

// AdminComment text: "tidal: <why>", one line, at most 250 characters.
std::string TidalText(const std::string& why) {
  std::string s = std::string(kTidalPrefix) + " " + AbsoluteTimes(why);
  for (char& c : s) c = (c == '\n' || c == '\r') ? ' ' : c;
  if (s.size() > 250) s = s.substr(0, 247) + "...";
  return s;
}

// A pin Slurm can no longer honour: its node is DOWN (or in error, or FUTURE), drained, in
// maintenance or unreadable (a node that is gone is checked by the caller). A node that merely does
// not respond keeps its pins: right after a slurmctld restart every node is "not responding" until
// its slurmd registers again, and Slurm starts the released job once it has; a node that stays
// silent turns DOWN after SlurmdTimeout, and its pins are lost then. (New pins still need Pinnable.)
bool PinLost(const NodeRecord& n) {
  return !n.parse_error.empty() || n.drain || n.maint || n.state == NodeState::kDown ||
         n.state == NodeState::kError || n.state == NodeState::kFuture;
}

// Where an update of record j (known as id) goes: an unsplit array record in place, by the tasks
// it holds (PendingArrayId), never by its array's id (every task split off from it too) or by one
// of its task ids (that task would split off).
std::string UpdateTarget(const JobRecord& j, const std::string& id) {
  return j.pending_array_tasks.empty() ? id : PendingArrayId(j);
}

}  // namespace

struct Reconciler::Desired {
  std::vector<uint32_t> send;     // entries_ slots to send (read order): members built, not skipped
  std::vector<uint32_t> skipped;  // entries_ slots not sent, with why (JobEntry::skip)
  std::map<std::string, std::string> nodes;  // name -> serialized node
  struct Rehold {
    const JobRecord* job;
    std::string why;
    bool requeued = false;  // held again since Tidal released it: HoldRequeued
  };
  std::vector<Rehold> rehold;
  std::unordered_map<std::string, const NodeRecord*> node_recs;
};

const Reconciler::JobEntry* Reconciler::Read(const std::string& id) const {
  auto it = index_.find(id);
  if (it == index_.end() || entries_[it->second].seen != pass_) return nullptr;
  return &entries_[it->second];
}

void Reconciler::Convert(const ClusterRecords& rec, Desired& d, ReconcileStats& st) {
  // Entries of jobs the last pass did not read go; the others keep their read order.
  size_t w = 0;
  for (size_t r = 0; r < entries_.size(); ++r) {
    if (entries_[r].seen != pass_) {
      index_.erase(entries_[r].id);
      continue;
    }
    if (w != r) {
      entries_[w] = std::move(entries_[r]);
      index_[entries_[w].id] = static_cast<uint32_t>(w);
    }
    ++w;
  }
  entries_.resize(w);
  ++pass_;
  d.node_recs.reserve(rec.nodes.size());
  for (const auto& n : rec.nodes) {
    d.node_recs[n.name] = &n;
    d.nodes[n.name] = Canonical(NodeOf(n, cfg_));
  }
  d.send.reserve(entries_.size());
  size_t hint = 0;  // the slot the next job id is expected at
  // Held jobs Slurm would not start now even if released (waiting.h): not sent, they wait.
  const std::unordered_map<std::string, std::string> throttled = ThrottledArrayTasks(rec.jobs);
  for (const auto& j : rec.jobs) {
    JobStance stance = StanceOf(j);
    if (stance == JobStance::kFinished) {
      // Without a jobcomp log, how a job the engine held running ended comes from its state here
      // (slurmctld lists finished jobs for MinJobAge); its entry goes at the next pass: sent once.
      if (jobcomp_ == nullptr) {
        if (auto it = index_.find(j.id); it != index_.end() && entries_[it->second].active && entries_[it->second].sent &&
                                         j.start_time > 0 && j.end_time >= j.start_time) {
          v1::FinishedJob& f = finished_.emplace_back();
          f.set_gang("slurm/" + j.id);
          f.set_start_unix(j.start_time);
          f.set_end_unix(j.end_time);
          f.set_members(static_cast<int32_t>(std::max<uint32_t>(1, j.node_count)));
          f.set_gpus_per_member(std::max<int64_t>(0, j.gpus_per_node));
          std::string state = JobStateName(j.state);  // "node_fail" -> "NODE_FAIL"
          for (auto& c : state) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
          f.set_end(EndOfJobState(state));
        }
      }
      continue;
    }
    if (stance == JobStance::kReleased) {
      // A pin on a node that is gone, down or drained would strand the job (or kill it at the next
      // slurmctld restart): hold it again; the engine plans it anew.
      for (const auto& n : j.required_nodes) {
        auto it = d.node_recs.find(n);
        if (it == d.node_recs.end() || PinLost(*it->second)) {
          d.rehold.push_back({&j, "pinned node " + n + (it == d.node_recs.end() ? " is gone" : " is not usable") +
                                      "; held again to be placed anew", false});
          stance = JobStance::kHeld;
          break;
        }
      }
    }
    if (stance == JobStance::kReleased) {
      // Released, but Slurm holds it back (its begin time, its array's task limit): its pinned
      // GPUs would sit idle until then. Held again; it is sent once Slurm would start it.
      if (std::string why = HeldBackReason(j); !why.empty()) {
        d.rehold.push_back({&j, why, j.restart_cnt > 0 && j.state_reason == "BeginTime"});
        stance = JobStance::kHeld;
      }
    }
    if (stance == JobStance::kEscaped) d.rehold.push_back({&j, "released outside Tidal (requeued, or by hand); held again", false});
    if (stance == JobStance::kHeld && TidalPin(j) && !j.required_nodes.empty()) {
      // Held again since Tidal released it (requeued for a disruption, `scontrol requeuehold`, an
      // admin's hold): Slurm keeps ReqNodeList, and once a waiting reason replaces the AdminComment
      // that old pin would read as the user's --nodelist. It goes now; a job that ran (requeued)
      // also loses the 120 s BeginTime Slurm gives a requeued job (HoldRequeued).
      // Held by its owner (`scontrol hold` goes through the gate as priority 0 and the hold key):
      // the comment says so at once.
      const bool requeued = j.restart_cnt > 0;
      std::string why = UserHoldReason(j);
      if (why.empty()) why = requeued ? "requeued; held to be placed anew" : "held again; Tidal's pin cleared, to be placed anew";
      d.rehold.push_back({&j, why, requeued});
    }
    // A re-held job's members are pending, not on its old pin.
    const bool view_held = stance == JobStance::kEscaped || (stance == JobStance::kHeld && StanceOf(j) == JobStance::kReleased);
    const uint64_t record_key = MembersKey(j) ^ (view_held ? 0x9e3779b97f4a7c15ULL : 0);
    auto convert = [&](const std::string& id) {
      ++st.jobs;
      uint32_t slot = 0;
      if (hint < entries_.size() && entries_[hint].id == id) {
        slot = static_cast<uint32_t>(hint);
      } else {
        auto [it, fresh] = index_.try_emplace(id, static_cast<uint32_t>(entries_.size()));
        if (fresh) entries_.emplace_back().id = id;
        slot = it->second;
      }
      hint = slot + 1;
      JobEntry& e = entries_[slot];
      e.seen = pass_;
      e.rec = &j;
      // Why Slurm would hold it back now (its begin time, its partition, its array's limit): this
      // changes with the time, the partitions and other tasks, not with its record: part of the key.
      std::string wait;
      if (stance == JobStance::kHeld || stance == JobStance::kEscaped) {
        wait = SlurmWaitReason(j, rec);
        if (auto it = throttled.find(id); wait.empty() && it != throttled.end()) wait = it->second;
      }
      const uint64_t key = record_key ^ (std::hash<std::string>{}(id) * 0xff51afd7ed558ccdULL) ^
                           (wait.empty() ? 0 : std::hash<std::string>{}(wait) | 1);
      if (!e.built || e.key != key) {
        e.key = key;
        e.built = true;
        e.active = stance == JobStance::kActive;
        e.skip = e.active ? std::string() : SkipReason(j);
        if (e.skip.empty() && !e.active) e.skip = wait;
        if (e.skip.empty() && !e.active) e.skip = ConstraintError(j);
        e.members.clear();
        if (e.skip.empty()) {
          if (view_held) {
            JobRecord view = j;
            view.priority = 0;
            e.members = MembersOf(view, id, cfg_);
          } else {
            e.members = MembersOf(j, id, cfg_);
          }
        }
        e.bound = 0;
        for (const auto& m : e.members) e.bound = std::max(e.bound, MemberIndex(m.uid()) + 1);
      }
      if (!e.skip.empty()) {
        ++st.skipped;
        d.skipped.push_back(slot);
        return;
      }
      if (e.active) {
        ++st.running;
        for (const auto& m : e.members) st.gpus_running += m.request().gpus();
      } else {
        ++st.pending;
      }
      if (!e.members.empty()) d.send.push_back(slot);
    };
    if (j.pending_array_tasks.empty()) {
      convert(j.id);
    } else {
      for (const auto& id : JobIdsOf(j)) convert(id);
    }
  }
}

Status Reconciler::SendSync(const Desired& d, ReconcileStats& st) {
  // Is the entry sent in this pass's state?
  auto wanted = [&](const JobEntry& e) { return e.seen == pass_ && e.skip.empty() && !e.members.empty(); };
  const bool resync = need_resync_ || !engine_->open();
  Status result;
  {
    std::vector<v1::SyncRequest> msgs(1);
    // The members are lent to the messages (no copy) and taken back before the messages go.
    struct Lent {
      std::vector<v1::SyncRequest>& msgs;
      ~Lent() {
        for (auto& m : msgs) {
          while (m.upsert_pods_size() > 0) (void)m.mutable_upsert_pods()->UnsafeArenaReleaseLast();
        }
      }
    } lent{msgs};
    size_t bytes = 0;  // of the nodes and members in msgs.back()
    auto head = [&](size_t add = 0) -> v1::SyncRequest& {
      const auto& m = msgs.back();
      if (m.upsert_pods_size() + m.delete_pods_size() >= kChunk ||
          (bytes + add > kChunkBytes && m.upsert_pods_size() + m.upsert_nodes_size() + m.delete_pods_size() > 0)) {
        msgs.emplace_back();
        bytes = 0;
      }
      bytes += add;
      return msgs.back();
    };
    auto upsert = [&](JobEntry& e) {
      for (auto& m : e.members) head(m.ByteSizeLong()).mutable_upsert_pods()->UnsafeArenaAddAllocated(&m);
      st.upserts += static_cast<int64_t>(e.members.size());
    };
    // The uids below `to` that the entry's members no longer use (all of them when it is not sent).
    auto remove = [&](const JobEntry& e, bool keep_members, uint32_t to) {
      std::vector<bool> used(to, false);
      if (keep_members) {
        for (const auto& m : e.members) {
          const uint32_t i = MemberIndex(m.uid());
          if (i < to) used[i] = true;
        }
      }
      for (uint32_t i = 0; i < to; ++i) {
        if (used[i]) continue;
        head().add_delete_pods("slurm/" + e.id + "#" + std::to_string(i));
        ++st.deletes;
      }
    };
    if (resync) {
      msgs[0].set_resync(true);
      // Nodes first (cut by bytes like members: 100,000 nodes do not fit one message).
      for (const auto& [name, n] : d.nodes) (void)head(n.size() + 8).add_upsert_nodes()->ParseFromString(n);
      st.upserts = static_cast<int64_t>(d.nodes.size());
      // Members holding nodes first: they are in the first messages, so the engine's capacity is
      // right from the first message on.
      for (uint32_t slot : d.send) {
        if (entries_[slot].active) upsert(entries_[slot]);
      }
      for (uint32_t slot : d.send) {
        if (!entries_[slot].active) upsert(entries_[slot]);
      }
    } else {
      for (const auto& [name, n] : d.nodes) {
        auto it = sent_nodes_.find(name);
        if (it != sent_nodes_.end() && it->second == n) continue;
        (void)head(n.size() + 8).add_upsert_nodes()->ParseFromString(n);
        ++st.upserts;
      }
      for (const auto& [name, n] : sent_nodes_) {
        if (!d.nodes.count(name)) {
          head(name.size() + 8).add_delete_nodes(name);
          ++st.deletes;
        }
      }
      for (uint32_t slot : d.send) {
        JobEntry& e = entries_[slot];
        if (e.sent && e.sent_key == e.key && e.sent_bound == e.bound) continue;
        upsert(e);
        if (e.sent) remove(e, true, e.sent_bound);
      }
      for (const auto& e : entries_) {
        if (e.sent && !wanted(e)) remove(e, false, e.sent_bound);
      }
    }
    if (jobcomp_ != nullptr) {
      if (Status s = jobcomp_->ReadNew(&finished_); !s.ok()) st.status.AddReason(s.ToString());
    }
    for (const auto& f : finished_) *msgs[0].add_finished() = f;
    msgs[0].set_door(v1::SLURM);
    msgs[0].set_holder(cfg_.holder);
    for (auto& m : msgs) m.set_door(v1::SLURM);
    // One snapshot over several messages: the engine removes what it did not name at the last.
    if (resync) {
      for (size_t i = 0; i + 1 < msgs.size(); ++i) msgs[i].set_snapshot_continues(true);
    }
    for (const auto& m : msgs) {
      if (!resync && m.upsert_pods_size() == 0 && m.delete_pods_size() == 0 && m.upsert_nodes_size() == 0 &&
          m.delete_nodes_size() == 0 && m.finished_size() == 0) {
        continue;  // nothing changed
      }
      v1::SyncAck ack;
      if (Status s = engine_->Send(m, &ack); !s.ok()) {
        result = s;
        break;
      }
      if (ack.status().code() != v1::Status::SUCCESS && !ack.status().reasons().empty()) {
        st.status.AddReason("engine refused part of a Sync batch: " + ack.status().reasons(0));
      }
    }
  }
  if (result.ok()) {
    need_resync_ = false;
    finished_.clear();
    st.resynced = resync;
    sent_nodes_.clear();
    sent_nodes_.insert(d.nodes.begin(), d.nodes.end());
  } else {
    need_resync_ = true;  // what the engine holds is unknown now: the next pass sends everything
  }
  // What the engine holds now (entries of jobs no longer read go at the next Convert).
  for (auto& e : entries_) {
    e.sent = result.ok() && wanted(e);
    e.sent_key = e.key;
    e.sent_bound = e.sent ? e.bound : 0;
  }
  return result;
}

void Reconciler::Comment(const JobRecord& j, const std::string& id, const std::string& why, int* budget,
                         ReconcileStats& st) {
  // Every comment keeps Tidal's notes: an elastic job's node range, and on Tidal's pin its user's
  // --nodelist (UserPin).
  // The comment keys Slurm's options replaced are named too (OverrideNote), before Tidal's notes.
  const std::string text = TidalText(why + OverrideNote(j, cfg_)) + TidalNotes(j, TidalPin(j));
  // Only Tidal's own words are replaced: an admin's AdminComment is never overwritten.
  if (j.admin_comment == text || (!j.admin_comment.empty() && j.admin_comment.rfind(kTidalPrefix, 0) != 0)) return;
  if (*budget <= 0) return;
  --*budget;
  if (Status s = slurm_->SetComment(UpdateTarget(j, id), text); !s.ok()) {
    ++st.apply_errors;
    st.status.AddReason(s.ToString());
    return;
  }
  ++st.comments;
}

void Reconciler::ApplyLoans(const ClusterRecords& rec, const v1::AdmitResponse& admit, ReconcileStats& st) {
  const std::set<std::string> lent(admit.lent_nodes().begin(), admit.lent_nodes().end());
  for (const NodeRecord& n : rec.nodes) {
    const bool want = lent.count(n.name) > 0;
    if (want == n.lent_drain || (want && n.drain)) continue;  // as wanted, or an admin's drain already
    Status s = want ? slurm_->Drain(n.name, kLentReason) : slurm_->Undrain(n.name);
    if (!s.ok()) {
      ++st.apply_errors;
      st.status.AddReason(s.ToString());
      continue;
    }
    ++(want ? st.lent_drains : st.lent_undrains);
  }
}

void Reconciler::Apply(const ClusterRecords& rec, const Desired& d, const v1::AdmitResponse& admit, ReconcileStats& st) {
  // Nodes given back first: a job the engine admits onto one is released in this pass.
  ApplyLoans(rec, admit, st);
  std::set<const JobRecord*> reheld;
  for (const auto& [j, why, requeued] : d.rehold) {
    if (!reheld.insert(j).second) continue;
    const std::string text = TidalText(why) + TidalNotes(*j, false);
    // The user's --nodelist comes back (Tidal's pin goes): the job keeps its constraint, and an
    // elastic job its --nodes=MIN-MAX.
    JobPin pin{UserPin(*j)};
    if (const NodeRange r = NodeRangeOf(*j); r.Elastic()) pin.min_nodes = r.min, pin.max_nodes = r.max;
    // An array record released by hand (escaped) is held by UpdateTarget: the tasks Tidal
    // released keep their release.
    const std::string target = UpdateTarget(*j, j->id);
    if (Status s = requeued ? slurm_->HoldRequeued(target, text, pin) : slurm_->Hold(target, text, pin); !s.ok()) {
      ++st.apply_errors;
      st.status.AddReason(s.ToString());
    } else {
      ++st.held;
    }
  }
  // Why the held jobs wait. An unsplit array record gets one comment, the reason of its lowest
  // waiting task (the next to start), before this pass releases any of its tasks: it still holds
  // every task the read saw, so Comment updates it in place (PendingArrayId). One comment per task
  // split the record into a job record per task (up to 200 a pass), until MaxJobCount refused
  // every sbatch. The other jobs' comments follow the releases.
  int budget = kMaxCommentsPerPass;
  auto each_waiting = [&](auto&& f) {
    for (const auto& w : admit.waiting()) {
      const std::string id = w.gang().rfind("slurm/", 0) == 0 ? w.gang().substr(6) : std::string();
      const JobEntry* e = Read(id);
      if (e != nullptr && StanceOf(*e->rec) == JobStance::kHeld) f(*e->rec, id, w.reason());
    }
    for (uint32_t slot : d.skipped) {
      const JobEntry& e = entries_[slot];
      if (StanceOf(*e.rec) == JobStance::kHeld) f(*e.rec, e.id, e.skip);
    }
  };
  std::map<const JobRecord*, std::pair<uint32_t, std::string>> arrays;  // record -> lowest task, why
  each_waiting([&](const JobRecord& j, const std::string& id, const std::string& why) {
    if (j.pending_array_tasks.empty()) return;
    const uint32_t task = static_cast<uint32_t>(std::strtoul(id.c_str() + id.rfind('_') + 1, nullptr, 10));  // "123_7"
    auto [it, fresh] = arrays.try_emplace(&j, task, why);
    if (!fresh && task < it->second.first) it->second = {task, why};
  });
  for (const auto& [j, why] : arrays) Comment(*j, j->id, why.second, &budget, st);
  for (const auto& a : admit.admitted()) {
    const std::string id = a.gang().rfind("slurm/", 0) == 0 ? a.gang().substr(6) : std::string();
    const JobEntry* e = id.empty() ? nullptr : Read(id);
    if (e == nullptr) continue;  // gone since the read: the engine drops its plan
    const JobRecord& j = *e->rec;
    const JobStance stance = StanceOf(j);
    if ((stance != JobStance::kHeld && stance != JobStance::kEscaped) || reheld.count(&j) || !e->skip.empty()) continue;
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
                                       (a.domain().empty() ? "" : " (" + a.domain() + ")") + OverrideNote(j, cfg_))
                                 .substr(0, 250) +
                             TidalNotes(j, true);
    JobPin pin{nodes};
    // An elastic job runs on the nodes the engine gave it: Slurm must not add more up to MAX.
    if (NodeRangeOf(j).Elastic()) pin.min_nodes = pin.max_nodes = static_cast<uint32_t>(nodes.size());
    if (Status s = slurm_->Release(id, pin, text); !s.ok()) {
      ++st.apply_errors;
      st.status.AddReason(s.ToString());
      continue;
    }
    ++st.released;
  }
  each_waiting([&](const JobRecord& j, const std::string& id, const std::string& why) {
    if (j.pending_array_tasks.empty()) Comment(j, id, why, &budget, st);
  });
}

ReconcileStats Reconciler::ReconcileOnce() {
  ReconcileStats st;
  const auto t0 = Clock::now();
  ClusterRecords rec;
  auto t = Clock::now();
  Status read = slurm_->Load(&rec);
  PlanView(&rec);  // Tidal's drains for loans, --exclusive jobs' whole nodes (plan_view.h)
  st.read_s = Since(t);
  if (!read.ok()) {
    // Unknown, not gone: nothing is sent, nothing applied.
    st.status = read;
  } else {
    st.read_ok = true;
    disruptions_.KeepAcrossRequeues(rec.jobs);
    Desired d;
    t = Clock::now();
    Convert(rec, d, st);
    st.convert_s = Since(t);
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
        // The engine's disruptions of Slurm jobs, only while this adapter holds the door (Admit
        // answered): a refused adapter must not act on the holder's.
        t = Clock::now();
        int budget = DisruptionHandler::kMaxActionsPerPass;
        disruptions_.Run(
            [this](const std::string& id) -> const JobRecord* {
              const JobEntry* e = Read(id);
              return e == nullptr ? nullptr : e->rec;
            },
            [&](const JobRecord& j, const std::string& id, const std::string& why) { Comment(j, id, why, &budget, st); },
            st);
        st.disrupt_s = Since(t);
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
  totals_.notices += st.notices;
  totals_.disruption_requeues += st.disruption_requeues;
  totals_.disruption_shrinks += st.disruption_shrinks;
  totals_.lent_drains += st.lent_drains;
  totals_.lent_undrains += st.lent_undrains;
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
