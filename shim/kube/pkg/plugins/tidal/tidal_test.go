package tidal

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/enginetest"
)

func TestMain(m *testing.M) {
	metrics.Register()
	m.Run()
}

// activator records handle.Activate calls.
type activator struct {
	mu   sync.Mutex
	pods map[string]bool
}

func (a *activator) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range pods {
		a.pods[k] = true
	}
}

func (a *activator) has(k string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pods[k]
}

type env struct {
	t        *testing.T
	eng      *enginetest.Fake
	plugin   *Plugin
	fw       framework.Framework
	cs       *fake.Clientset
	rec      *objRecorder // events.FakeRecorder's lines, and which object each is on
	act      *activator
	nodeInfo func(string) fwk.NodeInfo
}

func gpuPod(ns, name string, annotations map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Annotations: annotations},
		Spec: v1.PodSpec{SchedulerName: "tidal-scheduler", Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}}},
	}
}

func newEnv(t *testing.T, objs ...runtime.Object) *env {
	t.Helper()
	return newEnvHeldBy(t, "", objs...)
}

// newEnvHeldBy: with heldBy != "", another holder has the engine's KUBERNETES door when the plugin
// starts (its Sync stream is refused, so the env does not wait for it to sync).
func newEnvHeldBy(t *testing.T, heldBy string, objs ...runtime.Object) *env {
	t.Helper()
	return newEnvWrapped(t, heldBy, nil, objs...)
}

// newEnvWrapped: with wrap != nil, the plugin's clientset is wrap(the fake clientset) (the
// informers still read the fake).
func newEnvWrapped(t *testing.T, heldBy string, wrap func(*fake.Clientset) kubernetes.Interface, objs ...runtime.Object) *env {
	t.Helper()
	sock := enginetest.Socket(t)
	e := &env{t: t, eng: enginetest.Start(t, sock, "epoch-1"), cs: fake.NewClientset(objs...),
		rec: &objRecorder{FakeRecorder: events.NewFakeRecorder(100)}, act: &activator{pods: map[string]bool{}}}
	if heldBy != "" {
		e.eng.Hold(t, tidalv1.FrontDoor_KUBERNETES, heldBy)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	inf := informers.NewSharedInformerFactory(e.cs, 0)
	args := &runtime.Unknown{Raw: []byte(`{"engineAddress": "unix://` + sock + `", "timeoutMs": 500, "syncFlushMs": 10, "activationIntervalMs": 100, "disruptionIntervalMs": 600000}`)}
	factory := func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		pl, err := New(ctx, args, h)
		if err == nil {
			e.plugin = pl.(*Plugin)
		}
		return pl, err
	}
	var client kubernetes.Interface = e.cs
	if wrap != nil {
		client = wrap(e.cs)
	}
	fw, err := tf.NewFramework(ctx, []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
		tf.RegisterPluginAsExtensions(Name, factory, "PreFilter", "Filter", "Score", "Reserve", "Permit", "PostFilter", "PostBind"),
	}, "tidal-scheduler",
		frameworkruntime.WithClientSet(client), frameworkruntime.WithInformerFactory(inf),
		frameworkruntime.WithEventRecorder(e.rec), frameworkruntime.WithPodActivator(e.act),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()))
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	e.fw = fw
	inf.Start(ctx.Done())
	inf.WaitForCacheSync(ctx.Done())
	if heldBy != "" {
		e.eng.WaitFor(t, "the plugin's Sync stream refused", 5*time.Second, func() bool { return e.plugin.client.LastError() != nil })
		return e
	}
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	if err := e.plugin.client.WaitSynced(wctx); err != nil {
		t.Fatalf("engine client did not sync: %v", err)
	}
	return e
}

func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func nodeInfo(name string) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return ni
}

func ok(code tidalv1.Status_Code, reasons ...string) *tidalv1.Status {
	return &tidalv1.Status{Code: code, Reasons: reasons}
}

func TestDecodeArgs(t *testing.T) {
	a, err := DecodeArgs(nil)
	if err != nil || a.EngineAddress != "unix:///tmp/tidal-engine.sock" || a.TimeoutMs != 2000 || a.SyncFlushMs != 50 || a.SyncBatch != 500 ||
		a.ActivationIntervalMs != 1000 || a.IncompleteEventMs != 30000 || a.LeaseTtlMs != 15000 || a.Holder != "" || a.DisruptionIntervalMs != 2000 || a.OverdueIntervalMs != 10000 {
		t.Fatalf("DecodeArgs(nil) = %+v, %v", a, err)
	}
	a, err = DecodeArgs(&runtime.Unknown{Raw: []byte(`{"engineAddress":"127.0.0.1:50051","timeoutMs":250}`)})
	if err != nil || a.EngineAddress != "127.0.0.1:50051" || a.TimeoutMs != 250 {
		t.Fatalf("DecodeArgs = %+v, %v", a, err)
	}
	for raw, want := range map[string]string{
		`{"timeoutMs": 0.5}`:   "timeoutMs",
		`{"timeoutMs": 70000}`: "timeoutMs: must be 1..60000",
		`{"engineAdress": "x:1"}`: "unknown field(s) engineAdress (accepted: engineAddress, timeoutMs, syncFlushMs, syncBatch, disruptionIntervalMs, " +
			"overdueIntervalMs, activationIntervalMs, incompleteEventMs, holder, leaseTtlMs, engineTLS, engineInsecure)",
		`{"activationIntervalMs": 50}`:    "activationIntervalMs: must be 100..60000, got 50",
		`{"activationIntervalMs": 60001}`: "activationIntervalMs: must be 100..60000, got 60001",
		`{"incompleteEventMs": 999}`:      "incompleteEventMs: must be 1000..3600000, got 999",
		`{"leaseTtlMs": 10}`:              "leaseTtlMs: must be 1000..600000, got 10",
		`{"holder": "two words"}`:         "holder:",
		`{"holder": 7}`:                   "holder",
		`{"overdueIntervalMs": 5}`:        "overdueIntervalMs: must be 100..3600000, got 5",
		`{"disruptionIntervalMs": 99}`:    "disruptionIntervalMs: must be 100..600000, got 99",
		`{"engineAddress": "nowhere"}`:    "engineAddress",
		`{"syncBatch": -1}`:               "syncBatch",
	} {
		if _, err := DecodeArgs(&runtime.Unknown{Raw: []byte(raw)}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeArgs(%s) error = %v, want it to mention %q", raw, err, want)
		}
	}
}

func TestPreEnqueue(t *testing.T) {
	e := newEnv(t)
	p := gpuPod("ml", "w-0", map[string]string{"tidal.dev/gang": "llm", "tidal.dev/gang-size": "2"})
	e.eng.CheckPodFn = func(*tidalv1.PodRef) *tidalv1.CheckPodResponse {
		return &tidalv1.CheckPodResponse{Status: ok(tidalv1.Status_WAIT, "gang ml/llm: 1 of 2 members exist"), Gang: "ml/llm"}
	}
	st := e.plugin.PreEnqueue(context.Background(), p)
	if st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "1 of 2 members") {
		t.Fatalf("PreEnqueue(WAIT) = %v", st)
	}
	// The gang's next member reaches the engine: the held pod is activated after the ack.
	p2 := gpuPod("ml", "w-1", p.Annotations)
	if _, err := e.cs.CoreV1().Pods("ml").Create(context.Background(), p2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eng.WaitFor(t, "held pod activated after the engine acknowledged its gang's new member", 3*time.Second,
		func() bool { return e.act.has("ml/w-0") })

	e.eng.CheckPodFn = func(*tidalv1.PodRef) *tidalv1.CheckPodResponse {
		return &tidalv1.CheckPodResponse{Status: &tidalv1.Status{Code: tidalv1.Status_UNSCHEDULABLE_AND_UNRESOLVABLE, Plugin: "podspec",
			Reasons: []string{`tidal.dev/gang-size: invalid value "many" (accepted: an integer 1..10000)`}}}
	}
	bad := gpuPod("ml", "bad", map[string]string{"tidal.dev/gang": "x", "tidal.dev/gang-size": "many"})
	for i := 0; i < 3; i++ {
		st = e.plugin.PreEnqueue(context.Background(), bad)
	}
	if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), "tidal.dev/gang-size") {
		t.Fatalf("PreEnqueue(invalid) = %v", st)
	}
	evs := e.events()
	if len(evs) != 1 || !strings.Contains(evs[0], "TidalInvalidSpec") || !strings.Contains(evs[0], "tidal.dev/gang-size") ||
		!strings.Contains(evs[0], "accepted: an integer 1..10000") {
		t.Errorf("events = %q, want one TidalInvalidSpec event naming the key and the accepted values", evs)
	}

	e.eng.CheckPodFn = nil
	if st := e.plugin.PreEnqueue(context.Background(), p); !st.IsSuccess() {
		t.Errorf("PreEnqueue(SUCCESS) = %v", st)
	}
}

func TestPreFilterFilterScore(t *testing.T) {
	e := newEnv(t)
	e.eng.PlanPodFn = func(r *tidalv1.PodRef) *tidalv1.PlanResponse {
		return &tidalv1.PlanResponse{Status: &tidalv1.Status{}, NodeName: "node-5", Gang: "ml/llm", Domain: "block-0/leaf-1"}
	}
	state := framework.NewCycleState()
	p := gpuPod("ml", "w-0", nil)
	res, st := e.plugin.PreFilter(context.Background(), state, p, nil)
	if !st.IsSuccess() || res == nil || res.NodeNames.Len() != 1 || !res.NodeNames.Has("node-5") {
		t.Fatalf("PreFilter = %v, %v; want NodeNames {node-5}", res, st)
	}
	if st := e.plugin.Filter(context.Background(), state, p, nodeInfo("node-5")); !st.IsSuccess() {
		t.Errorf("Filter(planned node) = %v", st)
	}
	if st := e.plugin.Filter(context.Background(), state, p, nodeInfo("node-6")); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("Filter(other node) = %v", st)
	}
	if s, st := e.plugin.Score(context.Background(), state, p, nodeInfo("node-5")); s != fwk.MaxNodeScore || !st.IsSuccess() {
		t.Errorf("Score(planned) = %d, %v", s, st)
	}
	if s, _ := e.plugin.Score(context.Background(), state, p, nodeInfo("node-6")); s != 0 {
		t.Errorf("Score(other) = %d", s)
	}
	if st := e.plugin.Filter(context.Background(), framework.NewCycleState(), p, nodeInfo("node-5")); st.Code() != fwk.Error {
		t.Errorf("Filter without PreFilter = %v, want Error", st)
	}

	e.eng.PlanPodFn = func(*tidalv1.PodRef) *tidalv1.PlanResponse {
		return &tidalv1.PlanResponse{Status: ok(tidalv1.Status_UNSCHEDULABLE_AND_UNRESOLVABLE,
			"topology-required nvlink: no nvlink domain can ever hold 5 members of 8 GPU (the largest holds 4)")}
	}
	_, st = e.plugin.PreFilter(context.Background(), framework.NewCycleState(), p, nil)
	if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), "the largest holds 4") {
		t.Errorf("PreFilter(unresolvable) = %v", st)
	}
	e.eng.PlanPodFn = func(*tidalv1.PodRef) *tidalv1.PlanResponse {
		return &tidalv1.PlanResponse{Status: ok(tidalv1.Status_UNSCHEDULABLE, "no leaf has room")}
	}
	_, st = e.plugin.PreFilter(context.Background(), framework.NewCycleState(), p, nil)
	if st.Code() != fwk.Unschedulable || st.Message() != "no leaf has room" {
		t.Errorf("PreFilter(unschedulable) = %v", st)
	}
}

func TestEngineUnreachable(t *testing.T) {
	e := newEnv(t)
	e.eng.Stop()
	p := gpuPod("ml", "w-0", nil)
	// PreEnqueue lets the pod through (it must not block the queue); PreFilter reports.
	deadline := time.Now().Add(3 * time.Second)
	for e.plugin.client.Synced() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := e.plugin.PreEnqueue(context.Background(), p); !st.IsSuccess() {
		t.Errorf("PreEnqueue with the engine down = %v, want Success (PreFilter reports)", st)
	}
	state := framework.NewCycleState()
	t0 := time.Now()
	_, st := e.plugin.PreFilter(context.Background(), state, p, nil)
	if st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "tidal-engine unreachable") {
		t.Fatalf("PreFilter with the engine down = %v", st)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("PreFilter took %v", d)
	}
	evs := e.events()
	if len(evs) != 1 || !strings.Contains(evs[0], "TidalEngineUnreachable") || !strings.Contains(evs[0], "tidal-engine unreachable") {
		t.Errorf("events = %q", evs)
	}
	if _, st := e.plugin.PostFilter(context.Background(), state, p, nil); st.Code() != fwk.Unschedulable {
		t.Errorf("PostFilter = %v", st)
	}
	// Reserve and Permit refuse rather than let a gang bind half-way.
	if st := e.plugin.Reserve(context.Background(), state, p, "node-0"); st.IsSuccess() {
		t.Errorf("Reserve with the engine down = %v", st)
	}
	if st, _ := e.plugin.Permit(context.Background(), state, p, "node-0"); st.IsSuccess() || st.IsWait() {
		t.Errorf("Permit with the engine down = %v", st)
	}
}

// runPermit runs the framework's Permit for pod on node and, when it waits, WaitOnPermit in the
// background; the result arrives on the channel.
func (e *env) runPermit(pod *v1.Pod, node string) (chan *fwk.Status, *fwk.Status) {
	state := framework.NewCycleState()
	state.Write(planKey, &planState{node: node, gang: "ml/llm"})
	wait, st := e.fw.RunPermitPlugins(context.Background(), state, pod, node)
	done := make(chan *fwk.Status, 1)
	if st.IsWait() {
		e.fw.AddWaitingPod(pod, wait) // as schedule_one does, still in the scheduling cycle
		go func() { done <- e.fw.WaitOnPermit(context.Background(), pod) }()
	} else {
		done <- st
	}
	return done, st
}

func TestPermitAllowsTheWholeGangAtOnce(t *testing.T) {
	e := newEnv(t)
	pods := []*v1.Pod{gpuPod("ml", "w-0", nil), gpuPod("ml", "w-1", nil), gpuPod("ml", "w-2", nil)}
	var mu sync.Mutex
	reserved := 0
	e.eng.PermitFn = func(r *tidalv1.PodRef) *tidalv1.PermitResponse {
		mu.Lock()
		defer mu.Unlock()
		reserved++
		if reserved < len(pods) {
			return &tidalv1.PermitResponse{Status: ok(tidalv1.Status_WAIT, "gang ml/llm: waiting"), WaitTimeoutMs: 10000}
		}
		var all []*tidalv1.PodRef
		for _, p := range pods {
			all = append(all, &tidalv1.PodRef{Uid: string(p.UID), Namespace: p.Namespace, Name: p.Name})
		}
		return &tidalv1.PermitResponse{Status: &tidalv1.Status{}, Allow: all}
	}
	var results []chan *fwk.Status
	for i, p := range pods {
		ch, st := e.runPermit(p, "node-0")
		if i < len(pods)-1 && !st.IsWait() {
			t.Fatalf("Permit(%s) = %v, want Wait", p.Name, st)
		}
		if i == len(pods)-1 && !st.IsSuccess() {
			t.Fatalf("Permit(last) = %v, want Success", st)
		}
		results = append(results, ch)
	}
	for i, ch := range results {
		select {
		case st := <-ch:
			if !st.IsSuccess() {
				t.Errorf("member %d: %v", i, st)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("member %d still waiting after the gang was permitted", i)
		}
	}
}

func TestUnreserveRejectsTheWaitingMembers(t *testing.T) {
	e := newEnv(t)
	w0, w1, w2 := gpuPod("ml", "w-0", nil), gpuPod("ml", "w-1", nil), gpuPod("ml", "w-2", nil)
	e.eng.PermitFn = func(*tidalv1.PodRef) *tidalv1.PermitResponse {
		return &tidalv1.PermitResponse{Status: ok(tidalv1.Status_WAIT, "waiting"), WaitTimeoutMs: 10000}
	}
	e.eng.UnreserveFn = func(*tidalv1.PodRef) *tidalv1.UnreserveResponse {
		// The engine names w-0 (waiting) and w-1 (not known to be waiting here).
		return &tidalv1.UnreserveResponse{Released: []*tidalv1.PodRef{{Uid: string(w0.UID), Namespace: "ml", Name: "w-0"},
			{Uid: string(w1.UID), Namespace: "ml", Name: "w-1"}}}
	}
	ch0, _ := e.runPermit(w0, "node-0")
	state := framework.NewCycleState()
	state.Write(planKey, &planState{node: "node-1", gang: "ml/llm"})
	e.plugin.Unreserve(context.Background(), state, w2, "node-1")
	select {
	case st := <-ch0:
		if st.IsSuccess() || !strings.Contains(st.Message(), "gang plan released") {
			t.Errorf("w-0 after Unreserve of w-2: %v, want rejected", st)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("w-0 still waiting after its gang was released")
	}
	calls := strings.Join(e.eng.Calls(), "\n")
	if !strings.Contains(calls, "Unreserve ml/w-2") {
		t.Errorf("engine calls = %s", calls)
	}
}

func TestPermitWithAMemberGoneAllowsNone(t *testing.T) {
	e := newEnv(t)
	w0, w1 := gpuPod("ml", "w-0", nil), gpuPod("ml", "w-1", nil)
	first := true
	e.eng.PermitFn = func(r *tidalv1.PodRef) *tidalv1.PermitResponse {
		if first {
			first = false
			return &tidalv1.PermitResponse{Status: ok(tidalv1.Status_WAIT, "waiting"), WaitTimeoutMs: 10000}
		}
		return &tidalv1.PermitResponse{Status: &tidalv1.Status{}, Allow: []*tidalv1.PodRef{
			{Uid: string(w0.UID), Namespace: "ml", Name: "w-0"}, {Uid: "gone", Namespace: "ml", Name: "gone"},
			{Uid: string(w1.UID), Namespace: "ml", Name: "w-1"}}}
	}
	ch0, _ := e.runPermit(w0, "node-0")
	_, st := e.runPermit(w1, "node-1")
	if st.IsSuccess() || !strings.Contains(st.Message(), "ml/gone is no longer waiting") {
		t.Fatalf("Permit with a member gone = %v", st)
	}
	// The framework unreserves w-1 on that refusal; Unreserve releases w-0.
	state := framework.NewCycleState()
	state.Write(planKey, &planState{node: "node-1", gang: "ml/llm"})
	e.fw.RunReservePluginsUnreserve(context.Background(), state, w1, "node-1")
	select {
	case st := <-ch0:
		if st.IsSuccess() {
			t.Error("w-0 was allowed although the gang was incomplete")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("w-0 still waiting")
	}
}

func TestPostFilterEvictsTheEnginesVictims(t *testing.T) {
	victim := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "batch", Name: "low", UID: "v1"}, Spec: v1.PodSpec{NodeName: "node-2"}}
	e := newEnv(t, victim, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}})
	e.eng.PreemptFn = func(*tidalv1.PodRef) *tidalv1.PreemptResponse {
		return &tidalv1.PreemptResponse{Status: &tidalv1.Status{}, NominatedNode: "node-2",
			Victims: []*tidalv1.PodRef{{Uid: "v1", Namespace: "batch", Name: "low"}}}
	}
	p := gpuPod("ml", "w-0", nil)
	res, st := e.plugin.PostFilter(context.Background(), framework.NewCycleState(), p, nil)
	if !st.IsSuccess() || res == nil || res.NominatedNodeName != "node-2" || res.NominatingMode != fwk.ModeOverride {
		t.Fatalf("PostFilter = %+v, %v", res, st)
	}
	evicted := false
	for _, a := range e.cs.Actions() {
		if c, ok := a.(clienttesting.CreateAction); ok && a.GetSubresource() == "eviction" && a.GetNamespace() == "batch" {
			evicted = true
			_ = c
		}
	}
	if !evicted {
		t.Errorf("no eviction of batch/low; actions: %v", e.cs.Actions())
	}
	// A domain instead of a node name is reported, not nominated.
	e.eng.PreemptFn = func(*tidalv1.PodRef) *tidalv1.PreemptResponse {
		return &tidalv1.PreemptResponse{Status: &tidalv1.Status{}, NominatedNode: "block-0/leaf-2",
			Victims: []*tidalv1.PodRef{{Uid: "v1", Namespace: "batch", Name: "low"}}}
	}
	res, st = e.plugin.PostFilter(context.Background(), framework.NewCycleState(), p, nil)
	if !st.IsSuccess() || res == nil || res.Mode() != fwk.ModeNoop {
		t.Errorf("PostFilter with a domain = %+v, %v; want Success without nomination", res, st)
	}
	if evs := strings.Join(e.events(), "\n"); !strings.Contains(evs, "TidalPreempting") || !strings.Contains(evs, "block-0/leaf-2") {
		t.Errorf("events = %s", evs)
	}
	// No victims: Unschedulable with the engine's reason.
	e.eng.PreemptFn = nil
	if _, st := e.plugin.PostFilter(context.Background(), framework.NewCycleState(), p, nil); st.Code() != fwk.Unschedulable || st.Message() != "tidal-engine: no preemption victims" {
		t.Errorf("PostFilter without victims = %v", st)
	}
	// A plan whose node failed kube-scheduler's filters is released.
	state := framework.NewCycleState()
	state.Write(planKey, &planState{node: "node-9", gang: "ml/llm"})
	e.plugin.PostFilter(context.Background(), state, p, nil)
	if calls := strings.Join(e.eng.Calls(), "\n"); !strings.Contains(calls, "Unreserve ml/w-0") {
		t.Errorf("plan not released; calls:\n%s", calls)
	}
}

func TestReserveAndPostBind(t *testing.T) {
	e := newEnv(t)
	p := gpuPod("ml", "w-0", nil)
	if st := e.plugin.Reserve(context.Background(), framework.NewCycleState(), p, "node-3"); !st.IsSuccess() {
		t.Fatalf("Reserve = %v", st)
	}
	e.eng.ReserveFn = func(*tidalv1.ReserveRequest) *tidalv1.ReserveResponse {
		return &tidalv1.ReserveResponse{Status: ok(tidalv1.Status_ERROR, "gang ml/llm has no plan")}
	}
	if st := e.plugin.Reserve(context.Background(), framework.NewCycleState(), p, "node-3"); st.Code() != fwk.Error {
		t.Errorf("Reserve(ERROR) = %v", st)
	}
	e.plugin.PostBind(context.Background(), framework.NewCycleState(), p, "node-3")
	calls := strings.Join(e.eng.Calls(), "\n")
	if !strings.Contains(calls, "Reserve ml/w-0@node-3") || !strings.Contains(calls, "Bound ml/w-0@node-3") {
		t.Errorf("calls:\n%s", calls)
	}
}

func TestResyncReleasesWaitingPodsAndRetriesPending(t *testing.T) {
	pending := gpuPod("ml", "pending", nil)
	other := gpuPod("ml", "other-scheduler", nil)
	other.Spec.SchedulerName = "default-scheduler"
	e := newEnv(t, pending, other)
	e.eng.PermitFn = func(*tidalv1.PodRef) *tidalv1.PermitResponse {
		return &tidalv1.PermitResponse{Status: ok(tidalv1.Status_WAIT, "waiting"), WaitTimeoutMs: 60000}
	}
	w := gpuPod("ml", "waiting", nil)
	ch, _ := e.runPermit(w, "node-0")
	// The engine restarts: a new epoch on the same socket.
	sock := strings.TrimPrefix(e.eng.Addr, "unix://")
	e.eng.Stop()
	enginetest.Start(t, sock, "epoch-2")
	select {
	case st := <-ch:
		if st.IsSuccess() || !strings.Contains(st.Message(), "tidal-engine restarted") {
			t.Errorf("waiting pod after the engine restart: %v", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pod still waiting in Permit after the engine restarted")
	}
	deadline := time.Now().Add(3 * time.Second)
	for !e.act.has("ml/pending") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !e.act.has("ml/pending") {
		t.Error("pending pod not activated after the resync")
	}
	if e.act.has("ml/other-scheduler") {
		t.Error("another scheduler's pod was activated")
	}
}

func TestEventsToRegister(t *testing.T) {
	e := newEnv(t)
	evs, err := e.plugin.EventsToRegister(context.Background())
	if err != nil || len(evs) != 2 {
		t.Fatalf("EventsToRegister = %v, %v", evs, err)
	}
	hint := evs[0].QueueingHintFn
	held := gpuPod("ml", "w-0", map[string]string{"tidal.dev/gang": "llm"})
	member := gpuPod("ml", "w-1", map[string]string{"tidal.dev/gang": "llm"})
	stranger := gpuPod("ml", "x", map[string]string{"tidal.dev/gang": "other"})
	bound := gpuPod("ml", "b", nil)
	bound.Spec.NodeName = "node-1"
	cases := []struct {
		name     string
		old, new interface{}
		want     fwk.QueueingHint
	}{
		{"gang member added", nil, member, fwk.Queue},
		{"other gang's pod added", nil, stranger, fwk.QueueSkip},
		{"the pod itself updated", held, held, fwk.Queue},
		{"bound pod deleted", bound, nil, fwk.Queue},
		{"pending pod deleted", stranger, nil, fwk.QueueSkip},
	}
	for _, c := range cases {
		var oldObj, newObj interface{}
		if c.old != nil {
			oldObj = c.old
		}
		if c.new != nil {
			newObj = c.new
		}
		if got, _ := hint(klog.Background(), held, oldObj, newObj); got != c.want {
			t.Errorf("%s: hint = %v, want %v", c.name, got, c.want)
		}
	}
}
