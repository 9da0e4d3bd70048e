package tidal

// The disruption path (disruptions.go, notice.go): NOTICE patches the condition and annotations
// once; EVICT is whole or nothing under PodDisruptionBudgets and skips pods gone, replaced or
// already terminating; PostFilter gives notice to a victim gang that checkpoints on notice instead
// of evicting it; an engine without Disruptions gets runtime limits through Overdue.

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

func answer(ds ...*tidalv1.Disruption) func(*tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error) {
	return func(*tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error) {
		return &tidalv1.DisruptionsResponse{Status: &tidalv1.Status{}, Disruptions: ds}, nil
	}
}

func refsOf(pods ...*v1.Pod) []*tidalv1.PodRef {
	var out []*tidalv1.PodRef
	for _, p := range pods {
		out = append(out, refOf(p))
	}
	return out
}

// evicted returns the names of the pods evicted so far, in order.
func (e *env) evicted() []string {
	var out []string
	for _, a := range e.cs.Actions() {
		if c, ok := a.(clienttesting.CreateAction); ok && a.GetSubresource() == "eviction" {
			out = append(out, c.GetObject().(*policyv1.Eviction).Name)
		}
	}
	return out
}

// waitLister waits until the plugin's pod lister sees ns/name satisfy cond.
func (e *env) waitLister(what, ns, name string, cond func(*v1.Pod) bool) {
	e.t.Helper()
	e.eng.WaitFor(e.t, what, 3*time.Second, func() bool {
		pod, err := e.plugin.pods.Pods(ns).Get(name)
		return err == nil && cond(pod)
	})
}

func hasCall(e *env, call string) bool {
	for _, c := range e.eng.Calls() {
		if c == call {
			return true
		}
	}
	return false
}

func countWith(lines []string, subs ...string) int {
	n := 0
next:
	for _, l := range lines {
		for _, s := range subs {
			if !strings.Contains(l, s) {
				continue next
			}
		}
		n++
	}
	return n
}

func TestNoticeSetsConditionAndAnnotationsOnce(t *testing.T) {
	ckpt := runningPod("ml", "ckpt-0", nil)
	e := newEnv(t, ckpt)
	ctx := context.Background()
	deadline := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	notice := &tidalv1.Disruption{Id: "pod:ml/ckpt-0", Cause: "preemption", Action: tidalv1.Disruption_NOTICE,
		Pods: refsOf(ckpt), Reason: "for ml/high-0 (priority)", DeadlineUnix: deadline.Unix()}
	e.eng.SetDisruptionsFn(answer(notice))
	if got := e.plugin.disruptions.once(ctx); len(got) != 1 || got[0] != "ml/ckpt-0" {
		t.Fatalf("once = %v, want the notice to ml/ckpt-0", got)
	}
	if n := statusPatches(e); n != 1 {
		t.Fatalf("%d pods/status patches, want 1 (condition and annotations in one)", n)
	}
	pod, err := e.cs.CoreV1().Pods("ml").Get(ctx, "ckpt-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := pod.Annotations; a[NoticeAnnotation] != "2030-01-02T03:04:05Z" || a[CauseAnnotation] != "preemption" {
		t.Errorf("annotations %v", a)
	}
	c := disruptionTarget(pod)
	if c == nil || c.Status != v1.ConditionTrue || c.Reason != ReasonDisruptionNotice || c.LastTransitionTime.IsZero() ||
		c.Message != "preemption: for ml/high-0 (priority); evicted at 2030-01-02T03:04:05Z at the latest" {
		t.Fatalf("DisruptionTarget = %+v", c)
	}
	if !podReady(pod) {
		t.Errorf("the pod's other conditions were lost: %+v", pod.Status.Conditions)
	}
	if evs := e.events(); countWith(evs, "Warning", ReasonDisruptionNotice, "evicted at 2030-01-02T03:04:05Z") != 1 {
		t.Errorf("events = %q, want one notice", evs)
	}

	// The action repeats at every poll: the pod carries the notice, nothing is written again.
	e.waitLister("the lister sees the notice", "ml", "ckpt-0", func(p *v1.Pod) bool { return p.Annotations[NoticeAnnotation] != "" })
	for i := 0; i < 3; i++ {
		e.plugin.disruptions.once(ctx)
	}
	if n := statusPatches(e); n != 1 {
		t.Errorf("%d patches after the repeats, want still 1", n)
	}
	if evs := e.events(); len(evs) != 0 {
		t.Errorf("repeated events: %q", evs)
	}
	if n := len(e.evicted()); n != 0 {
		t.Errorf("a NOTICE evicted %d pods", n)
	}

	// A new deadline is a new notice: patched again, the condition's transition time kept.
	notice.DeadlineUnix = deadline.Add(time.Minute).Unix()
	e.plugin.disruptions.once(ctx)
	pod, _ = e.cs.CoreV1().Pods("ml").Get(ctx, "ckpt-0", metav1.GetOptions{})
	if pod.Annotations[NoticeAnnotation] != "2030-01-02T03:05:05Z" || statusPatches(e) != 2 {
		t.Errorf("new deadline: annotation %q after %d patches", pod.Annotations[NoticeAnnotation], statusPatches(e))
	}
	if c2 := disruptionTarget(pod); c2 == nil || !c2.LastTransitionTime.Equal(&c.LastTransitionTime) {
		t.Errorf("the condition's lastTransitionTime moved: %+v -> %+v", c, c2)
	}
}

func TestEvictActionIsWholeOrNothing(t *testing.T) {
	a := gangPods("batch", "a", 2)
	budget := pdb("batch", "keep-a", gangSel("a"), 1) // one of a's two pods: a is not evicted at all
	e := newEnv(t, a[0], a[1], budget)
	ctx := context.Background()
	e.eng.SetDisruptionsFn(answer(&tidalv1.Disruption{Id: "batch/a", Cause: "member-lost", Action: tidalv1.Disruption_EVICT,
		Pods: refsOf(a...), Reason: "member batch/a-2 failed"}))
	for i := 0; i < 3; i++ {
		if got := e.plugin.disruptions.once(ctx); len(got) != 0 {
			t.Fatalf("evicted %v under a PDB that allows 1 of 2", got)
		}
	}
	if ev := e.evicted(); len(ev) != 0 {
		t.Fatalf("evictions %v, want none", ev)
	}
	evs := e.events()
	if countWith(evs, ReasonDisruptionBlocked, "keep-a allows 1 disruption(s)") != 2 {
		t.Errorf("events = %q, want one TidalDisruptionBlocked per pod (not per poll)", evs)
	}
	if !hasCall(e, "Evicted / pods= protected=batch/a disruption=batch/a reason=member-lost") {
		t.Errorf("no protected report; calls %v", e.eng.Calls())
	}

	// The budget allows both now: both go, each with an event, reported once as evicted.
	budget.Status.DisruptionsAllowed = 2
	if _, err := e.cs.PolicyV1().PodDisruptionBudgets("batch").UpdateStatus(ctx, budget, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := e.plugin.disruptions.once(ctx); len(got) != 2 {
		t.Fatalf("once = %v, want both pods", got)
	}
	if ev := e.evicted(); len(ev) != 2 || ev[0] != "a-0" || ev[1] != "a-1" {
		t.Errorf("evictions %v", ev)
	}
	if evs := e.events(); countWith(evs, "Warning", ReasonDisrupted, "evicted by tidal-scheduler: member-lost: member batch/a-2 failed") != 2 {
		t.Errorf("events = %q", evs)
	}
	if !hasCall(e, "Evicted / pods=batch/a-0,batch/a-1 protected= disruption=batch/a reason=member-lost") {
		t.Errorf("no eviction report; calls %v", e.eng.Calls())
	}
}

func TestEvictSkipsPodsGoneReplacedOrTerminating(t *testing.T) {
	live, replaced, going := runningPod("ml", "live", nil), runningPod("ml", "replaced", nil), runningPod("ml", "going", nil)
	now := metav1.Now()
	going.DeletionTimestamp = &now
	e := newEnv(t, live, replaced, going)
	ctx := context.Background()
	stale := refOf(replaced)
	stale.Uid = "the-old-uid"
	e.eng.SetDisruptionsFn(answer(&tidalv1.Disruption{Id: "pod:ml/x", Cause: "drain", Action: tidalv1.Disruption_EVICT,
		Pods: []*tidalv1.PodRef{refOf(live), stale, refOf(going), {Uid: "gone", Namespace: "ml", Name: "gone"}}, Reason: "node-1 drains"}))
	if got := e.plugin.disruptions.once(ctx); len(got) != 1 || got[0] != "ml/live" {
		t.Fatalf("once = %v, want only ml/live", got)
	}
	// The API server marks the evicted pod terminating; the action repeats until it is gone.
	p, _ := e.cs.CoreV1().Pods("ml").Get(ctx, "live", metav1.GetOptions{})
	p.DeletionTimestamp = &now
	if _, err := e.cs.CoreV1().Pods("ml").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitLister("the lister sees live terminating", "ml", "live", func(p *v1.Pod) bool { return p.DeletionTimestamp != nil })
	e.events()
	before := len(e.eng.Calls())
	for i := 0; i < 3; i++ {
		if got := e.plugin.disruptions.once(ctx); len(got) != 0 {
			t.Fatalf("evicted %v again", got)
		}
	}
	if ev := e.evicted(); len(ev) != 1 {
		t.Errorf("evictions %v, want only the first", ev)
	}
	if evs := e.events(); len(evs) != 0 {
		t.Errorf("events on repeat: %q", evs)
	}
	for _, c := range e.eng.Calls()[before:] {
		if strings.HasPrefix(c, "Evicted") {
			t.Errorf("reported again: %s", c)
		}
	}
}

func TestPostFilterGivesNoticeInsteadOfEvicting(t *testing.T) {
	var objs []runtime.Object
	a, b := gangPods("batch", "a", 2), gangPods("batch", "b", 2)
	for _, p := range append(append([]*v1.Pod{}, a...), b...) {
		objs = append(objs, p)
	}
	e := newEnv(t, objs...)
	deadline := time.Now().Add(time.Minute).Truncate(time.Second)
	e.eng.PreemptFn = func(*tidalv1.PodRef) *tidalv1.PreemptResponse {
		return &tidalv1.PreemptResponse{Status: &tidalv1.Status{}, Victims: refsOf(append(append([]*v1.Pod{}, a...), b...)...),
			Reason: "priority", NominatedNode: "node-a-0", VictimGangs: []*tidalv1.VictimGang{
				{Id: "batch/a", Pods: refsOf(a...), NoticeSeconds: 60, DeadlineUnix: deadline.Unix()},
				{Id: "batch/b", Pods: refsOf(b...)}}}
	}
	res, st := e.plugin.PostFilter(context.Background(), framework.NewCycleState(), gpuPod("ml", "high-0", nil), nil)
	if !st.IsSuccess() || res == nil || res.NominatingInfo == nil {
		t.Fatalf("PostFilter = %+v, %v; want Success with the nominating info", res, st)
	}
	if ev := e.evicted(); len(ev) != 2 || ev[0] != "b-0" || ev[1] != "b-1" {
		t.Errorf("evictions %v, want b's two pods only (a checkpoints on notice)", ev)
	}
	for _, p := range a {
		got, _ := e.cs.CoreV1().Pods("batch").Get(context.Background(), p.Name, metav1.GetOptions{})
		if got.Annotations[NoticeAnnotation] != deadline.UTC().Format(time.RFC3339) || disruptionTarget(got) == nil {
			t.Errorf("%s has no notice: %v %+v", p.Name, got.Annotations, got.Status.Conditions)
		}
	}
	if !hasCall(e, "Evicted ml/high-0 pods=batch/b-0,batch/b-1 protected=") {
		t.Errorf("want the evicted report for b only; calls %v", e.eng.Calls())
	}
	evs := e.events()
	if countWith(evs, ReasonDisruptionNotice, "preemption: for ml/high-0 (priority)") != 2 ||
		countWith(evs, ReasonPreempting, "batch/a got notice to checkpoint first") != 1 {
		t.Errorf("events = %q", evs)
	}

	// The whole-gang PDB check comes first for a gang on notice too: protected, no notice.
	c := gangPods("batch", "c", 2)
	e2 := newEnv(t, c[0], c[1], pdb("batch", "keep-c", gangSel("c"), 1))
	asked := 0
	e2.eng.PreemptFn = func(*tidalv1.PodRef) *tidalv1.PreemptResponse {
		asked++
		if asked > 1 {
			return &tidalv1.PreemptResponse{Status: &tidalv1.Status{Code: tidalv1.Status_UNSCHEDULABLE}}
		}
		return &tidalv1.PreemptResponse{Status: &tidalv1.Status{}, Victims: refsOf(c...), Reason: "priority",
			VictimGangs: []*tidalv1.VictimGang{{Id: "batch/c", Pods: refsOf(c...), NoticeSeconds: 60, DeadlineUnix: deadline.Unix()}}}
	}
	if _, st := e2.plugin.PostFilter(context.Background(), framework.NewCycleState(), gpuPod("ml", "high-0", nil), nil); st.IsSuccess() {
		t.Errorf("PostFilter with only a protected gang = %v", st)
	}
	if n := statusPatches(e2); n != 0 || len(e2.evicted()) != 0 {
		t.Errorf("a PDB-protected gang got %d notices, %d evictions", n, len(e2.evicted()))
	}
}

func TestDisruptionsUnimplementedFallsBackToOverdue(t *testing.T) {
	over := gpuPod("ml", "over", nil)
	over.Spec.NodeName = "node-1"
	e := newEnv(t, over)
	ctx := context.Background()
	e.eng.SetDisruptionsFn(func(*tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error) {
		return nil, status.Error(codes.Unimplemented, "unknown method Disruptions")
	})
	e.eng.OverdueFn = func() *tidalv1.OverdueResponse {
		return &tidalv1.OverdueResponse{Status: &tidalv1.Status{}, Pods: []*tidalv1.OverduePod{
			{Pod: refOf(over), Reason: "ran 11m, over its tidal.dev/runtime-limit of 10m (grace 1m)"}}}
	}
	if got := e.plugin.disruptions.once(ctx); len(got) != 1 || got[0] != "ml/over" {
		t.Fatalf("once = %v, want the overdue pod evicted", got)
	}
	e.plugin.disruptions.once(ctx) // within overdueIntervalMs (10 s): Overdue is not asked again
	overdue := 0
	for _, c := range e.eng.Calls() {
		if c == "Overdue" {
			overdue++
		}
	}
	if overdue != 1 {
		t.Errorf("Overdue asked %d times, want 1; calls %v", overdue, e.eng.Calls())
	}
	if evs := strings.Join(e.events(), "\n"); !strings.Contains(evs, ReasonRuntimeLimit) {
		t.Errorf("events = %s", evs)
	}

	// The engine is upgraded: Disruptions answers, Overdue is no longer asked.
	e.eng.SetDisruptionsFn(answer(&tidalv1.Disruption{Id: "pod:ml/over", Cause: "runtime-limit", Action: tidalv1.Disruption_EVICT,
		Pods: refsOf(over), Reason: "ran 12m, over its tidal.dev/runtime-limit of 10m (grace 1m)"}))
	if got := e.plugin.disruptions.once(ctx); len(got) != 1 {
		t.Fatalf("once = %v after the upgrade", got)
	}
	if evs := e.events(); countWith(evs, ReasonRuntimeLimit, "evicted by tidal-scheduler: runtime-limit: ran 12m") != 1 {
		t.Errorf("events = %q, want the runtime-limit reason kept", evs)
	}
	if c := e.eng.Calls(); c[len(c)-1] != "Evicted / pods=ml/over protected= disruption=pod:ml/over reason=runtime-limit" {
		t.Errorf("last call %q", c[len(c)-1])
	}
}
