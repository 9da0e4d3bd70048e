// Fuzz target: a pod's labels and annotations -> ParsePodSchedulingSpec (engine/pod_spec.cc and the
// key tables of engine/pod_keys.cc: Tidal's keys, the upstream PodGroup, scheduler-plugins,
// Volcano, KAI, Kueue, JobSet, LeaderWorkerSet) and ExclusiveTopologyOf.
//
// Input: lines "L key=value" (a label) or "A key=value" (an annotation); a key of the form "@N"
// is the N-th of the keys the parser knows (fuzz/pod_spec_keys.h), so short inputs reach every
// key. The first line may be "levels a,b,c" to set the topology levels (default block,leaf,nvlink).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "engine/pod_spec.h"
#include "fuzz/pod_spec_keys.h"

namespace {

std::string ExpandKey(std::string_view k) {
  if (k.size() >= 2 && k[0] == '@') {
    size_t n = 0;
    for (char c : k.substr(1)) {
      if (c < '0' || c > '9') return std::string(k);
      n = n * 10 + static_cast<size_t>(c - '0');
      if (n > 1000) break;
    }
    return tidal::fuzz::kPodKeys[n % tidal::fuzz::kPodKeyCount];
  }
  return std::string(k);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> labels, annotations;
  tidal::TopologyLevels levels = tidal::TopologyLevels::Default();
  bool first = true;
  while (!in.empty()) {
    const size_t nl = in.find('\n');
    std::string_view line = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    if (first && line.substr(0, 7) == "levels ") {
      levels.levels.clear();
      std::string_view names = line.substr(7);
      while (!names.empty() && levels.levels.size() < 8) {
        const size_t c = names.find(',');
        std::string name(names.substr(0, c));
        levels.levels.push_back({name, "topology.tidal.dev/" + name});
        names = c == std::string_view::npos ? std::string_view() : names.substr(c + 1);
      }
      first = false;
      continue;
    }
    first = false;
    if (line.size() < 2 || line[1] != ' ') continue;
    std::string_view kv = line.substr(2);
    const size_t eq = kv.find('=');
    std::string key = ExpandKey(kv.substr(0, eq));
    std::string value(eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1));
    (line[0] == 'A' ? annotations : labels)[key] = value;
  }
  auto spec = tidal::ParsePodSchedulingSpec(labels, annotations, levels);
  (void)spec;
  auto ex = tidal::ExclusiveTopologyOf("ns", labels, annotations);
  (void)ex;
  return 0;
}
