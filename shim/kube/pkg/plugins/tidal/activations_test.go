package tidal

// Tests of the cross-door activation poll (activations.go) and of the door-lease holder.

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/engineclient"
	"github.com/tidal-sched/tidal/shim/kube/pkg/enginetest"
)

// createPods creates pods after the env's resync (which activates every pending pod of the
// profile by itself) and waits until the plugin's lister has them.
func (e *env) createPods(pods ...*v1.Pod) {
	e.t.Helper()
	for _, p := range pods {
		if _, err := e.cs.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
	e.eng.WaitFor(e.t, "the lister has the pods", 3*time.Second, func() bool {
		for _, p := range pods {
			if _, err := e.plugin.pods.Pods(p.Namespace).Get(p.Name); err != nil {
				return false
			}
		}
		return true
	})
}

// takeOnce answers TakeActivations with refs on the first call only (the engine returns each pod
// once), failing the first `fail` calls before that with UNAVAILABLE.
type takeOnce struct {
	mu    sync.Mutex
	refs  []*tidalv1.PodRef
	fail  int
	calls int
	doors []tidalv1.FrontDoor
}

func (o *takeOnce) fn(r *tidalv1.TakeActivationsRequest) (*tidalv1.TakeActivationsResponse, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	o.doors = append(o.doors, r.GetDoor())
	if o.fail > 0 {
		o.fail--
		return nil, status.Error(codes.Unavailable, "engine busy")
	}
	refs := o.refs
	o.refs = nil
	return &tidalv1.TakeActivationsResponse{Pods: refs}, nil
}

func refOf(p *v1.Pod) *tidalv1.PodRef {
	return &tidalv1.PodRef{Uid: string(p.UID), Namespace: p.Namespace, Name: p.Name}
}

// The poll moves this profile's pending pods that the engine names to the active queue, and skips
// the rest silently: unknown, replaced (other UID), bound, another scheduler's.
func TestActivationsFromAnotherDoorAreActivated(t *testing.T) {
	e := newEnv(t)
	a0, a1 := gpuPod("ml", "a-0", nil), gpuPod("ml", "a-1", nil)
	bound := gpuPod("ml", "bound", nil)
	bound.Spec.NodeName = "node-1"
	theirs := gpuPod("ml", "theirs", nil)
	theirs.Spec.SchedulerName = "default-scheduler"
	e.createPods(a0, a1, bound, theirs)
	// a-1 was refused earlier: the activation forgets that refusal (it is in the queue again).
	e.plugin.mu.Lock()
	e.plugin.rejected[a1.UID] = rejection{pod: a1}
	e.plugin.mu.Unlock()

	o := &takeOnce{refs: []*tidalv1.PodRef{refOf(a0), refOf(a1), refOf(bound), refOf(theirs),
		{Uid: "stale", Namespace: "ml", Name: "a-0"}, {Uid: "u", Namespace: "ml", Name: "unknown"}}}
	e.eng.SetTakeActivationsFn(o.fn)
	e.eng.WaitFor(t, "a-0 and a-1 activated", 3*time.Second, func() bool { return e.act.has("ml/a-0") && e.act.has("ml/a-1") })
	time.Sleep(250 * time.Millisecond) // more ticks: nothing else is activated
	for _, k := range []string{"ml/bound", "ml/theirs", "ml/unknown"} {
		if e.act.has(k) {
			t.Errorf("%s was activated", k)
		}
	}
	e.plugin.mu.Lock()
	_, stillRejected := e.plugin.rejected[a1.UID]
	e.plugin.mu.Unlock()
	if stillRejected {
		t.Error("a-1 is still recorded as refused after its activation")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.calls < 2 {
		t.Errorf("TakeActivations called %d times, want a poll every activationIntervalMs", o.calls)
	}
	for _, d := range o.doors {
		if d != tidalv1.FrontDoor_KUBERNETES {
			t.Errorf("TakeActivations asked for door %v, want KUBERNETES", d)
		}
	}
}

// One poll's answer, directly: the pods it activates.
func TestActivationPollOnceReturnsWhatItActivated(t *testing.T) {
	e := newEnv(t)
	a0 := gpuPod("ml", "solo", nil)
	e.createPods(a0)
	v, ok := activationPollers.Load(e.plugin.client)
	if !ok {
		t.Fatal("no activation poller for the plugin's engine client")
	}
	ap := v.(*activationPoller)
	ap.mu.Lock()
	n := len(ap.plugins)
	ap.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d instances registered with the poller, want 1", n)
	}
	// The engine returns each pod once; whichever call takes it (this one or a tick) activates it.
	var mu sync.Mutex
	given := false
	e.eng.SetTakeActivationsFn(func(*tidalv1.TakeActivationsRequest) (*tidalv1.TakeActivationsResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		if given {
			return &tidalv1.TakeActivationsResponse{}, nil
		}
		given = true
		return &tidalv1.TakeActivationsResponse{Pods: []*tidalv1.PodRef{refOf(a0), {Uid: "x", Namespace: "ml", Name: "gone"}}}, nil
	})
	got := ap.once(context.Background())
	sort.Strings(got)
	if len(got) > 0 && strings.Join(got, ",") != "ml/solo" {
		t.Errorf("once() = %v, want [ml/solo] (or nothing if a tick took it first)", got)
	}
	e.eng.WaitFor(t, "solo activated", 3*time.Second, func() bool { return e.act.has("ml/solo") })
}

// A failed call is retried on the next tick; the pods it would have returned are activated then.
func TestActivationPollRetriesAfterAFailedCall(t *testing.T) {
	e := newEnv(t)
	p := gpuPod("ml", "later", nil)
	e.createPods(p)
	o := &takeOnce{refs: []*tidalv1.PodRef{refOf(p)}, fail: 2}
	e.eng.SetTakeActivationsFn(o.fn)
	e.eng.WaitFor(t, "activated after two failed calls", 3*time.Second, func() bool { return e.act.has("ml/later") })
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.calls < 3 {
		t.Errorf("%d calls, want the two failures and a retry", o.calls)
	}
}

// A client that is not synced (e.g. another holder has the door) never takes activations: they are
// the holder's.
func TestActivationPollWaitsForSync(t *testing.T) {
	eng := enginetest.Start(t, enginetest.Socket(t), "e")
	c, err := engineclient.New(engineclient.Config{Address: eng.Addr}, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 350*time.Millisecond)
	defer cancel()
	(&activationPoller{client: c, logger: klog.Background()}).run(ctx, 100*time.Millisecond)
	for _, call := range eng.Calls() {
		if strings.HasPrefix(call, "TakeActivations") {
			t.Fatalf("an unsynced client took activations: %v", eng.Calls())
		}
	}
}

// The KUBERNETES door is claimed as PROFILE@HOSTNAME by default (the env's profile is
// tidal-scheduler), and the holder arg overrides it.
func TestDoorHolder(t *testing.T) {
	e := newEnv(t)
	want := engineclient.DefaultHolder("tidal-scheduler")
	if got := e.plugin.client.Holder(); got != want {
		t.Errorf("client holder = %q, want %q", got, want)
	}
	if got := e.eng.Holder(tidalv1.FrontDoor_KUBERNETES); got != want {
		t.Errorf("the engine's KUBERNETES holder = %q, want %q", got, want)
	}
	if m := e.eng.SyncMessages(); len(m) == 0 || m[0].LeaseTtlMs != 15000 || m[0].Door != tidalv1.FrontDoor_KUBERNETES {
		t.Errorf("first Sync message = %v, want door KUBERNETES and lease_ttl_ms 15000", m)
	}
	a, err := DecodeArgs(&runtime.Unknown{Raw: []byte(`{"holder": "sched-a@rack-1", "leaseTtlMs": 5000, "activationIntervalMs": 250}`)})
	if err != nil || a.ActivationIntervalMs != 250 {
		t.Fatalf("DecodeArgs = %+v, %v", a, err)
	}
	if c := a.clientConfig("tidal-scheduler"); c.Holder != "sched-a@rack-1" || c.LeaseTTL != 5*time.Second {
		t.Errorf("clientConfig = %+v", c)
	}
}

// Another scheduler holds the engine's KUBERNETES door: pods stay pending with a message naming
// the holder, no activations are taken (they are the holder's); once the door is free the plugin
// syncs and polls.
func TestDoorHeldByAnotherScheduler(t *testing.T) {
	e := newEnvHeldBy(t, "tidal-scheduler@replica-b")
	pod := gpuPod("ml", "waiting", nil)
	e.createPods(pod)
	_, st := e.plugin.PreFilter(context.Background(), framework.NewCycleState(), pod, nil)
	if st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "held by tidal-scheduler@replica-b") ||
		!strings.Contains(st.Message(), "serves another scheduler") || !strings.Contains(st.Message(), e.plugin.client.Holder()) {
		t.Fatalf("PreFilter = %v, want Unschedulable naming the door's holder and this scheduler", st)
	}
	if evs := strings.Join(e.events(), "\n"); !strings.Contains(evs, ReasonEngineUnreachable) || !strings.Contains(evs, "replica-b") {
		t.Errorf("events = %s", evs)
	}
	time.Sleep(300 * time.Millisecond) // three poll intervals
	for _, c := range e.eng.Calls() {
		if strings.HasPrefix(c, "TakeActivations") {
			t.Fatalf("a scheduler without the door took activations: %v", e.eng.Calls())
		}
	}
	if len(e.eng.SyncMessages()) != 0 {
		t.Fatalf("the engine applied Sync messages of a refused stream")
	}

	e.eng.Release(tidalv1.FrontDoor_KUBERNETES)
	if err := e.plugin.client.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("no sync once the door was free: %v", err)
	}
	e.eng.WaitFor(t, "the resync activates the pending pod", 3*time.Second, func() bool { return e.act.has("ml/waiting") })
	e.eng.WaitFor(t, "activation polls", 3*time.Second, func() bool {
		for _, c := range e.eng.Calls() {
			if c == "TakeActivations KUBERNETES" {
				return true
			}
		}
		return false
	})
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
