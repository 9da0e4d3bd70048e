package tidal

// A standby replica (leader election on, lease held by another) keeps its engine in sync and
// gates pods like the leader, but writes nothing to the API server: no pod or node events, no
// disruption notices or evictions (runtime limits included). Once it leads, it does.

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

// statusPatches counts the patches of pods/status (disruption notices).
func statusPatches(e *env) int {
	n := 0
	for _, a := range e.cs.Actions() {
		if _, ok := a.(clienttesting.PatchAction); ok && a.GetResource().Resource == "pods" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func TestStandbyWritesNothingUntilItLeads(t *testing.T) {
	elect, restore := leader.StandbyForTest()
	defer restore()
	over, ckpt := gpuPod("ml", "over", nil), gpuPod("ml", "ckpt", nil)
	over.Spec.NodeName, ckpt.Spec.NodeName = "node-1", "node-2"
	e := newEnv(t, over, ckpt)
	if !e.plugin.client.Synced() {
		t.Fatal("a standby's engine client must sync (the engine is kept up to date)")
	}
	e.eng.SetDisruptionsFn(func(*tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error) {
		return &tidalv1.DisruptionsResponse{Status: &tidalv1.Status{}, Disruptions: []*tidalv1.Disruption{
			{Id: "pod:ml/over", Cause: "runtime-limit", Action: tidalv1.Disruption_EVICT, Pods: []*tidalv1.PodRef{refOf(over)},
				Reason: "ran 11m, over its limit"},
			{Id: "pod:ml/ckpt", Cause: "drain", Action: tidalv1.Disruption_NOTICE, Pods: []*tidalv1.PodRef{refOf(ckpt)},
				Reason: "node-2 drains", DeadlineUnix: time.Now().Add(time.Minute).Unix()}}}, nil
	})
	e.eng.CheckPodFn = func(*tidalv1.PodRef) *tidalv1.CheckPodResponse {
		return &tidalv1.CheckPodResponse{Status: &tidalv1.Status{Code: tidalv1.Status_UNSCHEDULABLE_AND_UNRESOLVABLE, Plugin: "podspec",
			Reasons: []string{`tidal.dev/gang-size: invalid value "many" (accepted: an integer 1..10000)`}}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.plugin.disruptions.run(ctx, 20*time.Millisecond)
	bad := gpuPod("ml", "bad", map[string]string{"tidal.dev/gang": "x", "tidal.dev/gang-size": "many"})

	// Standing by: the engine is asked (the pod is gated as on the leader), nothing is written.
	if st := e.plugin.PreEnqueue(context.Background(), bad); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("standby PreEnqueue(invalid) = %v, want the engine's refusal", st)
	}
	e.plugin.onNodeWarnings([]*tidalv1.NodeWarning{{Node: "node-1", Reason: "TidalTopologyLabelMissing", Message: "no nvlink label"}})
	time.Sleep(300 * time.Millisecond) // ~15 disruption rounds
	if evs := e.events(); len(evs) != 0 {
		t.Errorf("standby wrote events: %q", evs)
	}
	if n := evictions(e); n != 0 {
		t.Errorf("standby evicted %d pods", n)
	}
	if n := statusPatches(e); n != 0 {
		t.Errorf("standby gave %d notices", n)
	}

	// Elected: the same calls write.
	elect()
	e.eng.WaitFor(t, "the leader evicts the overdue pod and gives notice", 3*time.Second, func() bool {
		return evictions(e) >= 1 && statusPatches(e) >= 1
	})
	e.plugin.PreEnqueue(context.Background(), bad)
	evs := strings.Join(e.events(), "\n")
	if !strings.Contains(evs, "TidalInvalidSpec") || !strings.Contains(evs, "TidalRuntimeLimitExceeded") || !strings.Contains(evs, ReasonDisruptionNotice) {
		t.Errorf("leader events = %q, want TidalInvalidSpec, TidalRuntimeLimitExceeded and %s", evs, ReasonDisruptionNotice)
	}
}
