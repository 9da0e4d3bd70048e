// Fuzz target: the Slurm adapter's field parsers: hostlists (shim/slurm/hostlist.cc), TRES and
// gres strings, memory and counts (tres.cc), array task expressions and the derived job/node
// fields (job_fields.cc). The first byte picks the parser; the rest is the text (for
// DeriveJobFields: the RawJob's fields, separated by '\n').
// Checked: ExpandHostlist(CompressHostlist(v)) holds the names of v (hostlist.h's promise).
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "shim/slurm/hostlist.h"
#include "shim/slurm/job_fields.h"
#include "shim/slurm/tres.h"

namespace ts = tidal::slurm;

namespace {

std::string_view Next(std::string_view* in) {
  const size_t nl = in->find('\n');
  std::string_view f = in->substr(0, nl);
  *in = nl == std::string_view::npos ? std::string_view() : in->substr(nl + 1);
  return f;
}

int64_t Num(std::string_view s) {
  int64_t v = 0;
  for (char c : s.substr(0, 9)) v = v * 10 + (c >= '0' && c <= '9' ? c - '0' : 0);
  return v;
}

void Hostlist(std::string_view text) {
  std::vector<std::string> names;
  if (!ts::ExpandHostlist(text, &names, "hostlist", 10000).ok()) return;
  const std::string compressed = ts::CompressHostlist(names);
  std::vector<std::string> again;
  if (!ts::ExpandHostlist(compressed, &again, "hostlist", 20000).ok()) __builtin_trap();
  if (std::set<std::string>(names.begin(), names.end()) != std::set<std::string>(again.begin(), again.end())) {
    __builtin_trap();  // CompressHostlist lost or invented a name
  }
}

void Job(std::string_view in, uint8_t sel) {
  ts::RawJob raw;
  raw.tres_per_node = Next(&in);
  raw.tres_per_job = Next(&in);
  raw.tres_per_task = Next(&in);
  raw.tres_per_socket = Next(&in);
  raw.tres_req_str = Next(&in);
  raw.tres_alloc_str = Next(&in);
  raw.nodes = Next(&in);
  raw.required_nodes = Next(&in);
  raw.excluded_nodes = Next(&in);
  raw.array_task_str = Next(&in);
  raw.num_tasks = Num(Next(&in));
  raw.pn_min_cpus = Num(Next(&in));
  raw.pn_min_memory_mb = Num(Next(&in));
  raw.mem_per_cpu_mb = Num(Next(&in));
  ts::JobRecord job;
  job.id = "1";
  ts::JobState state = ts::JobState::kPending;
  bool completing = false;
  ts::JobStateFromName(Next(&in), &state, &completing);
  job.state = state;
  job.completing = completing;
  job.node_count = static_cast<uint32_t>(sel >> 3);
  ts::DeriveJobFields(raw, &job);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t sel = data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (sel % 8) {
    case 0: Hostlist(text); break;
    case 1: {
      ts::GpuRequest g;
      (void)ts::ParseTresGpus("tres_per_node", text, &g);
      break;
    }
    case 2: {
      ts::TresCounts c;
      (void)ts::ParseTresCounts("tres_req_str", text, &c);
      break;
    }
    case 3: {
      ts::NodeGpus g;
      (void)ts::ParseNodeGres("gres", text, &g);
      ts::NodeRecord n;
      std::string_view rest = text;
      std::string_view gres = Next(&rest);
      ts::DeriveNodeGpus(gres, rest, &n);
      break;
    }
    case 4: {
      int64_t mb = 0, count = 0;
      (void)ts::ParseMemoryMb("memory", text, &mb);
      (void)ts::ParseCount("count", text, ts::kMaxCount, &count);
      break;
    }
    case 5: {
      std::vector<uint32_t> tasks;
      uint32_t max_tasks = 0;
      (void)ts::ExpandArrayTasks(text, &tasks, &max_tasks);
      break;
    }
    case 6: {
      ts::NodeRecord n;
      ts::NodeState st;
      ts::JobState js;
      bool completing = false;
      (void)ts::NodeStateFromName(text, &st);
      (void)ts::JobStateFromName(text, &js, &completing);
      for (const auto& f : ts::SplitCommaList(text)) ts::ApplyNodeFlag(f, &n);
      break;
    }
    default: Job(text, sel); break;
  }
  return 0;
}
