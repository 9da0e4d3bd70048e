package tidal

// A member held for long as its gang is incomplete gets one TidalGangIncomplete event
// (incomplete.go). Before, such a pod stayed Pending with no event and no condition: PreEnqueue
// holds it out of the queue, where kube-scheduler writes nothing.

import (
	"context"
	"strings"
	"testing"
	"time"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

func waitAnswer(n int) func(*tidalv1.PodRef) *tidalv1.CheckPodResponse {
	return func(*tidalv1.PodRef) *tidalv1.CheckPodResponse {
		return &tidalv1.CheckPodResponse{Status: ok(tidalv1.Status_WAIT, "gang ml/llm: "+string(rune('0'+n))+" of 4 members exist"), Gang: "ml/llm"}
	}
}

func gangEvents(e *env) []string {
	var out []string
	for _, ev := range e.events() {
		if strings.Contains(ev, ReasonGangIncomplete) {
			out = append(out, ev)
		}
	}
	return out
}

func TestAMemberWaitingLongForItsGangGetsOneEvent(t *testing.T) {
	e := newEnv(t)
	p := gpuPod("ml", "w-0", map[string]string{"tidal.dev/gang": "llm", "tidal.dev/gang-size": "4"})
	e.eng.CheckPodFn = waitAnswer(1)
	t0 := time.Now()
	e.plugin.PreEnqueue(context.Background(), p)
	after := 30 * time.Second
	if n := e.plugin.sweepIncomplete(t0.Add(after/2), after); n != 0 || len(gangEvents(e)) != 0 {
		t.Fatalf("%d events after %v, want none yet (a gang being created completes in milliseconds)", n, after/2)
	}
	// Held again with a newer count (another member arrived): the clock runs from the first hold.
	e.eng.CheckPodFn = waitAnswer(2)
	e.plugin.PreEnqueue(context.Background(), p)
	if n := e.plugin.sweepIncomplete(t0.Add(after+time.Second), after); n != 1 {
		t.Fatalf("%d events after %v, want 1", n, after)
	}
	got := gangEvents(e)
	if len(got) != 1 || !strings.Contains(got[0], "Normal") || !strings.Contains(got[0], "2 of 4 members exist") ||
		!strings.Contains(got[0], "tidal.dev/gang-size") {
		t.Fatalf("events %q, want one Normal event with the latest count and what to check", got)
	}
	if n := e.plugin.sweepIncomplete(t0.Add(10*after), after); n != 0 {
		t.Errorf("%d more events, want one per pod", n)
	}
}

// A member waiting for a gated one (the engine names the gate) is told to have the gate removed,
// not to check its controller's pod count.
func TestAMemberWaitingForAGatedMemberIsToldAboutTheGate(t *testing.T) {
	e := newEnv(t)
	p := gpuPod("ml", "w-0", map[string]string{"tidal.dev/gang": "llm", "tidal.dev/gang-size": "2"})
	e.eng.CheckPodFn = func(*tidalv1.PodRef) *tidalv1.CheckPodResponse {
		return &tidalv1.CheckPodResponse{Status: ok(tidalv1.Status_WAIT, "gang ml/llm: 1 of 2 members exist, 1 more held back by "+
			"spec.schedulingGates (pod w-1 waits for example.com/wait: placed once its gates are removed)"), Gang: "ml/llm"}
	}
	t0 := time.Now()
	e.plugin.PreEnqueue(context.Background(), p)
	if n := e.plugin.sweepIncomplete(t0.Add(31*time.Second), 30*time.Second); n != 1 {
		t.Fatalf("%d events, want 1", n)
	}
	got := gangEvents(e)
	if len(got) != 1 || !strings.Contains(got[0], "pod w-1 waits for example.com/wait") ||
		!strings.Contains(got[0], "removes it") || strings.Contains(got[0], "creates that many pods") {
		t.Fatalf("events %q, want the gate named and what to do about it", got)
	}
}

func TestAMemberWhoseGangCompletesGetsNoEvent(t *testing.T) {
	e := newEnv(t)
	p := gpuPod("ml", "w-0", map[string]string{"tidal.dev/gang": "llm", "tidal.dev/gang-size": "4"})
	notSynced := gpuPod("ml", "new", nil)
	e.eng.CheckPodFn = func(r *tidalv1.PodRef) *tidalv1.CheckPodResponse {
		if r.GetName() == "new" {
			return &tidalv1.CheckPodResponse{Status: ok(tidalv1.Status_UNSCHEDULABLE, "pod is not synced to the engine yet")}
		}
		return waitAnswer(3)(r)
	}
	t0 := time.Now()
	e.plugin.PreEnqueue(context.Background(), p)
	e.plugin.PreEnqueue(context.Background(), notSynced)
	e.eng.CheckPodFn = func(*tidalv1.PodRef) *tidalv1.CheckPodResponse {
		return &tidalv1.CheckPodResponse{Status: ok(tidalv1.Status_SUCCESS), Gang: "ml/llm"}
	}
	e.plugin.PreEnqueue(context.Background(), p) // its last member arrived
	if n := e.plugin.sweepIncomplete(t0.Add(time.Hour), 30*time.Second); n != 0 {
		t.Errorf("%d events %q, want none: the gang completed, and the other pod was only not synced yet", n, gangEvents(e))
	}
}
