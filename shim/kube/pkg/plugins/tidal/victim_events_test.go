package tidal

// The events of a preemption (preempt.go): every pod PostFilter evicts gets a Warning
// TidalDisrupted on itself naming the cause, the preemptor and its queue; the preemptor's
// TidalPreempting says "reclaims ... from queue Q" for a quota reclaim.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

// objRecorder is events.FakeRecorder (its Events lines) that also keeps, for each event, the
// object it is on: "ns/name TYPE REASON NOTE".
type objRecorder struct {
	*events.FakeRecorder
	mu sync.Mutex
	on []string
}

func (r *objRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	where := "?"
	if m, err := meta.Accessor(regarding); err == nil {
		where = m.GetNamespace() + "/" + m.GetName()
	}
	r.mu.Lock()
	r.on = append(r.on, where+" "+eventtype+" "+reason+" "+fmt.Sprintf(note, args...))
	r.mu.Unlock()
	r.FakeRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

func (r *objRecorder) WithLogger(klog.Logger) events.EventRecorderLogger { return r }

// eventsOn returns the events recorded on ns/name so far ("TYPE REASON NOTE").
func (r *objRecorder) eventsOn(ns, name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, l := range r.on {
		if rest, ok := strings.CutPrefix(l, ns+"/"+name+" "); ok {
			out = append(out, rest)
		}
	}
	return out
}

func TestPostFilterVictimsGetAnEventNamingTheCausePreemptorAndQueue(t *testing.T) {
	cases := []struct {
		name, reason string
		victimQueue  string
		victim       string // the TidalDisrupted note on each victim pod
		preemptor    string // in the preemptor's TidalPreempting note
	}{
		{"priority", "priority", "team-a",
			"Warning TidalDisrupted evicted by tidal-scheduler: preemption: priority preemption by ml/w-0 (queue team-a)",
			"tidal-engine preempts batch/v-0, batch/v-1 for this pod"},
		{"reclaim", "reclaim", "default",
			"Warning TidalDisrupted evicted by tidal-scheduler: reclaim: quota reclaim by ml/w-0 (queue team-a) from queue default",
			"tidal-engine reclaims batch/v-0, batch/v-1 from queue default for this pod"},
		{"both", "priority+reclaim", "default",
			"Warning TidalDisrupted evicted by tidal-scheduler: preemption: priority preemption and quota reclaim by ml/w-0 (queue team-a) from queue default",
			"tidal-engine preempts and reclaims batch/v-0, batch/v-1 from queue default for this pod"},
		{"an engine that names no queue", "reclaim", "",
			"Warning TidalDisrupted evicted by tidal-scheduler: reclaim: quota reclaim by ml/w-0",
			"tidal-engine reclaims batch/v-0, batch/v-1 for this pod"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			victims := gangPods("batch", "v", 2)
			e := newEnv(t, victims[0], victims[1])
			queue := "team-a"
			if c.victimQueue == "" {
				queue = ""
			}
			e.eng.PreemptFn = func(*tidalv1.PodRef) *tidalv1.PreemptResponse {
				return &tidalv1.PreemptResponse{Status: &tidalv1.Status{}, Victims: refsOf(victims...), Reason: c.reason, Queue: queue,
					VictimGangs: []*tidalv1.VictimGang{{Id: "batch/v", Pods: refsOf(victims...), Queue: c.victimQueue}}}
			}
			if _, st := e.plugin.PostFilter(context.Background(), framework.NewCycleState(), gpuPod("ml", "w-0", nil), nil); !st.IsSuccess() {
				t.Fatalf("PostFilter = %v", st)
			}
			if got := strings.Join(e.evicted(), ","); got != "v-0,v-1" {
				t.Fatalf("evicted %s, want v-0,v-1", got)
			}
			for _, v := range victims {
				if evs := e.rec.eventsOn(v.Namespace, v.Name); len(evs) != 1 || evs[0] != c.victim {
					t.Errorf("events on %s: %q, want [%q]", v.Name, evs, c.victim)
				}
			}
			if evs := e.rec.eventsOn("ml", "w-0"); countWith(evs, "Normal "+ReasonPreempting+" "+c.preemptor) != 1 {
				t.Errorf("events on the preemptor: %q, want %q", evs, c.preemptor)
			}
		})
	}
}

// A victim that checkpoints on notice is not evicted by PostFilter: it gets the notice, not
// TidalDisrupted (the disruption poller's eviction writes that one, disruptions.go).
func TestPostFilterGivesANoticedVictimNoDisruptedEventYet(t *testing.T) {
	victims := gangPods("batch", "v", 1)
	e := newEnv(t, victims[0])
	e.eng.PreemptFn = func(*tidalv1.PodRef) *tidalv1.PreemptResponse {
		return &tidalv1.PreemptResponse{Status: &tidalv1.Status{}, Victims: refsOf(victims...), Reason: "reclaim", Queue: "team-a",
			VictimGangs: []*tidalv1.VictimGang{{Id: "batch/v", Pods: refsOf(victims...), Queue: "default", NoticeSeconds: 60}}}
	}
	if _, st := e.plugin.PostFilter(context.Background(), framework.NewCycleState(), gpuPod("ml", "w-0", nil), nil); !st.IsSuccess() {
		t.Fatalf("PostFilter = %v", st)
	}
	evs := e.rec.eventsOn("batch", "v-0")
	if countWith(evs, ReasonDisrupted) != 0 || countWith(evs, ReasonDisruptionNotice) != 1 {
		t.Errorf("events on the noticed victim: %q", evs)
	}
}
