// Fillers in the gaps before reserved starts: the state the engine keeps about them
// (engine/engine_gap_fill.cc has the rule). A reservation's nodes before its start are a perishable
// window: by perishable.fill, preemptible work whose notice, kDrainSlackS and perishable.minSeconds
// fit before the start may use them (a filler), and gets its notice (cause reservation) as late as
// that allows, or at once when the reserved gang could start now but for the fillers.
// Which workloads are fillers is derived at each poll from the book and the bound pods (nothing of
// it is in the state file); what is kept here is only which reservations are being given back.
//
// Threading: plain data owned by Engine and guarded by Engine::mu_ (engine.h); no locking here.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace tidal {

// One filler a reservation waits for.
struct GapFiller {
  std::string id;      // its workload (gang key)
  int64_t notice = 0;  // the notice it gets (FillNoticeLocked)
  int64_t due_s = 0;   // when its notice opens: start - notice - kDrainSlackS, or now (early)
  int64_t gone_s = 0;  // when it is gone at the latest (its notice's deadline + kDrainSlackS)
};

struct GapFills {
  // A reservation (book id "plan:<gang>") whose fillers were given notice: its nodes take no new
  // filler until it starts, moves or goes.
  struct Call {
    std::set<std::string> fillers;  // filler workloads given notice for it
    bool activated = false;         // all gone: the gang's pending pods went to TakeActivations
  };
  std::map<std::string, Call> calls;
};

}  // namespace tidal
