package engineclient

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/enginetest"
)

func node(name string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"topology.tidal.dev/leaf": "leaf-0"}},
		Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
}

func pod(ns, name, nodeName string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name)},
		Spec: v1.PodSpec{SchedulerName: "tidal-scheduler", NodeName: nodeName, Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
	}
}

type env struct {
	cs     *fake.Clientset
	client *Client
	cancel context.CancelFunc

	mu     sync.Mutex
	synced []SyncedInfo
	downs  int
}

func (e *env) infos() []SyncedInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]SyncedInfo(nil), e.synced...)
}

func start(t *testing.T, addr string, cfg Config, objs ...interface{}) *env {
	t.Helper()
	return startLogged(t, addr, cfg, klog.Background(), objs...)
}

func startLogged(t *testing.T, addr string, cfg Config, logger klog.Logger, objs ...interface{}) *env {
	t.Helper()
	cs := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	for _, o := range objs {
		switch o := o.(type) {
		case *v1.Node:
			if _, err := cs.CoreV1().Nodes().Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case *v1.Pod:
			if _, err := cs.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg.Address = addr
	c, err := New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cs: cs, client: c, cancel: cancel}
	c.AddHooks(Hooks{
		OnSynced: func(i SyncedInfo) {
			e.mu.Lock()
			e.synced = append(e.synced, i)
			e.mu.Unlock()
		},
		OnDisconnected: func(error) {
			e.mu.Lock()
			e.downs++
			e.mu.Unlock()
		},
	})
	f := informers.NewSharedInformerFactory(cs, 0)
	if err := c.Watch(f.Core().V1().Nodes().Informer(), f.Core().V1().Pods().Informer()); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	c.Start(ctx)
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
		c.Close()
	})
	return e
}

func countObjects(msgs []*tidalv1.SyncRequest) (pods, nodes, deletes int) {
	for _, m := range msgs {
		pods += len(m.UpsertPods)
		nodes += len(m.UpsertNodes)
		deletes += len(m.DeletePods) + len(m.VanishedPods) + len(m.DeleteNodes)
	}
	return
}

func TestFirstMessageIsFullSnapshot(t *testing.T) {
	sock := enginetest.Socket(t)
	eng := enginetest.Start(t, sock, "epoch-1")
	e := start(t, eng.Addr, Config{}, node("n0"), node("n1"), pod("a", "bound", "n0"), pod("a", "pending", ""),
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "other", UID: "o"},
			Spec: v1.PodSpec{SchedulerName: "default-scheduler", NodeName: "n1"}})
	if err := e.client.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("WaitSynced: %v", err)
	}
	msgs := eng.SyncMessages()
	if len(msgs) == 0 || !msgs[0].Resync {
		t.Fatalf("first message is not a resync: %v", msgs)
	}
	if len(msgs[0].UpsertNodes) != 2 || len(msgs[0].UpsertPods) != 3 {
		t.Errorf("snapshot has %d nodes, %d pods; want 2, 3 (every pod, any scheduler)", len(msgs[0].UpsertNodes), len(msgs[0].UpsertPods))
	}
	if e.client.Epoch() != "epoch-1" || !e.client.Synced() {
		t.Errorf("Epoch() = %q, Synced() = %v", e.client.Epoch(), e.client.Synced())
	}
	eng.WaitFor(t, "resync hook", 2*time.Second, func() bool { return len(e.infos()) > 0 })
	if in := e.infos(); len(in) == 0 || !in[0].Resync || in[0].EngineRestarted {
		t.Errorf("hooks saw %+v, want a first resync that is not a restart", in)
	}
}

func TestIncrementalChangesAreBatchedAndCoalesced(t *testing.T) {
	sock := enginetest.Socket(t)
	eng := enginetest.Start(t, sock, "e")
	e := start(t, eng.Addr, Config{FlushInterval: 50 * time.Millisecond, MaxBatch: 100}, node("n0"))
	if err := e.client.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 450
	for i := 0; i < n; i++ {
		if _, err := e.cs.CoreV1().Pods("b").Create(ctx, pod("b", fmt.Sprintf("p%d", i), ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eng.WaitFor(t, "all pods synced", 5*time.Second, func() bool {
		p, _, _ := countObjects(eng.SyncMessages()[1:])
		return p >= n
	})
	msgs := eng.SyncMessages()[1:]
	for _, m := range msgs {
		if m.Resync {
			t.Fatalf("incremental message marked resync")
		}
		if k := len(m.UpsertPods) + len(m.UpsertNodes) + len(m.DeletePods) + len(m.DeleteNodes); k > 100 {
			t.Errorf("a message carries %d objects, MaxBatch is 100", k)
		}
	}
	if len(msgs) >= n/2 {
		t.Errorf("%d messages for %d pods: not batched", len(msgs), n)
	}
	// The hook sees the namespace of the new unbound pods (a gang may be complete now).
	eng.WaitFor(t, "hook", 2*time.Second, func() bool {
		for _, i := range e.infos() {
			if _, ok := i.PendingPodNamespaces["b"]; ok {
				return true
			}
		}
		return false
	})

	// Status-only updates that do not change what the engine sees are not sent.
	before := len(eng.SyncMessages())
	p, _ := e.cs.CoreV1().Pods("b").Get(ctx, "p0", metav1.GetOptions{})
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable"}}
	if _, err := e.cs.CoreV1().Pods("b").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A bound pod going away frees capacity.
	if _, err := e.cs.CoreV1().Pods("b").Create(ctx, pod("b", "bound", "n0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eng.WaitFor(t, "bound pod synced", 2*time.Second, func() bool {
		for _, m := range eng.SyncMessages()[before:] {
			for _, p := range m.UpsertPods {
				if p.Name == "bound" {
					return true
				}
			}
		}
		return false
	})
	if err := e.cs.CoreV1().Pods("b").Delete(ctx, "bound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eng.WaitFor(t, "delete synced", 2*time.Second, func() bool {
		_, _, d := countObjects(eng.SyncMessages()[before:])
		return d == 1
	})
	for _, m := range eng.SyncMessages()[before:] {
		for _, p := range m.UpsertPods {
			if p.Name == "p0" {
				t.Errorf("a status-only update of p0 was sent")
			}
		}
	}
	eng.WaitFor(t, "capacity freed hook", 2*time.Second, func() bool {
		for _, i := range e.infos() {
			if !i.Resync && i.CapacityFreed {
				return true
			}
		}
		return false
	})
}

// A change of a pod's annotations alone is sent when the engine reads the key: a job reporting a
// checkpoint (tidal.dev/last-checkpoint, written on its own pod) acknowledges a disruption notice.
// A key the engine does not read (the shim's own tidal.dev/disruption-notice) sends nothing.
func TestAnnotationOnlyChangeOfAKeyTheEngineReadsIsSent(t *testing.T) {
	sock := enginetest.Socket(t)
	eng := enginetest.Start(t, sock, "e")
	e := start(t, eng.Addr, Config{FlushInterval: 10 * time.Millisecond}, node("n0"), pod("ml", "ckpt", "n0"))
	if err := e.client.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	annotate := func(k, v string) {
		t.Helper()
		p, err := e.cs.CoreV1().Pods("ml").Get(ctx, "ckpt", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
		if _, err := e.cs.CoreV1().Pods("ml").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sent := func(from int) (out []*tidalv1.Pod) {
		for _, m := range eng.SyncMessages()[from:] {
			out = append(out, m.UpsertPods...)
		}
		return out
	}
	before := len(eng.SyncMessages())
	annotate("tidal.dev/disruption-notice", "2030-01-02T03:04:05Z") // the shim's own: not the engine's
	annotate("tidal.dev/last-checkpoint", "2030-01-02T03:00:00Z")
	eng.WaitFor(t, "the checkpoint reaches the engine", 3*time.Second, func() bool {
		for _, p := range sent(before) {
			if p.GetAnnotations()["tidal.dev/last-checkpoint"] == "2030-01-02T03:00:00Z" {
				return true
			}
		}
		return false
	})
	for _, p := range sent(before) {
		if _, ok := p.GetAnnotations()["tidal.dev/disruption-notice"]; ok || p.GetAnnotations()["tidal.dev/last-checkpoint"] == "" {
			t.Errorf("upsert %v: only the change of tidal.dev/last-checkpoint is the engine's", p.GetAnnotations())
		}
	}
	annotate("tidal.dev/checkpoint-on-notice", "60s")
	eng.WaitFor(t, "checkpoint-on-notice reaches the engine", 3*time.Second, func() bool {
		for _, p := range sent(before) {
			if p.GetAnnotations()["tidal.dev/checkpoint-on-notice"] == "60s" {
				return true
			}
		}
		return false
	})
}

func TestReconnectsAndResyncsAfterEngineRestart(t *testing.T) {
	sock := enginetest.Socket(t)
	eng := enginetest.Start(t, sock, "epoch-1")
	e := start(t, eng.Addr, Config{ReconnectMin: 20 * time.Millisecond, ReconnectMax: 100 * time.Millisecond},
		node("n0"), pod("a", "p", ""))
	if err := e.client.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	eng.Stop() // kill -9
	deadline := time.Now().Add(3 * time.Second)
	for e.client.Synced() {
		if time.Now().After(deadline) {
			t.Fatal("client still reports Synced after the engine died")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A change while the engine is down is not lost: the next snapshot carries it.
	if _, err := e.cs.CoreV1().Pods("a").Create(context.Background(), pod("a", "while-down", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	eng2 := enginetest.Start(t, sock, "epoch-2")
	if err := e.client.WaitSynced(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("no resync after the engine came back: %v", err)
	}
	msgs := eng2.SyncMessages()
	if len(msgs) == 0 || !msgs[0].Resync || len(msgs[0].UpsertPods) != 2 || len(msgs[0].UpsertNodes) != 1 {
		t.Fatalf("new engine's first message = %v, want a full snapshot with 1 node and 2 pods", msgs)
	}
	if e.client.Epoch() != "epoch-2" {
		t.Errorf("Epoch() = %q, want epoch-2", e.client.Epoch())
	}
	eng2.WaitFor(t, "restart hook", 2*time.Second, func() bool { return e.infos()[len(e.infos())-1].Epoch == "epoch-2" })
	in := e.infos()
	if last := in[len(in)-1]; !last.Resync || !last.EngineRestarted || last.Epoch != "epoch-2" {
		t.Errorf("last hook info = %+v, want a resync reporting the restart", last)
	}
	e.mu.Lock()
	downs := e.downs
	e.mu.Unlock()
	if downs == 0 {
		t.Error("OnDisconnected was not called")
	}
}

func TestUnaryCallsTimeOut(t *testing.T) {
	sock := enginetest.Socket(t)
	eng := enginetest.Start(t, sock, "e")
	c, err := New(Config{Address: eng.Addr, Timeout: 100 * time.Millisecond}, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ref := &tidalv1.PodRef{Uid: "u", Namespace: "a", Name: "p"}
	r, err := c.PlanPod(context.Background(), ref)
	if err != nil || r.NodeName != "node-0" {
		t.Fatalf("PlanPod = %v, %v", r, err)
	}
	eng.SetDelay(time.Second)
	t0 := time.Now()
	_, err = c.Permit(context.Background(), ref)
	if err == nil || !IsTransport(err) {
		t.Fatalf("slow Permit: err = %v, want a deadline error", err)
	}
	if d := time.Since(t0); d > 600*time.Millisecond {
		t.Errorf("call took %v with a 100ms timeout", d)
	}
	// A shorter per-call timeout applies; a longer one is capped at the configured timeout.
	t0 = time.Now()
	if _, err := c.CheckPod(context.Background(), ref, 20*time.Millisecond); err == nil {
		t.Fatal("CheckPod did not time out")
	}
	if d := time.Since(t0); d > 90*time.Millisecond {
		t.Errorf("CheckPod with a 20ms timeout took %v", d)
	}
	eng.Stop()
	_, err = c.Bound(context.Background(), ref, "n")
	if !IsTransport(err) {
		t.Errorf("call to a stopped engine: err = %v, want a transport error", err)
	}
	if msg := c.Describe(err); msg == "" || msg[:len("tidal-engine unreachable at unix://")] != "tidal-engine unreachable at unix://" {
		t.Errorf("Describe = %q", msg)
	}
}

func TestTarget(t *testing.T) {
	for in, want := range map[string]string{
		"unix:///run/tidal/engine.sock": "unix:///run/tidal/engine.sock",
		"127.0.0.1:50051":               "passthrough:///127.0.0.1:50051",
		"dns:///engine:50051":           "dns:///engine:50051",
	} {
		if got := Target(in); got != want {
			t.Errorf("Target(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSnapshotIsChunked(t *testing.T) {
	sock := enginetest.Socket(t)
	eng := enginetest.Start(t, sock, "e")
	objs := []interface{}{node("n0")}
	for i := 0; i < 300; i++ {
		objs = append(objs, pod("c", fmt.Sprintf("p%03d", i), ""))
	}
	e := start(t, eng.Addr, Config{MaxMessageBytes: 4096}, objs...)
	if err := e.client.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	msgs := eng.SyncMessages()
	if len(msgs) < 3 || !msgs[0].Resync {
		t.Fatalf("%d snapshot messages, want several chunks starting with resync", len(msgs))
	}
	p, n, _ := countObjects(msgs)
	if p != 300 || n != 1 {
		t.Errorf("chunks carry %d pods, %d nodes; want 300, 1", p, n)
	}
	for _, m := range msgs[1:] {
		if m.Resync {
			t.Error("a later chunk is marked resync (it would wipe the first)")
		}
	}
	// Every chunk but the last says the snapshot continues: the engine removes what the snapshot
	// does not name only at its last chunk, not the pods of later chunks at the first.
	for i, m := range msgs {
		if want := i < len(msgs)-1; m.SnapshotContinues != want {
			t.Errorf("chunk %d of %d: snapshot_continues = %v, want %v", i+1, len(msgs), m.SnapshotContinues, want)
		}
	}
	// Synced only once every chunk is acknowledged; one resync hook.
	eng.WaitFor(t, "resync hook", 2*time.Second, func() bool { return len(e.infos()) > 0 })
	n = 0
	for _, i := range e.infos() {
		if i.Resync {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d resync hooks, want 1", n)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
