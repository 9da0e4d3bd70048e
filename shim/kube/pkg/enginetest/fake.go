// Package enginetest is an in-process fake tidal-engine (a real gRPC server on a unix socket) for
// the shim's unit tests. It records every Sync message and unary call; each unary answer comes from
// a settable function (default: SUCCESS with nothing else).
//
// Threading: safe for concurrent use; the gRPC server calls handlers on its own goroutines.
package enginetest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

// Fake is one fake engine process. Stop it and Start another on the same socket to simulate a
// restart (a new epoch).
type Fake struct {
	tidalv1.UnimplementedEngineServer
	Epoch string
	Addr  string // unix:///...

	mu       sync.Mutex
	syncMsgs []*tidalv1.SyncRequest
	calls    []string
	changed  chan struct{}
	delay    time.Duration

	CheckPodFn  func(*tidalv1.PodRef) *tidalv1.CheckPodResponse
	PlanPodFn   func(*tidalv1.PodRef) *tidalv1.PlanResponse
	ReserveFn   func(*tidalv1.ReserveRequest) *tidalv1.ReserveResponse
	UnreserveFn func(*tidalv1.PodRef) *tidalv1.UnreserveResponse
	PermitFn    func(*tidalv1.PodRef) *tidalv1.PermitResponse
	PreemptFn   func(*tidalv1.PodRef) *tidalv1.PreemptResponse
	BoundFn     func(*tidalv1.ReserveRequest) *tidalv1.BoundResponse
	OverdueFn   func() *tidalv1.OverdueResponse
	EvictedFn   func(*tidalv1.EvictedRequest) *tidalv1.EvictedResponse

	srv *grpc.Server
}

// Socket returns a fresh socket path in a temporary directory of t (short enough for sun_path).
func Socket(t testing.TB) string {
	dir, err := os.MkdirTemp("", "tidal-fake-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "engine.sock")
}

// Start serves a fake engine with the given epoch on the unix socket path sock.
func Start(t testing.TB, sock, epoch string) *Fake {
	t.Helper()
	os.Remove(sock)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("listen %s: %v", sock, err)
	}
	f := &Fake{Epoch: epoch, Addr: "unix://" + sock, changed: make(chan struct{}, 1), srv: grpc.NewServer()}
	tidalv1.RegisterEngineServer(f.srv, f)
	go func() { _ = f.srv.Serve(lis) }()
	t.Cleanup(f.Stop)
	return f
}

// Stop kills the server at once (open streams break, like kill -9).
func (f *Fake) Stop() { f.srv.Stop() }

// SetDelay makes every unary call sleep d first.
func (f *Fake) SetDelay(d time.Duration) {
	f.mu.Lock()
	f.delay = d
	f.mu.Unlock()
}

// SyncMessages returns a copy of the Sync messages received so far.
func (f *Fake) SyncMessages() []*tidalv1.SyncRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*tidalv1.SyncRequest(nil), f.syncMsgs...)
}

// Calls returns the unary calls received so far, as "Method namespace/name[@node]".
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// WaitFor polls cond (with the lock released) until it holds or timeout passes.
func (f *Fake) WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		select {
		case <-f.changed:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (f *Fake) notify() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *Fake) record(call string) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	d := f.delay
	f.mu.Unlock()
	f.notify()
	if d > 0 {
		time.Sleep(d)
	}
}

func key(r *tidalv1.PodRef) string { return r.GetNamespace() + "/" + r.GetName() }

// Sync acknowledges every message with the fake's epoch and a growing generation.
func (f *Fake) Sync(s grpc.BidiStreamingServer[tidalv1.SyncRequest, tidalv1.SyncAck]) error {
	var gen uint64
	for {
		m, err := s.Recv()
		if err != nil {
			return nil
		}
		f.mu.Lock()
		f.syncMsgs = append(f.syncMsgs, m)
		f.mu.Unlock()
		f.notify()
		gen++
		if err := s.Send(&tidalv1.SyncAck{EngineEpoch: f.Epoch, Generation: gen, Status: &tidalv1.Status{}}); err != nil {
			return nil
		}
	}
}

func (f *Fake) CheckPod(_ context.Context, r *tidalv1.PodRef) (*tidalv1.CheckPodResponse, error) {
	f.record("CheckPod " + key(r))
	if f.CheckPodFn != nil {
		return f.CheckPodFn(r), nil
	}
	return &tidalv1.CheckPodResponse{Status: &tidalv1.Status{}, Gang: key(r)}, nil
}

func (f *Fake) PlanPod(_ context.Context, r *tidalv1.PodRef) (*tidalv1.PlanResponse, error) {
	f.record("PlanPod " + key(r))
	if f.PlanPodFn != nil {
		return f.PlanPodFn(r), nil
	}
	return &tidalv1.PlanResponse{Status: &tidalv1.Status{}, NodeName: "node-0", Gang: key(r)}, nil
}

func (f *Fake) Reserve(_ context.Context, r *tidalv1.ReserveRequest) (*tidalv1.ReserveResponse, error) {
	f.record("Reserve " + key(r.GetPod()) + "@" + r.GetNodeName())
	if f.ReserveFn != nil {
		return f.ReserveFn(r), nil
	}
	return &tidalv1.ReserveResponse{Status: &tidalv1.Status{}}, nil
}

func (f *Fake) Unreserve(_ context.Context, r *tidalv1.PodRef) (*tidalv1.UnreserveResponse, error) {
	f.record("Unreserve " + key(r))
	if f.UnreserveFn != nil {
		return f.UnreserveFn(r), nil
	}
	return &tidalv1.UnreserveResponse{}, nil
}

func (f *Fake) Permit(_ context.Context, r *tidalv1.PodRef) (*tidalv1.PermitResponse, error) {
	f.record("Permit " + key(r))
	if f.PermitFn != nil {
		return f.PermitFn(r), nil
	}
	return &tidalv1.PermitResponse{Status: &tidalv1.Status{}, Allow: []*tidalv1.PodRef{r}}, nil
}

func (f *Fake) Preempt(_ context.Context, r *tidalv1.PodRef) (*tidalv1.PreemptResponse, error) {
	f.record("Preempt " + key(r))
	if f.PreemptFn != nil {
		return f.PreemptFn(r), nil
	}
	return &tidalv1.PreemptResponse{Status: &tidalv1.Status{Code: tidalv1.Status_UNSCHEDULABLE, Reasons: []string{"no victims"}}}, nil
}

func (f *Fake) Bound(_ context.Context, r *tidalv1.ReserveRequest) (*tidalv1.BoundResponse, error) {
	f.record("Bound " + key(r.GetPod()) + "@" + r.GetNodeName())
	if f.BoundFn != nil {
		return f.BoundFn(r), nil
	}
	return &tidalv1.BoundResponse{Status: &tidalv1.Status{}}, nil
}

func (f *Fake) Explain(_ context.Context, r *tidalv1.ExplainRequest) (*tidalv1.ExplainResponse, error) {
	f.record("Explain " + r.GetWorkload())
	return &tidalv1.ExplainResponse{Status: &tidalv1.Status{}, Text: "fake: " + r.GetWorkload() + "\n"}, nil
}

func (f *Fake) Overdue(_ context.Context, _ *tidalv1.OverdueRequest) (*tidalv1.OverdueResponse, error) {
	f.record("Overdue")
	if f.OverdueFn != nil {
		return f.OverdueFn(), nil
	}
	return &tidalv1.OverdueResponse{Status: &tidalv1.Status{}}, nil
}

// Evicted records "Evicted ns/preemptor pods=ns/a,ns/b protected=id,id".
func (f *Fake) Evicted(_ context.Context, r *tidalv1.EvictedRequest) (*tidalv1.EvictedResponse, error) {
	pods := make([]string, 0, len(r.GetPods()))
	for _, p := range r.GetPods() {
		pods = append(pods, key(p))
	}
	f.record("Evicted " + key(r.GetPreemptor()) + " pods=" + strings.Join(pods, ",") + " protected=" + strings.Join(r.GetProtectedGangs(), ","))
	if f.EvictedFn != nil {
		return f.EvictedFn(r), nil
	}
	return &tidalv1.EvictedResponse{Status: &tidalv1.Status{}}, nil
}
