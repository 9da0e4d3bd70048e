package tidal

// A standby replica (leader election on, lease held by another) keeps its engine in sync and
// gates pods like the leader, but writes nothing to the API server: no pod or node events, no
// runtime-limit evictions. Once it leads, it does.

import (
	"context"
	"strings"
	"testing"
	"time"

	clienttesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/leader"
)

func evictions(e *env) int {
	n := 0
	for _, a := range e.cs.Actions() {
		if _, ok := a.(clienttesting.CreateAction); ok && a.GetSubresource() == "eviction" {
			n++
		}
	}
	return n
}

func TestStandbyWritesNothingUntilItLeads(t *testing.T) {
	elect, restore := leader.StandbyForTest()
	defer restore()
	over := gpuPod("ml", "over", nil)
	over.Spec.NodeName = "node-1"
	e := newEnv(t, over)
	if !e.plugin.client.Synced() {
		t.Fatal("a standby's engine client must sync (the engine is kept up to date)")
	}
	e.eng.OverdueFn = func() *tidalv1.OverdueResponse {
		return &tidalv1.OverdueResponse{Status: &tidalv1.Status{}, Pods: []*tidalv1.OverduePod{
			{Pod: &tidalv1.PodRef{Uid: string(over.UID), Namespace: "ml", Name: "over"}, Reason: "ran 11m, over its limit"}}}
	}
	e.eng.CheckPodFn = func(*tidalv1.PodRef) *tidalv1.CheckPodResponse {
		return &tidalv1.CheckPodResponse{Status: &tidalv1.Status{Code: tidalv1.Status_UNSCHEDULABLE_AND_UNRESOLVABLE, Plugin: "podspec",
			Reasons: []string{`tidal.dev/gang-size: invalid value "many" (accepted: an integer 1..10000)`}}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.plugin.evictOverdueEvery(ctx, 20*time.Millisecond)
	bad := gpuPod("ml", "bad", map[string]string{"tidal.dev/gang": "x", "tidal.dev/gang-size": "many"})

	// Standing by: the engine is asked (the pod is gated as on the leader), nothing is written.
	if st := e.plugin.PreEnqueue(context.Background(), bad); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("standby PreEnqueue(invalid) = %v, want the engine's refusal", st)
	}
	e.plugin.onNodeWarnings([]*tidalv1.NodeWarning{{Node: "node-1", Reason: "TidalTopologyLabelMissing", Message: "no nvlink label"}})
	time.Sleep(300 * time.Millisecond) // ~15 overdue rounds
	if evs := e.events(); len(evs) != 0 {
		t.Errorf("standby wrote events: %q", evs)
	}
	if n := evictions(e); n != 0 {
		t.Errorf("standby evicted %d pods", n)
	}

	// Elected: the same calls write.
	elect()
	e.eng.WaitFor(t, "the leader evicts the overdue pod", 3*time.Second, func() bool { return evictions(e) >= 1 })
	e.plugin.PreEnqueue(context.Background(), bad)
	evs := strings.Join(e.events(), "\n")
	if !strings.Contains(evs, "TidalInvalidSpec") || !strings.Contains(evs, "TidalRuntimeLimitExceeded") {
		t.Errorf("leader events = %q, want TidalInvalidSpec and TidalRuntimeLimitExceeded", evs)
	}
}
