// Explain's words that need no engine state (docs/operations.md, "Explain"): the answer for a pod
// in no Tidal gang (its spec refused or held, or another scheduler's pod), the answer for a gang
// whose members disagree, and tidalctl explain's text form of the /explain JSON.
// Plain functions over their arguments: no state, safe from any thread.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/api/status.h"
#include "engine/engine_types.h"

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

// tidalctl explain's text record for an /explain JSON answer. Times are worded against the
// answer's "now_unix" (the engine's clock), else against `local_now_s`. An answer without a state
// (an engine older than this one) prints its "text"; never an empty record.
std::string ExplainRecordText(const nlohmann::json& j, int64_t local_now_s);

}  // namespace tidal
