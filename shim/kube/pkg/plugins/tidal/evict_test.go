package tidal

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	policyv1client "k8s.io/client-go/kubernetes/typed/policy/v1"
	clienttesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

// slowAPI makes every Eviction and pod Patch take `delay` (outside the fake clientset's lock,
// which serializes its reactors) and records the calls as "start NAME" / "end NAME" and how many
// were in flight at once: what one API round trip does to a loop that waits for each.
type slowAPI struct {
	*fake.Clientset
	delay time.Duration

	mu        sync.Mutex
	now, most int
	log       []string
}

func slow(delay time.Duration) (*slowAPI, func(*fake.Clientset) kubernetes.Interface) {
	s := &slowAPI{delay: delay}
	return s, func(cs *fake.Clientset) kubernetes.Interface { s.Clientset = cs; return s }
}

func (s *slowAPI) call(name string, fn func() error) error {
	s.mu.Lock()
	s.now++
	s.most = max(s.most, s.now)
	s.log = append(s.log, "start "+name)
	s.mu.Unlock()
	time.Sleep(s.delay)
	err := fn()
	s.mu.Lock()
	s.now--
	s.log = append(s.log, "end "+name)
	s.mu.Unlock()
	return err
}

// maxInFlight and calls read what the calls so far recorded.
func (s *slowAPI) maxInFlight() int { s.mu.Lock(); defer s.mu.Unlock(); return s.most }
func (s *slowAPI) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func (s *slowAPI) PolicyV1() policyv1client.PolicyV1Interface {
	return slowPolicy{s.Clientset.PolicyV1(), s}
}
func (s *slowAPI) CoreV1() corev1client.CoreV1Interface { return slowCore{s.Clientset.CoreV1(), s} }

type slowPolicy struct {
	policyv1client.PolicyV1Interface
	s *slowAPI
}

func (p slowPolicy) Evictions(ns string) policyv1client.EvictionInterface {
	return slowEvictions{p.PolicyV1Interface.Evictions(ns), p.s}
}

type slowEvictions struct {
	policyv1client.EvictionInterface
	s *slowAPI
}

func (e slowEvictions) Evict(ctx context.Context, ev *policyv1.Eviction) error {
	return e.s.call(ev.Name, func() error { return e.EvictionInterface.Evict(ctx, ev) })
}

type slowCore struct {
	corev1client.CoreV1Interface
	s *slowAPI
}

func (c slowCore) Pods(ns string) corev1client.PodInterface {
	return slowPods{c.CoreV1Interface.Pods(ns), c.s}
}

type slowPods struct {
	corev1client.PodInterface
	s *slowAPI
}

func (p slowPods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*v1.Pod, error) {
	var out *v1.Pod
	err := p.s.call(name, func() (err error) { out, err = p.PodInterface.Patch(ctx, name, pt, data, opts, sub...); return err })
	return out, err
}

// bigGang is n running pods of gang g (names g-00, g-01, ...).
func bigGang(ns, g string, n int) ([]*v1.Pod, []runtime.Object) {
	var pods []*v1.Pod
	var objs []runtime.Object
	for i := 0; i < n; i++ {
		p := runningPod(ns, fmt.Sprintf("%s-%02d", g, i), map[string]string{"tidal.dev/gang": g})
		pods, objs = append(pods, p), append(objs, p)
	}
	return pods, objs
}

func victimsAre(ns, g string, pods []*v1.Pod, notice int64) func(*tidalv1.PodRef) *tidalv1.PreemptResponse {
	return func(*tidalv1.PodRef) *tidalv1.PreemptResponse {
		vg := &tidalv1.VictimGang{Id: ns + "/" + g, Pods: refsOf(pods...), NoticeSeconds: notice}
		if notice > 0 {
			vg.DeadlineUnix = time.Now().Add(time.Minute).Unix()
		}
		return &tidalv1.PreemptResponse{Status: &tidalv1.Status{}, Victims: refsOf(pods...), Reason: "priority", VictimGangs: []*tidalv1.VictimGang{vg}}
	}
}

// A 32-pod victim gang: one Eviction after another held the scheduling cycle for 32 round trips.
// Its first eviction goes alone (a refusal leaves the gang whole), the rest side by side; every
// pod is evicted and reported.
func TestPostFilterEvictsAGangsPodsSideBySideAfterTheFirst(t *testing.T) {
	pods, objs := bigGang("batch", "a", 32)
	api, wrap := slow(20 * time.Millisecond)
	e := newEnvWrapped(t, "", wrap, objs...)
	e.eng.PreemptFn = victimsAre("batch", "a", pods, 0)
	if _, st := e.plugin.PostFilter(context.Background(), framework.NewCycleState(), gpuPod("ml", "w-0", nil), nil); !st.IsSuccess() {
		t.Fatalf("PostFilter = %v", st)
	}
	if ev := e.evicted(); len(ev) != 32 {
		t.Fatalf("%d evictions, want 32", len(ev))
	}
	if n := api.maxInFlight(); n < 2 || n > podWorkers {
		t.Errorf("at most %d evictions in flight, want 2..%d", n, podWorkers)
	}
	if c := api.calls(); len(c) < 2 || c[0] != "start a-00" || c[1] != "end a-00" {
		t.Errorf("the first eviction did not go alone: %v", c[:min(4, len(c))])
	}
	if n := strings.Count(strings.Join(e.eng.Calls(), "\n"), "batch/a-"); n != 32 {
		t.Errorf("the Evicted report names %d pods, want 32; calls %v", n, e.eng.Calls())
	}
}

// The notices of a 16-pod gang that checkpoints on notice go side by side too.
func TestPostFilterGivesAGangNoticeSideBySide(t *testing.T) {
	pods, objs := bigGang("batch", "a", 16)
	api, wrap := slow(20 * time.Millisecond)
	e := newEnvWrapped(t, "", wrap, objs...)
	e.eng.PreemptFn = victimsAre("batch", "a", pods, 60)
	if _, st := e.plugin.PostFilter(context.Background(), framework.NewCycleState(), gpuPod("ml", "w-0", nil), nil); !st.IsSuccess() {
		t.Fatalf("PostFilter = %v", st)
	}
	if n := statusPatches(e); n != 16 || len(e.evicted()) != 0 {
		t.Errorf("%d notices and %d evictions, want 16 and 0", n, len(e.evicted()))
	}
	if n := api.maxInFlight(); n < 2 {
		t.Errorf("at most %d notice patches in flight, want several", n)
	}
}

// refuseFirstEviction makes the Eviction API answer 429 (a budget changed since the check) to
// the first eviction and counts the evictions asked for.
func refuseFirstEviction(e *env) *int {
	asked := new(int)
	e.cs.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		*asked++ // the fake clientset runs its reactors under its lock
		if *asked == 1 {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		return false, nil, nil
	})
	return asked
}

// A gang whose first eviction is refused is left whole (no other pod is asked for) and reported
// protected, by PostFilter and by the disruption poller alike.
func TestARefusedFirstEvictionLeavesTheGangWhole(t *testing.T) {
	pods, objs := bigGang("batch", "a", 8)
	e := newEnv(t, objs...)
	asked := refuseFirstEviction(e)
	e.eng.PreemptFn = victimsAre("batch", "a", pods, 0)
	_, st := e.plugin.PostFilter(context.Background(), framework.NewCycleState(), gpuPod("ml", "w-0", nil), nil)
	if st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "eviction failed: batch/a-00") {
		t.Errorf("PostFilter = %v, want Unschedulable naming the refused eviction", st)
	}
	if *asked != 1 {
		t.Errorf("%d evictions asked for, want 1 (the refused first)", *asked)
	}
	if !hasCall(e, "Evicted ml/w-0 pods= protected=batch/a") {
		t.Errorf("no protected report; calls %v", e.eng.Calls())
	}

	pods2, objs2 := bigGang("batch", "b", 8)
	e2 := newEnv(t, objs2...)
	asked2 := refuseFirstEviction(e2)
	e2.eng.SetDisruptionsFn(answer(&tidalv1.Disruption{Id: "batch/b", Cause: "reclaim", Action: tidalv1.Disruption_EVICT,
		Pods: refsOf(pods2...), Reason: "the pool takes its nodes back"}))
	if got := e2.plugin.disruptions.once(context.Background()); len(got) != 0 || *asked2 != 1 {
		t.Errorf("poll evicted %v after %d evictions asked for, want none after 1", got, *asked2)
	}
	if evs := e2.events(); countWith(evs, ReasonDisruptionBlocked, "the Eviction API refused batch/b-00") != 8 {
		t.Errorf("events = %q, want a TidalDisruptionBlocked per pod", evs)
	}
	// The next poll (the budget allows it now) evicts the rest side by side.
	if got := e2.plugin.disruptions.once(context.Background()); len(got) != 8 {
		t.Errorf("second poll evicted %v, want all 8", got)
	}
}
