// JsonFileApi: Load from a recorded state (or squeue/sinfo dumps); writes recorded, not sent.
//
// Threading: one caller thread; no shared state.
#include <algorithm>
#include <ctime>
#include <utility>

#include "shim/slurm/json_state.h"

namespace tidal::slurm {

JsonFileApi::JsonFileApi(std::string state_path) : state_path_(std::move(state_path)) {}

JsonFileApi::JsonFileApi(std::string squeue_path, std::string sinfo_path)
    : squeue_path_(std::move(squeue_path)), sinfo_path_(std::move(sinfo_path)) {}

Status JsonFileApi::Load(ClusterRecords* out) {
  if (!fail_load_.ok()) return std::exchange(fail_load_, Status::Ok());
  ClusterRecords r;
  std::string text;
  if (!state_path_.empty()) {
    Status st = ReadTextFile(state_path_, &text);
    if (st.ok()) st = ReadStateJson(text, &r);
    if (!st.ok()) return st.AddReason("reading " + state_path_);
  } else {
    Status st = ReadTextFile(squeue_path_, &text);
    if (st.ok()) st = ParseSqueueJson(text, &r.jobs);
    if (st.ok()) st = ReadTextFile(sinfo_path_, &text);
    if (st.ok()) st = ParseSinfoJson(text, &r.nodes);
    if (!st.ok()) return st;
    r.read_unix = static_cast<int64_t>(std::time(nullptr));
  }
  *out = std::move(r);
  return Status::Ok();
}

Status JsonFileApi::Record(Call call) {
  if (!fail_write_.ok()) return std::exchange(fail_write_, Status::Ok());
  calls_.push_back(std::move(call));
  return Status::Ok();
}

namespace {
std::string CountOf(const JobPin& pin) {
  return pin.min_nodes == 0 ? "" : std::to_string(pin.min_nodes) + "-" + std::to_string(std::max(pin.min_nodes, pin.max_nodes));
}
}  // namespace

Status JsonFileApi::Release(const std::string& job_id, const JobPin& pin, const std::string& comment) {
  return Record({"release", job_id, pin.nodes, comment, CountOf(pin)});
}
Status JsonFileApi::Hold(const std::string& job_id, const std::string& comment, const JobPin& pin) {
  return Record({"hold", job_id, pin.nodes, comment, CountOf(pin)});
}
Status JsonFileApi::HoldRequeued(const std::string& job_id, const std::string& comment, const JobPin& pin) {
  return Record({"hold_requeued", job_id, pin.nodes, comment, CountOf(pin)});
}
Status JsonFileApi::Shrink(const std::string& job_id, const std::vector<std::string>& nodes) {
  return Record({"shrink", job_id, nodes, {}, {}});
}
Status JsonFileApi::SetComment(const std::string& job_id, const std::string& comment) {
  return Record({"set_comment", job_id, {}, comment});
}
Status JsonFileApi::Requeue(const std::string& job_id) { return Record({"requeue", job_id, {}, {}}); }
Status JsonFileApi::Signal(const std::string& job_id, int signal, bool batch_only) {
  return Record({"signal", job_id, {}, std::to_string(signal) + (batch_only ? " batch" : "")});
}
Status JsonFileApi::Drain(const std::string& node, const std::string& reason) {
  return Record({"drain", node, {}, reason});
}
Status JsonFileApi::Undrain(const std::string& node) { return Record({"undrain", node, {}, {}}); }

}  // namespace tidal::slurm
