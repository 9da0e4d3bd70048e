package tidal

// Withdrawing called-off notices (withdraw.go): a notice whose disruption the engine no longer
// answers is withdrawn once (condition False, reason TidalNoticeWithdrawn, annotations removed,
// a Normal event); an unknown answer withdraws nothing; pods evicted, finished, another
// scheduler's or noticed while the answer was in flight are left alone; a standby writes nothing.

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/leader"
)

// ourPod is a running pod of the env's profile.
func ourPod(ns, name string) *v1.Pod {
	p := runningPod(ns, name, nil)
	p.Spec.SchedulerName = "tidal-scheduler"
	return p
}

// noticed gives pod the notice as notice.go writes it (a notice from before a scheduler restart).
func noticed(pod *v1.Pod, cause string) *v1.Pod {
	pod.Annotations = map[string]string{NoticeAnnotation: "2030-01-02T03:04:05Z", CauseAnnotation: cause, "keep": "me"}
	pod.Status.Conditions = append(pod.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: ReasonDisruptionNotice, Message: cause + ": node-1 drains; evicted at 2030-01-02T03:04:05Z at the latest",
		LastTransitionTime: metav1.NewTime(time.Date(2030, 1, 2, 3, 3, 5, 0, time.UTC))})
	return pod
}

func (e *env) pod(ns, name string) *v1.Pod {
	e.t.Helper()
	pod, err := e.cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return pod
}

// assertWithdrawn: the pod's notice is withdrawn (cause named) and the rest of the pod kept.
func assertWithdrawn(t *testing.T, pod *v1.Pod, cause string) {
	t.Helper()
	if _, ok := pod.Annotations[NoticeAnnotation]; ok {
		t.Errorf("%s: annotation %s kept: %v", pod.Name, NoticeAnnotation, pod.Annotations)
	}
	if _, ok := pod.Annotations[CauseAnnotation]; ok {
		t.Errorf("%s: annotation %s kept: %v", pod.Name, CauseAnnotation, pod.Annotations)
	}
	c := disruptionTarget(pod)
	if c == nil || c.Status != v1.ConditionFalse || c.Reason != ReasonNoticeWithdrawn ||
		c.Message != "the engine called off the disruption (cause "+cause+")" || c.LastTransitionTime.IsZero() {
		t.Errorf("%s: DisruptionTarget = %+v", pod.Name, c)
	}
	if !podReady(pod) {
		t.Errorf("%s: the pod's other conditions were lost: %+v", pod.Name, pod.Status.Conditions)
	}
}

func hasTidalNotice(pod *v1.Pod) bool {
	return pod.Annotations[NoticeAnnotation] != "" && ourNoticeCondition(pod) != nil
}

func TestCalledOffNoticeIsWithdrawnOnce(t *testing.T) {
	ckpt := ourPod("ml", "ckpt-0")
	e := newEnv(t, ckpt)
	ctx := context.Background()
	e.eng.SetDisruptionsFn(answer(&tidalv1.Disruption{Id: "pod:ml/ckpt-0", Cause: "drain", Action: tidalv1.Disruption_NOTICE,
		Pods: refsOf(ckpt), Reason: "node-1 drains", DeadlineUnix: time.Now().Add(time.Minute).Unix()}))
	if got := e.plugin.disruptions.once(ctx); len(got) != 1 {
		t.Fatalf("once = %v, want the notice", got)
	}
	e.waitLister("the lister sees the notice", "ml", "ckpt-0", hasTidalNotice)
	for i := 0; i < 2; i++ { // still answered: nothing is withdrawn
		e.plugin.disruptions.once(ctx)
	}
	if n := statusPatches(e); n != 1 {
		t.Fatalf("%d pods/status patches while the disruption is answered, want 1 (the notice)", n)
	}
	e.events()

	// `tidalctl drain --cancel`: the engine no longer answers the disruption.
	e.eng.SetDisruptionsFn(answer())
	if got := e.plugin.disruptions.once(ctx); len(got) != 1 || got[0] != "ml/ckpt-0" {
		t.Fatalf("once = %v, want the notice withdrawn from ml/ckpt-0", got)
	}
	if n := statusPatches(e); n != 2 {
		t.Fatalf("%d pods/status patches, want 2 (the notice, one withdrawal)", n)
	}
	assertWithdrawn(t, e.pod("ml", "ckpt-0"), "drain")
	evs := e.events()
	if len(evs) != 1 || countWith(evs, "Normal", ReasonNoticeWithdrawn, "the engine called off the disruption (cause drain)") != 1 {
		t.Errorf("events = %q, want one Normal %s", evs, ReasonNoticeWithdrawn)
	}

	// Idempotent: before the lister catches up (it still shows the notice) and after.
	e.plugin.disruptions.once(ctx)
	e.waitLister("the lister sees the withdrawal", "ml", "ckpt-0", func(p *v1.Pod) bool { return !withdrawable(p) })
	for i := 0; i < 3; i++ {
		if got := e.plugin.disruptions.once(ctx); len(got) != 0 {
			t.Fatalf("once = %v after the withdrawal", got)
		}
	}
	if n := statusPatches(e); n != 2 {
		t.Errorf("%d pods/status patches after the repeats, want still 2", n)
	}
	if evs := e.events(); len(evs) != 0 {
		t.Errorf("repeated events: %q", evs)
	}
	if n := len(e.evicted()); n != 0 {
		t.Errorf("%d evictions", n)
	}

	// A new notice later is given as usual, and withdrawn again when called off.
	e.eng.SetDisruptionsFn(answer(&tidalv1.Disruption{Id: "pod:ml/ckpt-0", Cause: "preemption", Action: tidalv1.Disruption_NOTICE,
		Pods: refsOf(ckpt), Reason: "for ml/high-0 (priority)", DeadlineUnix: time.Now().Add(time.Minute).Unix()}))
	e.plugin.disruptions.once(ctx)
	if c := disruptionTarget(e.pod("ml", "ckpt-0")); c == nil || c.Status != v1.ConditionTrue || c.Reason != ReasonDisruptionNotice {
		t.Fatalf("the second notice: DisruptionTarget = %+v", c)
	}
	e.waitLister("the lister sees the second notice", "ml", "ckpt-0", hasTidalNotice)
	e.eng.SetDisruptionsFn(answer())
	if got := e.plugin.disruptions.once(ctx); len(got) != 1 {
		t.Fatalf("once = %v, want the second notice withdrawn", got)
	}
	assertWithdrawn(t, e.pod("ml", "ckpt-0"), "preemption")
}

func TestUnknownAnswerWithdrawsNothing(t *testing.T) {
	a := noticed(ourPod("ml", "a"), "drain")
	e := newEnv(t, a)
	ctx := context.Background()
	for what, fn := range map[string]func(*tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error){
		"an RPC error": func(*tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error) {
			return nil, status.Error(codes.Unavailable, "engine busy")
		},
		"Unimplemented": func(*tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error) {
			return nil, status.Error(codes.Unimplemented, "unknown method Disruptions")
		},
		"an ERROR status": func(*tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error) {
			return &tidalv1.DisruptionsResponse{Status: &tidalv1.Status{Code: tidalv1.Status_ERROR, Reasons: []string{"busy"}}}, nil
		},
	} {
		e.eng.SetDisruptionsFn(fn)
		if got := e.plugin.disruptions.once(ctx); len(got) != 0 {
			t.Errorf("%s: once = %v", what, got)
		}
		if n := statusPatches(e); n != 0 {
			t.Fatalf("%s: %d pods/status patches, want none (unknown is never gone)", what, n)
		}
	}
	if p := e.pod("ml", "a"); !hasTidalNotice(p) {
		t.Errorf("the notice changed: %v %+v", p.Annotations, p.Status.Conditions)
	}
	if evs := e.events(); len(evs) != 0 {
		t.Errorf("events = %q", evs)
	}
	// The engine answers again, without the disruption: now it is withdrawn.
	e.eng.SetDisruptionsFn(answer())
	if got := e.plugin.disruptions.once(ctx); len(got) != 1 || got[0] != "ml/a" {
		t.Fatalf("once = %v, want ml/a withdrawn", got)
	}
	assertWithdrawn(t, e.pod("ml", "a"), "drain")
}

// Only this profile's pods that carry Tidal's notice and still run are withdrawn; a notice from
// before a restart (no record in memory) is found on the pod itself.
func TestWithdrawOnlyOurRunningNoticedPods(t *testing.T) {
	restarted := noticed(ourPod("ml", "restarted"), "preemption")
	other := noticed(runningPod("ml", "other", nil), "drain")
	other.Spec.SchedulerName = "default-scheduler"
	finished := noticed(ourPod("ml", "finished"), "drain") // checkpointed and exited on notice
	finished.Status.Phase = v1.PodSucceeded
	going := noticed(ourPod("ml", "going"), "drain")
	now := metav1.Now()
	going.DeletionTimestamp = &now
	withdrawn := ourPod("ml", "withdrawn")
	withdrawn.Status.Conditions = append(withdrawn.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget,
		Status: v1.ConditionFalse, Reason: ReasonNoticeWithdrawn, Message: "the engine called off the disruption (cause drain)"})
	evicting := ourPod("ml", "evicting") // another writer's DisruptionTarget (the Eviction API's)
	evicting.Status.Conditions = append(evicting.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget,
		Status: v1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
	plain := ourPod("ml", "plain")
	still := noticed(ourPod("ml", "still"), "drain") // its disruption is still answered
	e := newEnv(t, restarted, other, finished, going, withdrawn, evicting, plain, still)
	ctx := context.Background()
	e.eng.SetDisruptionsFn(answer(&tidalv1.Disruption{Id: "pod:ml/still", Cause: "drain", Action: tidalv1.Disruption_NOTICE,
		Pods: refsOf(still), Reason: "node-1 drains", DeadlineUnix: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).Unix()}))
	got := e.plugin.disruptions.once(ctx)
	if len(got) != 1 || got[0] != "ml/restarted" {
		t.Fatalf("once = %v, want only ml/restarted withdrawn", got)
	}
	if n := statusPatches(e); n != 1 {
		t.Errorf("%d pods/status patches, want 1", n)
	}
	assertWithdrawn(t, e.pod("ml", "restarted"), "preemption")
	if a := e.pod("ml", "restarted").Annotations; a["keep"] != "me" {
		t.Errorf("the pod's other annotations were lost: %v", a)
	}
	for _, name := range []string{"other", "finished", "going", "still"} {
		if !hasTidalNotice(e.pod("ml", name)) {
			t.Errorf("%s lost its notice", name)
		}
	}
	if c := disruptionTarget(e.pod("ml", "evicting")); c == nil || c.Reason != "EvictionByEvictionAPI" {
		t.Errorf("another writer's condition changed: %+v", c)
	}
}

// A pod whose disruption reached EVICT and was evicted keeps its notice: it is terminating.
func TestEvictedPodIsNotWithdrawn(t *testing.T) {
	ckpt := ourPod("ml", "ckpt-0")
	e := newEnv(t, ckpt)
	ctx := context.Background()
	d := &tidalv1.Disruption{Id: "pod:ml/ckpt-0", Cause: "preemption", Action: tidalv1.Disruption_NOTICE,
		Pods: refsOf(ckpt), Reason: "for ml/high-0 (priority)", DeadlineUnix: time.Now().Add(time.Minute).Unix()}
	e.eng.SetDisruptionsFn(answer(d))
	e.plugin.disruptions.once(ctx)
	e.waitLister("the lister sees the notice", "ml", "ckpt-0", hasTidalNotice)
	e.eng.SetDisruptionsFn(answer(&tidalv1.Disruption{Id: d.Id, Cause: d.Cause, Action: tidalv1.Disruption_EVICT, Pods: d.Pods,
		Reason: d.Reason}))
	if got := e.plugin.disruptions.once(ctx); len(got) != 1 || len(e.evicted()) != 1 {
		t.Fatalf("once = %v, evictions %v; want ml/ckpt-0 evicted", got, e.evicted())
	}
	// The API server marks it terminating; the engine then stops answering (say, after a restart).
	p := e.pod("ml", "ckpt-0")
	now := metav1.Now()
	p.DeletionTimestamp = &now
	if _, err := e.cs.CoreV1().Pods("ml").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitLister("the lister sees ckpt-0 terminating", "ml", "ckpt-0", func(p *v1.Pod) bool { return p.DeletionTimestamp != nil })
	e.eng.SetDisruptionsFn(answer())
	before := statusPatches(e)
	for i := 0; i < 3; i++ {
		if got := e.plugin.disruptions.once(ctx); len(got) != 0 {
			t.Fatalf("once = %v for an evicted pod", got)
		}
	}
	if n := statusPatches(e); n != before {
		t.Errorf("%d pods/status patches of an evicted pod", n-before)
	}
	if !hasTidalNotice(e.pod("ml", "ckpt-0")) {
		t.Errorf("the evicted pod's notice was withdrawn")
	}
}

// PostFilter gives notice right after the engine's Preempt answer, maybe while a poll is in
// flight whose answer predates the disruption: that poll must not withdraw it.
func TestNoticeWrittenDuringThePollIsKept(t *testing.T) {
	v := ourPod("batch", "v-0")
	e := newEnv(t, v)
	ctx := context.Background()
	e.eng.SetDisruptionsFn(func(*tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error) {
		// The answer is made; then PostFilter gives notice, before the shim reads the answer.
		e.plugin.notice(ctx, refsOf(v), "preemption", "for ml/high-0 (priority)", time.Now().Add(time.Minute))
		e.waitLister("the lister sees the notice", "batch", "v-0", hasTidalNotice)
		return &tidalv1.DisruptionsResponse{Status: &tidalv1.Status{}}, nil
	})
	if got := e.plugin.disruptions.once(ctx); len(got) != 0 {
		t.Fatalf("once = %v, want the notice written meanwhile kept", got)
	}
	if !hasTidalNotice(e.pod("batch", "v-0")) {
		t.Fatal("the notice written during the poll was withdrawn")
	}
	// The next answer is asked after the notice: it does not name it, so it was called off.
	e.eng.SetDisruptionsFn(answer())
	if got := e.plugin.disruptions.once(ctx); len(got) != 1 || got[0] != "batch/v-0" {
		t.Fatalf("once = %v, want batch/v-0 withdrawn", got)
	}
	assertWithdrawn(t, e.pod("batch", "v-0"), "preemption")
}

func TestStandbyWithdrawsNothingUntilItLeads(t *testing.T) {
	elect, restore := leader.StandbyForTest()
	defer restore()
	e := newEnv(t, []runtime.Object{noticed(ourPod("ml", "a"), "drain")}...)
	e.eng.SetDisruptionsFn(answer())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.plugin.disruptions.run(ctx, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // ~15 rounds
	if n := statusPatches(e); n != 0 {
		t.Fatalf("standby wrote %d pods/status patches", n)
	}
	if evs := e.events(); len(evs) != 0 {
		t.Errorf("standby wrote events: %q", evs)
	}
	if e.plugin.disruptions.withdraw(ctx, &tidalv1.DisruptionsResponse{Status: &tidalv1.Status{}}, time.Now()) != nil {
		t.Errorf("withdraw wrote on a standby")
	}
	elect()
	e.eng.WaitFor(t, "the leader withdraws the notice", 3*time.Second, func() bool { return statusPatches(e) >= 1 })
	cancel()
	assertWithdrawn(t, e.pod("ml", "a"), "drain")
}
