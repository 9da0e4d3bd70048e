// Explain's words that need no engine state (docs/operations.md, "Explain"): the answer for a pod
// in no Tidal gang (its spec refused or held, or another scheduler's pod), the answer for a gang
// whose members disagree, times in words (a reserved start, an ETA), tidalctl explain's text
// form of the /explain JSON, and tidalctl queues' table of the /queues JSON.
// Plain functions over their arguments: no state, safe from any thread.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/api/status.h"
#include "engine/disruption_book.h"
#include "engine/engine_types.h"
#include "engine/preempt_hold.h"

namespace tidal {

// The answer for pod `name` that belongs to no Tidal gang. `ours`: it names `scheduler` (or came
// through the Slurm door); then `refusal` is why its spec is refused (state "invalid") or held
// (a Wait: state "waiting"), with the engine's own message in "reason" and the text. Otherwise it
// is another scheduler's pod (state "other-scheduler"). Fields: workload, text, state, reason.
nlohmann::json LonePodExplain(const std::string& name, const PodInfo& p, bool ours, const Status& refusal,
                              const std::string& scheduler);

// The text line of a gang whose members disagree on a key of the gang (engine_plan.cc GangConflict):
// "invalid: <conflict>", the same words CheckPod and PlanPod refuse its pods with.
std::string ConflictLine(const std::string& conflict);

// A start time for people: "in 59m58s (2026-12-07T14:03:09Z)", or "now (...)" at or before now_s
// (the pods' events word a reserved start the same way).
std::string StartInWords(int64_t start_s, int64_t now_s);

// A reserved start for people: "in 59m58s (T)", "now (T)", or, for a start already past (a
// reservation due whose nodes are not free yet), "1h0m15s ago (T)": never "in 0s" for a past time.
std::string ReservedStartInWords(int64_t start_s, int64_t now_s);

// The dry cycle's explanation (core/framework/cycle.cc) words a reserved start "reserved to start
// at t=UNIX (in Ns)"; this rewrites each into the events' words ("reserved to start in 2h (T)").
std::string WordReservedStarts(std::string text, int64_t now_s);

// A workload the engine is taking off GPUs (its open disruption: preemption, reclaim, a runtime
// limit, a drain, ...): {cause, reason, opened_unix, notice_s, deadline_unix, evicting, why}. `why`
// names the cause, the reason, for a preemption or reclaim the preemptor's queue and the queue
// taken from (`preemptor_queue`, `own_queue`; "" when unknown), and when it goes: "notice:
// evicted at the latest in 50s (T)", or "eviction asked 5s ago (T)".
nlohmann::json DisruptionExplain(const DisruptionRecord& r, const std::string& preemptor_queue, const std::string& own_queue,
                                 int64_t now_s);

// A preemptor whose victims are going (its preemption hold keeps the room they free):
// {reason, victims, since_unix, why}; `waiting` is the engine's word on what it waits for
// (Engine::AwaitingVictimsLocked, "" when not known yet).
nlohmann::json PreemptingExplain(const PreemptHold& h, const std::string& waiting, int64_t now_s);

// The quota line of a queue: the ledger's description, or what holds when it is not in the tree
// (`configured`: queues are configured at all; none configured, no quota applies).
std::string QuotaLine(const std::string& queue, bool configured, const std::string& described);

// tidalctl explain's text record for an /explain JSON answer. Times are worded against the
// answer's "now_unix" (the engine's clock), else against `local_now_s`. An answer without a state
// (an engine older than this one) prints its "text"; never an empty record.
std::string ExplainRecordText(const nlohmann::json& j, int64_t local_now_s);

// tidalctl queues' table for a /queues JSON answer: per queue its GPUs, nominal, OVER (GPUs above
// its nominal now, a parent's included), BORROWED (a leaf's GPUs in work admitted on borrowed
// quota, which reclaim may take; "-" for a parent, whose children hold the charges), share,
// pending gangs ("-" for a parent), and GPUs by front door. A parent is a queue without door_gpus.
std::string QueuesTable(const nlohmann::json& queues);

}  // namespace tidal
