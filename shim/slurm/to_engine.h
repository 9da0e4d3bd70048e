// What tidal-slurm tells the engine: Slurm jobs as gangs of members (one per node) and Slurm nodes,
// as tidal.v1 messages. Pure functions over records (records.h) and the adapter config.
//
// A job "123" (or an array task "123_7") is the gang "slurm/123": members uid "slurm/123#<i>",
// namespace "slurm", name "123#<i>", each asking for the job's per-node GPUs, CPUs and memory (a
// running job's member: the GPUs Slurm allocated on its node, JobRecord::node_gpus), one
// member per node (self anti-affinity on the hostname; the batch host's member is the gang's leader,
// tidal.dev/gang-leader "true": an elastic job gives it back last), tolerating every Kubernetes taint (taints
// are Kubernetes' word, not Slurm's). Annotations carry the Tidal keys the engine reads
// (engine/pod_spec.h): queue (config.h QueueFor), gang, gang-size, runtime-limit (the time limit),
// gpu-model (the gres type), topology (--switches=1 -> switchLevel required; the user's
// --comment keys tidal.dev/topology-required=LEVEL, tidal.dev/topology-preferred=LEVEL,
// tidal.dev/class=..., tidal.dev/preemptible=...), priority from -nice, and checkpointing:
// --signal=[B:]SIG@TIME (as the job's --comment declares it, tidal.dev/signal=...: records.h) ->
// checkpoint-on-notice TIMEs (the job is given notice with SIG, disruptions.h; the --comment key
// tidal.dev/checkpoint-on-notice=... wins), and the job's checkpoint report, the --comment key
// tidal.dev/last-checkpoint=<RFC 3339 or unix seconds> (which a running job sets itself: `scontrol
// update jobid=$SLURM_JOB_ID comment=...`; passed through as written: the engine ignores a value it
// cannot read). Which of Slurm's options win over a --comment key, and which give way: TidalKeys.
// A value the engine refuses is the engine's to report (Admit lists the job waiting with it:
// engine_admit.cc RefusedWaiting). The partition, --constraint (features joined by '&'), --exclude and a user's
// --nodelist become node constraints.
//
// Job states: held or otherwise pending -> pending members; pending and released by Tidal (its
// AdminComment starts "tidal: released") -> members bound to its ReqNodeList (the capacity is
// Slurm's to start on); running, suspended or completing -> members bound to its nodes; finished ->
// absent. A job held by its hold key (tidal.dev/hold=true: waiting.h UserHoldReason), waiting on a
// dependency, whose fields could not be read, or over Tidal's bounds (BoundsError) is not sent:
// SkipReason() says why (shown to its owner). A time limit over 365 days is sent as 365 days
// (Slurm enforces its own limit); a node's capacity at most the engine's per-node caps
// (core/api/limits.h).
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "shim/slurm/config.h"
#include "shim/slurm/records.h"
#include "tidal/v1/engine.pb.h"

namespace tidal::slurm {

inline constexpr const char* kReleasedPrefix = "tidal: released";
inline constexpr const char* kNoticePrefix = "tidal: notice";  // a running job given notice (disruptions.h)
inline constexpr const char* kTidalPrefix = "tidal:";

// Is the job's ReqNodeList Tidal's pin (not the user's --nodelist)? Its AdminComment (which only
// operators can set) says Tidal released it ("tidal: released ...") or gave it notice since.
bool TidalPin(const JobRecord& j);

// The user's own --nodelist: ReqNodeList while it is not Tidal's pin; once Tidal has pinned it,
// what Tidal's AdminComment recorded at the release (" [nodelist: gpu[01-02]]", written by
// UserPinNote). Tidal restores it when it holds the job again (a requeue, a lost pin), so a job
// keeps its user's constraint across requeues. Empty: none (or a note that cannot be read).
std::vector<std::string> UserPin(const JobRecord& j);
// The note the release (and each later Tidal AdminComment of a pinned job) carries: "" when none.
std::string UserPinNote(const std::vector<std::string>& pin);

// A job's node count. An elastic job (--nodes=MIN-MAX) is the gang of MAX members, gang-min MIN,
// while it waits: the engine places it on as many nodes as fit, at least MIN; Tidal releases it
// pinned to those nodes with NumNodes=K (Slurm would otherwise add nodes up to MAX itself, on
// nodes Tidal counts free). Running, it is the gang of its nodes with gang-min MIN: a disruption
// that leaves it MIN nodes or more shrinks it (SlurmApi::Shrink) instead of requeueing it. Slurm
// cannot add nodes to a running job: it does not grow. Once Slurm's own fields no longer say
// MIN-MAX (from the release on; a requeued job reads the count it last ran with), Tidal's
// AdminComment carries the range (" [nodes: 2-4]", NodeRangeNote) and every later Tidal comment
// keeps it (TidalNotes); a requeue puts it back on the job (Hold's pin).
struct NodeRange {
  uint32_t min = 1, max = 1;
  bool Elastic() const { return max > min; }
};
NodeRange NodeRangeOf(const JobRecord& j);
// " [nodes: 2-4]" for an elastic job, else "".
std::string NodeRangeNote(const JobRecord& j);
// What every Tidal AdminComment of `j` ends with: its node range, then (on Tidal's pin: `pinned`)
// its user's --nodelist (UserPinNote, always last).
std::string TidalNotes(const JobRecord& j, bool pinned);

// A running job's members with their nodes: index i is member "slurm/<id>#i". On Tidal's pin a
// member keeps the index of its node in the (sorted) pin, so a shrink leaves the others' uids as
// they were; otherwise the index is the node's place among the job's sorted nodes.
std::vector<std::pair<uint32_t, std::string>> MemberNodes(const JobRecord& j);

// How a job stands towards Tidal.
enum class JobStance {
  kHeld,          // pending, priority 0: waiting for Tidal
  kReleased,      // pending, released by Tidal, pinned: Slurm's to start
  kEscaped,       // pending, not held, not released by Tidal (requeued, gate missing): re-hold it
  kActive,        // running, suspended or completing: holds its nodes
  kFinished,      // gone from Tidal's view
};
JobStance StanceOf(const JobRecord& j);

// Why a pending job is not sent to the engine ("" = it is sent); includes UserHoldReason and
// BoundsError.
std::string SkipReason(const JobRecord& j);
// Why the job is over core/api/limits.h's bounds ("" = it is not): more than 10000 nodes, a
// node's worth over the per-node caps, nodes x GPUs over the workload cap, a --comment tidal.dev/
// value over 1024 bytes, --exclude/--nodelist naming over 512 KiB of nodes.
std::string BoundsError(const JobRecord& j);

// The job ids a record stands for: itself, or each pending task of an unsplit array record.
std::vector<std::string> JobIdsOf(const JobRecord& j);

// The id that updates an unsplit array record in place: "123_[7-9,11-99]", exactly the tasks it
// holds ("" when it holds none). An update naming one of its tasks ("123_7", or a range short of
// all of them) makes slurmctld split each named task off into a job record of its own (and counts
// it against MaxJobCount); "123" updates the array's split tasks too, running ones included.
// Checked on Slurm 22.05: a range equal to the record's tasks updates the record in place; a
// range of more tasks (say, one split off since the read) updates it in place as well, plus the
// split tasks it names, and splits nothing.
std::string PendingArrayId(const JobRecord& j);

// The Tidal keys every member of job `id` carries (MembersOf adds the leader mark to the batch
// host's): the user's --comment keys, then Slurm's own, which win: tidal.dev/gang and gang-size
// (the job is one gang of `members`), gang-min (dropped; an elastic job's MIN), gang-leader
// (dropped: the batch host's member leads), queue (QueueFor, always), runtime-limit (--time
// unless UNLIMITED), gpu-model (the --gres type, when it names one). The comment wins over
// --signal (checkpoint-on-notice) and --switches=1 (topology-required). overridden (optional):
// each comment key Slurm's options replaced with another value, or dropped, and a --switches=1
// that gave way, as "KEY=VALUE (why)".
google::protobuf::Map<std::string, std::string> TidalKeys(const JobRecord& j, const std::string& id, int64_t members,
                                                          const AdapterConfig& cfg, std::vector<std::string>* overridden);
// What a waiting or released job's AdminComment adds so its owner sees what of the comment did
// not apply: "; --comment keys Slurm's options replace: tidal.dev/queue=x (the queue of its
// account/partition/QOS is qa), ..." ("" when nothing; TidalKeys).
std::string OverrideNote(const JobRecord& j, const AdapterConfig& cfg);

// The members of job `id` (one of JobIdsOf(j)); empty when the job is not sent.
std::vector<v1::Pod> MembersOf(const JobRecord& j, const std::string& id, const AdapterConfig& cfg);

// A fingerprint of what MembersOf, SkipReason, ConstraintError and StanceOf read from a record, so
// the reconciler keeps a job's converted members while its record reads the same (a record of
// 100,000 that did not change costs this hash, not a conversion). Left out: the ids (the caller
// folds in the job id it converts), pending_array_tasks and array_max_tasks (each task is its own
// job id), name, end_time, restart_cnt, start_time unless the job holds nodes, warn_batch_only,
// and of admin_comment only whether it starts with kReleasedPrefix, TidalPin, Tidal's --nodelist
// note (UserPin) and its node range note (NodeRangeOf). A field MembersOf
// & co. start to read must be added here.
uint64_t MembersKey(const JobRecord& j);

// Why the job's partition/--constraint/--exclude/--nodelist cannot be expressed ("" = they can);
// such a job is not sent (MembersOf returns nothing).
std::string ConstraintError(const JobRecord& j);

// A Slurm node as the engine sees it from the Slurm door.
v1::Node NodeOf(const NodeRecord& n, const AdapterConfig& cfg);
// May Tidal pin a job to this node now (known, responding, not down, not drained by anyone)?
bool Pinnable(const NodeRecord& n);

// The GPUs Slurm allocated to running job `j` on `node` (JobRecord::node_gpus); -1 = not known
// (the job's gpus_per_node then).
int64_t GpusOn(const JobRecord& j, const std::string& node);

// The label a node carries for partition p / feature f (a label key: invalid characters -> '_').
std::string PartitionLabel(const std::string& p);
std::string FeatureLabel(const std::string& f);

}  // namespace tidal::slurm
