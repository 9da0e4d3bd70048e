// Explain's stateless words (engine/explain_text.h).
#include "engine/explain_text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <exception>
#include <utility>
#include <vector>

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

std::string ReservedStartInWords(int64_t start_s, int64_t now_s) {
  if (start_s >= now_s) return StartInWords(start_s, now_s);
  return FormatDurationSeconds(now_s - start_s) + " ago (" + FormatUnixTime(start_s) + ")";
}

std::string WordReservedStarts(std::string text, int64_t now_s) {
  static const std::string kAt = "reserved to start at t=";
  for (size_t at = text.find(kAt); at != std::string::npos; at = text.find(kAt, at + 1)) {
    size_t end = at + kAt.size();
    while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '-')) ++end;
    if (end == at + kAt.size()) continue;
    int64_t start = 0;
    try {
      start = std::stoll(text.substr(at + kAt.size(), end - at - kAt.size()));
    } catch (const std::exception&) {
      continue;
    }
    if (text.compare(end, 5, " (in ") == 0) {  // the cycle's "(in Ns)"
      const size_t close = text.find(')', end);
      if (close != std::string::npos) end = close + 1;
    }
    text.replace(at, end - at, "reserved to start " + ReservedStartInWords(start, now_s));
  }
  return text;
}

nlohmann::json DisruptionExplain(const DisruptionRecord& r, const std::string& preemptor_queue, const std::string& own_queue,
                                 int64_t now_s) {
  const std::string cause(DisruptionCauseName(r.cause));
  std::string why = cause + ": " + r.reason;
  if (!preemptor_queue.empty() && r.cause == DisruptionCause::kReclaim) {
    why += "; queue " + preemptor_queue + " reclaims quota" + (own_queue.empty() ? "" : " from queue " + own_queue);
  } else if (!preemptor_queue.empty() && r.cause == DisruptionCause::kPreemption) {
    why += "; the preemptor is of queue " + preemptor_queue;
  }
  const bool evicting = r.evicted_s > 0 || r.acknowledged || r.notice_s <= 0 || r.deadline_s <= now_s;
  if (r.evicted_s > 0) {
    why += "; eviction asked " + ReservedStartInWords(r.evicted_s, now_s);
  } else if (r.notice_s <= 0) {
    why += "; evicted at once (it asks for no notice)";
  } else if (evicting) {
    why += "; its notice is over: evicted now";
  } else {
    why += "; notice: evicted at the latest " + StartInWords(r.deadline_s, now_s) +
           " (a checkpoint reported in tidal.dev/last-checkpoint ends it sooner)";
  }
  return {{"cause", cause},        {"reason", r.reason},        {"opened_unix", r.opened_s}, {"notice_s", r.notice_s},
          {"deadline_unix", r.deadline_s}, {"evicting", evicting}, {"why", why}};
}

nlohmann::json PreemptingExplain(const PreemptHold& h, const std::string& waiting, int64_t now_s) {
  std::vector<std::string> ids;
  std::string list;
  for (const auto& v : h.victims) {
    ids.push_back(v.id);
    if (ids.size() <= 5) list += (list.empty() ? "" : ", ") + v.id;
  }
  if (ids.size() > 5) list += " and " + std::to_string(ids.size() - 5) + " more";
  std::string why = (h.reason.empty() ? std::string("preemption") : h.reason) + " of " + std::to_string(ids.size()) +
                    " workload(s) (" + list + ") chosen " + ReservedStartInWords(h.created_s, now_s) + "; " +
                    (waiting.empty() ? std::string("their capacity is held for this gang") : waiting);
  return {{"reason", h.reason}, {"victims", ids}, {"since_unix", h.created_s}, {"why", why}};
}

std::string QuotaLine(const std::string& queue, bool configured, const std::string& described) {
  if (!described.empty()) return described;
  if (!configured) return "no queues configured: no quota applies (queue " + queue + ")";
  return "queue " + queue + " is not configured";
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
    // A dry run that rejects the gang (it can never be placed as asked: Why says what to change).
    const std::string unknown = j.value("would", "") == "Rejected" ? "never, as asked (see Why)" : "unknown";
    std::string eta = j["eta_unix"].is_number() ? StartInWords(j["eta_unix"].get<int64_t>(), now_s) : unknown;
    if (j.value("eta_overdue", false) && j["eta_unix"].is_number()) {
      eta = "when the work it waits for ends: by the declared run times that was " +
            ReservedStartInWords(j["eta_unix"].get<int64_t>(), now_s) + ", it runs past its expected end";
    }
    out += Line("ETA:       ", eta);
  }
  if (j.contains("reservation") && j["reservation"].is_object()) {  // a gang reserved to start later
    const auto& r = j["reservation"];
    std::string s = ReservedStartInWords(r.value("start_unix", int64_t{0}), now_s) + " on " + std::to_string(r.value("nodes", 0)) + " node(s)";
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
  if (j.contains("growing")) {  // an elastic gang running at or above its minimum
    out += Line("Growing:   ", Field(j, "growing") + " member(s) wait to grow it back (the position and ETA below are theirs)");
  }
  if (j.contains("position")) out += "Position:  " + Field(j, "position") + " of " + Field(j, "queue_length") + "\n";
  out += TimesText(j, now_s);
  if (j.contains("why")) out += Line("Why:       ", Field(j, "why"));
  if (j.contains("borrowed") && j["borrowed"].is_object() && j["borrowed"].contains("why")) {
    out += Line("Window:    ", Field(j["borrowed"], "why"));
  }
  for (const auto& [k, label] : {std::pair{"disruption", "Disrupted: "}, std::pair{"preempting", "Victims:   "}}) {
    if (j.contains(k) && j[k].is_object() && j[k].contains("why")) out += Line(label, Field(j[k], "why"));
  }
  if (j.contains("runtime") && j["runtime"].is_string()) out += Line("Runtime:   ", Field(j, "runtime"));
  if (j.contains("quota")) out += Line("Quota:     ", Field(j, "quota"));
  if (j.contains("last") && j["last"] != "") out += Line("Last:      ", Field(j, "last"));  // never tried: no blank line
  return out;
}

std::string QueuesTable(const nlohmann::json& queues) {
  auto pad = [](std::string v, size_t w) { return v.size() < w ? v + std::string(w - v.size(), ' ') : v + " "; };
  // A resource's GPUs in a queue's object (-1 when absent: an unlimited nominal, an older engine).
  auto gpus = [](const nlohmann::json& q, const char* k) -> int64_t {
    if (!q.contains(k) || !q[k].is_object() || !q[k].contains("gpus") || !q[k]["gpus"].is_number()) return -1;
    return static_cast<int64_t>(q[k]["gpus"].get<double>());
  };
  auto num = [](int64_t v) { return v >= 0 ? std::to_string(v) : std::string("-"); };
  std::string out = pad("QUEUE", 20) + pad("GPUS", 8) + pad("NOMINAL", 9) + pad("OVER", 7) + pad("BORROWED", 10) + pad("SHARE", 8) +
                    pad("PENDING", 9) + pad("K8S-GPUS", 10) + "SLURM-GPUS\n";
  if (!queues.is_array()) return out;
  bool any_configured = false;
  for (const auto& q : queues) {
    const bool leaf = q.contains("door_gpus") && q["door_gpus"].is_object();  // every configured leaf has its door series
    const int64_t usage = gpus(q, "usage"), nominal = gpus(q, "nominal");
    const int64_t over = usage >= 0 && nominal >= 0 ? std::max<int64_t>(0, usage - nominal) : -1;
    double pending = 0;
    if (q.contains("pending") && q["pending"].is_object()) {
      for (const auto& [c, v] : q["pending"].items()) pending += v.is_number() ? v.get<double>() : 0;
    }
    // Pods waiting in a queue the config does not name (e.g. "default" for pods without a queue
    // key) have a pending count and nothing else: shown only while some wait, and said so.
    const bool configured = q.contains("usage") || q.contains("nominal") || leaf;
    any_configured = any_configured || configured;
    if (!configured) {
      if (pending <= 0) continue;
      out += pad(q.value("queue", "") + " (not configured)", 20) + pad("-", 8) + pad("-", 9) + pad("-", 7) + pad("-", 10) +
             pad("-", 8) + pad(std::to_string(static_cast<int64_t>(pending)), 9) + pad("-", 10) + "-\n";
      continue;
    }
    char share[32];
    std::snprintf(share, sizeof share, "%.3f", q.value("share", 0.0));
    auto door = [&](const char* d) -> std::string {
      if (!leaf || !q["door_gpus"].contains(d) || !q["door_gpus"][d].is_number()) return "-";
      return std::to_string(static_cast<int64_t>(q["door_gpus"][d].get<double>()));
    };
    out += pad(q.value("queue", ""), 20) + pad(num(usage), 8) + pad(num(nominal), 9) + pad(num(over), 7) +
           pad(leaf ? num(gpus(q, "borrowed")) : "-", 10) + pad(share, 8) +
           pad(leaf ? std::to_string(static_cast<int64_t>(pending)) : "-", 9) + pad(door("kubernetes"), 10) + door("slurm") + "\n";
  }
  if (!any_configured) out += "(no queues configured: every pod is in queue default, and no quota applies)\n";
  return out;
}

}  // namespace tidal
