package tidal

// Tests of what the plugin does between scheduling cycles: evicting pods past their runtime
// limit (overdue.go) and moving back pods whose engine answer raced a Sync round (hold, reject).

import (
	"context"
	"strings"
	"testing"
	"time"

	clienttesting "k8s.io/client-go/testing"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/engineclient"
)

func TestOverduePodsAreEvictedWithAnEvent(t *testing.T) {
	over := gpuPod("ml", "over", nil)
	over.Spec.NodeName = "node-1"
	other := gpuPod("ml", "theirs", nil)
	other.Spec.NodeName, other.Spec.SchedulerName = "node-1", "default-scheduler"
	e := newEnv(t, over, other)
	e.eng.OverdueFn = func() *tidalv1.OverdueResponse {
		return &tidalv1.OverdueResponse{Status: &tidalv1.Status{}, Pods: []*tidalv1.OverduePod{
			{Pod: &tidalv1.PodRef{Uid: string(over.UID), Namespace: "ml", Name: "over"}, Reason: "ran 11m, over its tidal.dev/runtime-limit of 10m (grace 1m)"},
			{Pod: &tidalv1.PodRef{Uid: "stale-uid", Namespace: "ml", Name: "over"}},         // replaced since: not evicted
			{Pod: &tidalv1.PodRef{Uid: string(other.UID), Namespace: "ml", Name: "theirs"}}, // another scheduler's
			{Pod: &tidalv1.PodRef{Uid: "gone", Namespace: "ml", Name: "gone"}},              // deleted meanwhile
		}}
	}
	evicted := e.plugin.evictOverdue(context.Background())
	if len(evicted) != 1 || evicted[0] != "ml/over" {
		t.Fatalf("evicted %v, want [ml/over]", evicted)
	}
	n := 0
	for _, a := range e.cs.Actions() {
		if _, ok := a.(clienttesting.CreateAction); ok && a.GetSubresource() == "eviction" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d evictions, want 1; actions: %v", n, e.cs.Actions())
	}
	if evs := strings.Join(e.events(), "\n"); !strings.Contains(evs, "TidalRuntimeLimitExceeded") || !strings.Contains(evs, "runtime-limit of 10m") {
		t.Errorf("events = %s", evs)
	}
}

// A Sync round that acknowledges more of the gang while the engine's "wait" or "no" is on its
// way cannot move the pod back (it is not recorded yet): the pod is moved back at once instead of
// waiting for an event that may never come. A round for another namespace changes nothing.
func TestARoundDuringTheEngineCallIsNotLost(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	roundFor := func(ns string) {
		e.plugin.onSynced(engineclient.SyncedInfo{PendingPodNamespaces: map[string]struct{}{ns: {}}})
	}
	roundDuring := "ml"
	e.eng.CheckPodFn = func(*tidalv1.PodRef) *tidalv1.CheckPodResponse {
		roundFor(roundDuring)
		return &tidalv1.CheckPodResponse{Status: ok(tidalv1.Status_WAIT, "1 of 2 members")}
	}
	e.eng.PlanPodFn = func(*tidalv1.PodRef) *tidalv1.PlanResponse {
		roundFor(roundDuring)
		return &tidalv1.PlanResponse{Status: ok(tidalv1.Status_UNSCHEDULABLE, "no room")}
	}
	held, refused := gpuPod("ml", "held-0", nil), gpuPod("ml", "refused-0", nil)
	if st := e.plugin.PreEnqueue(ctx, held); st.IsSuccess() {
		t.Fatalf("PreEnqueue = %v, want gated", st)
	}
	e.eng.WaitFor(t, "the gated pod moved back", 2*time.Second, func() bool { return e.act.has("ml/held-0") })
	if _, st := e.plugin.PreFilter(ctx, framework.NewCycleState(), refused, nil); st.IsSuccess() {
		t.Fatalf("PreFilter = %v, want Unschedulable", st)
	}
	if !e.act.has("ml/refused-0") {
		t.Errorf("the refused pod was not moved back")
	}

	roundDuring = "other"
	later, laterRefused := gpuPod("ml", "held-1", nil), gpuPod("ml", "refused-1", nil)
	e.plugin.PreEnqueue(ctx, later)
	e.plugin.PreFilter(ctx, framework.NewCycleState(), laterRefused, nil)
	time.Sleep(100 * time.Millisecond)
	if e.act.has("ml/held-1") || e.act.has("ml/refused-1") {
		t.Errorf("a round for another namespace moved ml's pods back")
	}
	e.plugin.mu.Lock()
	_, isHeld := e.plugin.held[later.UID]
	_, isRejected := e.plugin.rejected[laterRefused.UID]
	e.plugin.mu.Unlock()
	if !isHeld || !isRejected {
		t.Errorf("held=%v rejected=%v: both must wait for the next round", isHeld, isRejected)
	}
}
