// Explain's stateless words (engine/explain_text.h).
#include "engine/explain_text.h"

#include "core/api/duration.h"

namespace tidal {

nlohmann::json LonePodExplain(const std::string& name, const PodInfo& p, bool ours, const Status& refusal,
                              const std::string& scheduler) {
  const std::string where = p.node_name.empty() ? " is pending" : " is bound to " + p.node_name;
  nlohmann::json j{{"workload", name}};
  if (!ours || refusal.ok()) {
    j["state"] = "other-scheduler";
    j["reason"] = "its spec.schedulerName is " + (p.scheduler_name.empty() ? std::string("(not set)") : p.scheduler_name) +
                  ", not " + scheduler;
    j["text"] = "pod " + name + where + " and is not scheduled by " + scheduler;
    return j;
  }
  const bool held = refusal.code() == StatusCode::kWait;
  j["state"] = held ? "waiting" : "invalid";
  j["reason"] = refusal.Message();
  j["text"] = "pod " + name + where + ": " + scheduler + (held ? " holds it: " : " refuses its spec: ") + refusal.Message();
  return j;
}

std::string ConflictLine(const std::string& conflict) { return "invalid: " + conflict; }

std::string StartInWords(int64_t start_s, int64_t now_s) {
  const std::string at = " (" + FormatUnixTime(start_s) + ")";
  return start_s <= now_s ? "now" + at : "in " + FormatDurationSeconds(start_s - now_s) + at;
}

namespace {

// A field as text: a string as is, another value as JSON, "-" when absent or null.
std::string Field(const nlohmann::json& j, const char* k) {
  if (!j.contains(k) || j[k].is_null()) return "-";
  return j[k].is_string() ? j[k].get<std::string>() : j[k].dump();
}

std::string Line(const char* label, const std::string& value) { return std::string(label) + value + "\n"; }

// The estimated start and the backfill reservation, worded against now_s.
std::string TimesText(const nlohmann::json& j, int64_t now_s) {
  std::string out;
  if (j.contains("eta_unix")) {
    out += Line("ETA:       ", j["eta_unix"].is_number() ? StartInWords(j["eta_unix"].get<int64_t>(), now_s) : "unknown");
  }
  if (j.contains("reservation") && j["reservation"].is_object()) {  // a gang reserved to start later
    const auto& r = j["reservation"];
    std::string s = StartInWords(r.value("start_unix", int64_t{0}), now_s) + " on " + std::to_string(r.value("nodes", 0)) + " node(s)";
    if (r.contains("fillers") && r["fillers"].is_string()) s += "; " + r["fillers"].get<std::string>();
    out += Line("Reserved:  ", s);
  }
  return out;
}

}  // namespace

std::string ExplainRecordText(const nlohmann::json& j, int64_t local_now_s) {
  const int64_t now_s = j.contains("now_unix") && j["now_unix"].is_number() ? j["now_unix"].get<int64_t>() : local_now_s;
  std::string out = Line("Workload:  ", Field(j, "workload"));
  if (j.contains("queue")) out += "Queue:     " + Field(j, "queue") + "  Class: " + Field(j, "class") + "\n";
  out += Line("State:     ", Field(j, "state"));
  if (j.contains("reason")) out += Line("Reason:    ", Field(j, "reason"));
  if (!j.contains("state") && j.contains("text")) return out + Line("Text:      ", Field(j, "text"));
  if (j.contains("members")) out += Line("Members:   ", j["members"].dump());
  if (j.contains("position")) out += "Position:  " + Field(j, "position") + " of " + Field(j, "queue_length") + "\n";
  out += TimesText(j, now_s);
  if (j.contains("why")) out += Line("Why:       ", Field(j, "why"));
  if (j.contains("borrowed") && j["borrowed"].is_object() && j["borrowed"].contains("why")) {
    out += Line("Window:    ", Field(j["borrowed"], "why"));
  }
  if (j.contains("runtime") && j["runtime"].is_string()) out += Line("Runtime:   ", Field(j, "runtime"));
  if (j.contains("quota")) out += Line("Quota:     ", Field(j, "quota"));
  if (j.contains("last")) out += Line("Last:      ", Field(j, "last"));
  return out;
}

}  // namespace tidal
