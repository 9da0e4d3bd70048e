#include "plugins/registry.h"

#include "plugins/fairshare/fairshare.h"
#include "plugins/gang/gang.h"
#include "plugins/preemption/preemption.h"
#include "plugins/priority/priority.h"
#include "plugins/quota/quota.h"
#include "plugins/topology/topology.h"

namespace tidal::plugins {

Status RegisterAll(Registry& r) {
  for (auto [name, factory] : {std::pair<const char*, PluginFactory>{PrioritySort::kName, &PrioritySort::New},
                               {Gang::kName, &Gang::New},
                               {Topology::kName, &Topology::New},
                               {FairShare::kName, &FairShare::New},
                               {Quota::kName, &Quota::New},
                               {Preemption::kName, &Preemption::New}}) {
    if (Status s = r.Register(name, factory); !s.ok()) return s;
  }
  return Status::Ok();
}

Registry DefaultRegistry() {
  Registry r;
  // The built-in names are distinct; a failure here is a programming error caught by registry_test.
  (void)RegisterAll(r);
  return r;
}

}  // namespace tidal::plugins
