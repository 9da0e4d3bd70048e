package engineclient

// The KUBERNETES front door's lease: every Sync message names the door, the first claims it for the
// configured holder, and a stream refused because another holder has the door (ABORTED) is logged
// and retried, never fatal, and applies nothing.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/enginetest"
)

const k8sDoor = tidalv1.FrontDoor_KUBERNETES

// bufferedLogger logs into memory only (no testing.T: the client's goroutine may log after the test).
func bufferedLogger() (klog.Logger, func() string) {
	l := ktesting.NewLogger(ktesting.NopTL{}, ktesting.NewConfig(ktesting.Verbosity(2), ktesting.BufferLogs(true)))
	buf := l.GetSink().(ktesting.Underlier).GetBuffer()
	return l, buf.String
}

func TestSyncNamesTheDoorAndClaimsTheLease(t *testing.T) {
	eng := enginetest.Start(t, enginetest.Socket(t), "e")
	objs := []interface{}{node("n0")}
	for i := 0; i < 100; i++ {
		objs = append(objs, pod("d", fmt.Sprintf("p%03d", i), ""))
	}
	e := start(t, eng.Addr, Config{Holder: "tidal-scheduler@host-a", LeaseTTL: 7 * time.Second, MaxMessageBytes: 4096}, objs...)
	if err := e.client.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().Pods("d").Create(context.Background(), pod("d", "later", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eng.WaitFor(t, "the incremental change", 3*time.Second, func() bool {
		for _, m := range eng.SyncMessages() {
			for _, p := range m.UpsertPods {
				if p.Name == "later" && !m.Resync {
					return true
				}
			}
		}
		return false
	})
	msgs := eng.SyncMessages()
	if len(msgs) < 3 {
		t.Fatalf("%d messages, want a chunked snapshot and an incremental batch", len(msgs))
	}
	if f := msgs[0]; !f.Resync || f.Holder != "tidal-scheduler@host-a" || f.LeaseTtlMs != 7000 {
		t.Errorf("first message: resync=%v holder=%q lease_ttl_ms=%d; want true, tidal-scheduler@host-a, 7000", f.Resync, f.Holder, f.LeaseTtlMs)
	}
	for i, m := range msgs {
		if m.Door != k8sDoor {
			t.Errorf("message %d names door %v, want KUBERNETES", i, m.Door)
		}
		if i > 0 && (m.Holder != "" || m.LeaseTtlMs != 0) {
			t.Errorf("message %d carries holder %q / ttl %d; only the first claims the lease", i, m.Holder, m.LeaseTtlMs)
		}
	}
	if h := eng.Holder(k8sDoor); h != "tidal-scheduler@host-a" {
		t.Errorf("the fake engine's KUBERNETES holder = %q", h)
	}
	if e.client.DoorHeldBy() != "" {
		t.Errorf("DoorHeldBy() = %q while synced", e.client.DoorHeldBy())
	}
}

func TestHolderDefaults(t *testing.T) {
	c, err := New(Config{}, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h := c.Holder(); h != DefaultHolder("tidal-scheduler") || !strings.HasPrefix(h, "tidal-scheduler@") || len(h) <= len("tidal-scheduler@") {
		t.Errorf("default Holder() = %q, want tidal-scheduler@HOSTNAME", h)
	}
	if c.cfg.LeaseTTL != 15*time.Second || c.cfg.RefusedRetryMax < c.cfg.ReconnectMax {
		t.Errorf("LeaseTTL = %v, RefusedRetryMax = %v", c.cfg.LeaseTTL, c.cfg.RefusedRetryMax)
	}
	if h := DefaultHolder("gpu-sched"); !strings.HasPrefix(h, "gpu-sched@") {
		t.Errorf("DefaultHolder(gpu-sched) = %q", h)
	}
}

// Another holder has the door: the client logs who (once at Info, then throttled), stays unsynced,
// sends nothing the engine applies, keeps retrying with backoff, and syncs as soon as the door is
// free, with a snapshot that includes what changed meanwhile.
func TestDoorHeldByAnotherHolderIsRetried(t *testing.T) {
	eng := enginetest.Start(t, enginetest.Socket(t), "e")
	eng.Hold(t, k8sDoor, "tidal-scheduler@replica-b")
	logger, logs := bufferedLogger()
	objs := []interface{}{node("n0")}
	for i := 0; i < 200; i++ { // several snapshot chunks: the refusal may come while they are sent
		objs = append(objs, pod("r", fmt.Sprintf("p%03d", i), ""))
	}
	e := startLogged(t, eng.Addr, Config{Holder: "tidal-scheduler@replica-a", MaxMessageBytes: 2048,
		ReconnectMin: 10 * time.Millisecond, ReconnectMax: 20 * time.Millisecond, RefusedRetryMax: 40 * time.Millisecond}, logger, objs...)
	eng.WaitFor(t, "3 refused attempts", 5*time.Second, func() bool { return len(eng.Refused()) >= 3 })
	if e.client.Synced() {
		t.Fatal("Synced() while another holder has the door")
	}
	if msgs := eng.SyncMessages(); len(msgs) != 0 {
		t.Fatalf("the engine applied %d messages of a refused stream", len(msgs))
	}
	if got := e.client.DoorHeldBy(); got != "tidal-scheduler@replica-b" {
		t.Errorf("DoorHeldBy() = %q, want tidal-scheduler@replica-b", got)
	}
	if h, ok := DoorHeld(e.client.LastError()); !ok || h != "tidal-scheduler@replica-b" {
		t.Errorf("DoorHeld(LastError() = %v) = %q, %v", e.client.LastError(), h, ok)
	}
	if h := eng.Holder(k8sDoor); h != "tidal-scheduler@replica-b" {
		t.Errorf("the holder changed to %q", h)
	}
	out := logs()
	if n := strings.Count(out, "another holder has the KUBERNETES front door"); n != 1 {
		t.Errorf("the refusal is logged at Info %d times, want once (then throttled):\n%s", n, out)
	}
	for _, want := range []string{`heldBy="tidal-scheduler@replica-b"`, `holder="tidal-scheduler@replica-a"`, "still refuses the Sync stream"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	e.mu.Lock()
	downs := e.downs
	e.mu.Unlock()
	if downs == 0 {
		t.Error("OnDisconnected was not called for a refused stream")
	}
	if len(e.infos()) != 0 {
		t.Errorf("hooks ran for a refused stream: %+v", e.infos())
	}

	// A change while refused is not lost; the door frees up: the next attempt claims it.
	if _, err := e.cs.CoreV1().Pods("r").Create(context.Background(), pod("r", "while-refused", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	eng.Release(k8sDoor)
	if err := e.client.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("no sync after the door was released: %v", err)
	}
	msgs := eng.SyncMessages()
	if len(msgs) == 0 || !msgs[0].Resync || msgs[0].Holder != "tidal-scheduler@replica-a" {
		t.Fatalf("first applied message = %v, want a resync claiming the door", msgs)
	}
	if p, _, _ := countObjects(msgs); p != 201 {
		t.Errorf("the snapshot carries %d pods, want 201 (with the one created while refused)", p)
	}
	if h := eng.Holder(k8sDoor); h != "tidal-scheduler@replica-a" || e.client.DoorHeldBy() != "" {
		t.Errorf("holder = %q, DoorHeldBy() = %q after the claim", h, e.client.DoorHeldBy())
	}
	if !strings.Contains(logs(), "refusedBefore") {
		t.Errorf("the sync after refusals is not logged with the refusal count")
	}
}

// Two schedulers on one engine: the second is refused while the first's stream is open (the first
// is not disturbed: one resync, still synced), and takes the door once the first's lease lapsed.
func TestSecondSchedulerWaitsForTheFirstsLease(t *testing.T) {
	eng := enginetest.Start(t, enginetest.Socket(t), "e")
	a := start(t, eng.Addr, Config{Holder: "sched@a", LeaseTTL: 300 * time.Millisecond}, node("n0"))
	if err := a.client.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	logger, _ := bufferedLogger()
	b := startLogged(t, eng.Addr, Config{Holder: "sched@b", ReconnectMin: 10 * time.Millisecond,
		ReconnectMax: 20 * time.Millisecond, RefusedRetryMax: 40 * time.Millisecond}, logger, node("n0"))
	eng.WaitFor(t, "b refused", 3*time.Second, func() bool { return len(eng.Refused()) >= 2 })
	if b.client.Synced() || !a.client.Synced() || b.client.DoorHeldBy() != "sched@a" {
		t.Fatalf("a synced=%v, b synced=%v heldBy=%q", a.client.Synced(), b.client.Synced(), b.client.DoorHeldBy())
	}
	resyncs := func() (n int) {
		for _, m := range eng.SyncMessages() {
			if m.Resync {
				n++
			}
		}
		return
	}
	if n := resyncs(); n != 1 {
		t.Errorf("%d resyncs applied, want only a's", n)
	}
	stopped := time.Now()
	a.cancel() // a's stream closes: its lease lingers for 300 ms
	if err := b.client.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("b never took the door: %v", err)
	}
	if d := time.Since(stopped); d < 250*time.Millisecond {
		t.Errorf("b took the door %v after a stopped, before a's 300 ms lease lapsed", d)
	}
	if h := eng.Holder(k8sDoor); h != "sched@b" {
		t.Errorf("holder = %q, want sched@b", h)
	}
	refused := eng.Refused()
	if last := refused[len(refused)-1]; !strings.Contains(last, `holder "sched@a"`) {
		t.Errorf("refusal = %q", last)
	}
}

func TestDoorHeld(t *testing.T) {
	for _, c := range []struct {
		err    error
		holder string
		ok     bool
	}{
		{status.Error(codes.Aborted, `front door KUBERNETES is held by holder "sched@b" (its Sync stream is open); refusing "sched@a"`), "sched@b", true},
		{fmt.Errorf("recv: %w", status.Error(codes.Aborted, `front door KUBERNETES is held by holder "x" (its stream closed; the lease lapses in 900 ms); refusing "y"`)), "x", true},
		{status.Error(codes.Aborted, `front door KUBERNETES is held by an anonymous holder (its Sync stream is open); refusing "y"`), "an anonymous holder", true},
		{status.Error(codes.Aborted, "something else"), "", true},
		{status.Error(codes.Unavailable, `held by holder "x"`), "", false},
		{nil, "", false},
	} {
		if h, ok := DoorHeld(c.err); h != c.holder || ok != c.ok {
			t.Errorf("DoorHeld(%v) = %q, %v; want %q, %v", c.err, h, ok, c.holder, c.ok)
		}
	}
}

func TestTakeActivationsNamesTheKubernetesDoor(t *testing.T) {
	eng := enginetest.Start(t, enginetest.Socket(t), "e")
	eng.SetTakeActivationsFn(func(r *tidalv1.TakeActivationsRequest) (*tidalv1.TakeActivationsResponse, error) {
		return &tidalv1.TakeActivationsResponse{Pods: []*tidalv1.PodRef{{Uid: "u", Namespace: "ml", Name: "a"}}}, nil
	})
	c, err := New(Config{Address: eng.Addr}, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.TakeActivations(context.Background())
	if err != nil || len(r.GetPods()) != 1 || r.GetPods()[0].GetName() != "a" {
		t.Fatalf("TakeActivations = %v, %v", r, err)
	}
	if calls := eng.Calls(); len(calls) != 1 || calls[0] != "TakeActivations KUBERNETES" {
		t.Errorf("calls = %v", calls)
	}
}

// Replicas (engine/door_lease.h): the engine serves the Slurm door only on the replica whose
// scheduler leads, so the scheduler says whether it leads in the first message of every stream
// and again whenever its term changes (each renewal moves it), and says nothing while it does not.
func TestLeadershipGoesInTheSnapshotAndWheneverItChanges(t *testing.T) {
	eng := enginetest.Start(t, enginetest.Socket(t), "e")
	var mu sync.Mutex
	until := time.Time{} // standing by
	term := func() (bool, time.Time) {
		mu.Lock()
		defer mu.Unlock()
		return true, until
	}
	e := start(t, eng.Addr, Config{Holder: "tidal-scheduler@host-a", Leadership: term}, node("n0"))
	if err := e.client.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	first := eng.SyncMessages()[0]
	if l := first.GetLeadership(); l == nil || !l.GetElection() || l.GetLeadingUntilUnixMs() != 0 {
		t.Fatalf("snapshot's leadership = %v, want election on, standing by", l)
	}
	leads := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	mu.Lock()
	until = leads
	mu.Unlock()
	eng.WaitFor(t, "the new term", 3*time.Second, func() bool {
		for _, m := range eng.SyncMessages() {
			if !m.Resync && m.GetLeadership().GetLeadingUntilUnixMs() == leads.UnixMilli() {
				return true
			}
		}
		return false
	})
	time.Sleep(200 * time.Millisecond) // an unchanged term is not sent again
	sent := 0
	for _, m := range eng.SyncMessages() {
		if m.GetLeadership() != nil {
			sent++
		}
	}
	if sent != 2 {
		t.Fatalf("%d messages carried leadership, want 2 (the snapshot, the change)", sent)
	}
}
