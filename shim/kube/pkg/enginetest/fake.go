// Package enginetest is an in-process fake tidal-engine (a real gRPC server on a unix socket) for
// the shim's unit tests. It records every Sync message and unary call; each unary answer comes from
// a settable function (default: SUCCESS with nothing else).
//
// Front doors: like tidal-engine, the fake keeps one lease per door (SyncRequest.door, unspecified =
// KUBERNETES). The first message of a Sync stream claims its door for SyncRequest.holder; another
// holder is refused with ABORTED (naming the holder, in the engine's words) while a stream of the
// current holder is open or closed under lease_ttl_ms ago (named holders only). Hold claims a door
// for a pretend holder of the test's; Admit is fenced by the lease (FAILED_PRECONDITION).
//
// Threading: safe for concurrent use; the gRPC server calls handlers on its own goroutines.
package enginetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
	leases   map[tidalv1.FrontDoor]*lease
	refused  []string // ABORTED messages, in order

	CheckPodFn        func(*tidalv1.PodRef) *tidalv1.CheckPodResponse
	PlanPodFn         func(*tidalv1.PodRef) *tidalv1.PlanResponse
	ReserveFn         func(*tidalv1.ReserveRequest) *tidalv1.ReserveResponse
	UnreserveFn       func(*tidalv1.PodRef) *tidalv1.UnreserveResponse
	PermitFn          func(*tidalv1.PodRef) *tidalv1.PermitResponse
	PreemptFn         func(*tidalv1.PodRef) *tidalv1.PreemptResponse
	BoundFn           func(*tidalv1.ReserveRequest) *tidalv1.BoundResponse
	OverdueFn         func() *tidalv1.OverdueResponse
	EvictedFn         func(*tidalv1.EvictedRequest) *tidalv1.EvictedResponse
	AdmitFn           func(*tidalv1.AdmitRequest) *tidalv1.AdmitResponse
	takeActivationsFn func(*tidalv1.TakeActivationsRequest) (*tidalv1.TakeActivationsResponse, error)
	disruptionsFn     func(*tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error)

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
	f := &Fake{Epoch: epoch, Addr: "unix://" + sock, changed: make(chan struct{}, 1), srv: grpc.NewServer(),
		leases: map[tidalv1.FrontDoor]*lease{}}
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

// lease: one door's holder. open counts its streams that are open (Hold counts as one).
type lease struct {
	holder string
	open   int
	until  time.Time // after the last stream closed: held until then (named holders)
	ttl    time.Duration
}

func door(d tidalv1.FrontDoor) tidalv1.FrontDoor {
	if d == tidalv1.FrontDoor_FRONT_DOOR_UNSPECIFIED {
		return tidalv1.FrontDoor_KUBERNETES
	}
	return d
}

// acquire claims d for holder, or returns the engine's refusal (door_lease.cc).
func (f *Fake) acquireLocked(d tidalv1.FrontDoor, holder string, ttlMs int64) error {
	l := f.leases[d]
	if l == nil {
		l = &lease{}
		f.leases[d] = l
	}
	open := l.open > 0
	lingering := !open && l.holder != "" && time.Now().Before(l.until)
	if open || (lingering && l.holder != holder) {
		who := "an anonymous holder"
		if l.holder != "" {
			who = fmt.Sprintf("holder %q", l.holder)
		}
		state := " (its Sync stream is open)"
		if !open {
			state = fmt.Sprintf(" (its stream closed; the lease lapses in %d ms)", time.Until(l.until).Milliseconds())
		}
		me := "an anonymous holder"
		if holder != "" {
			me = fmt.Sprintf("%q", holder)
		}
		msg := "front door " + d.String() + " is held by " + who + state + "; refusing " + me
		f.refused = append(f.refused, msg)
		return status.Error(codes.Aborted, msg)
	}
	l.holder, l.open, l.until = holder, 1, time.Time{}
	l.ttl = time.Duration(ttlMs) * time.Millisecond
	if ttlMs <= 0 {
		l.ttl = 15 * time.Second
	}
	return nil
}

func (f *Fake) releaseLocked(d tidalv1.FrontDoor) {
	l := f.leases[d]
	if l == nil || l.open == 0 {
		return
	}
	l.open--
	if l.open == 0 && l.holder != "" {
		l.until = time.Now().Add(l.ttl)
	}
}

// Hold claims door for holder as if its Sync stream were open (until Release); it fails the test
// if another holder has the door.
func (f *Fake) Hold(t testing.TB, d tidalv1.FrontDoor, holder string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.acquireLocked(door(d), holder, 1); err != nil {
		t.Fatalf("Hold: %v", err)
	}
}

// Release ends Hold: the lease lapses at once.
func (f *Fake) Release(d tidalv1.FrontDoor) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.leases[door(d)]; l != nil {
		l.open, l.until = 0, time.Time{}
	}
}

// Holder is the door's current holder ("" when nobody holds it).
func (f *Fake) Holder(d tidalv1.FrontDoor) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.leases[door(d)]; l != nil && (l.open > 0 || time.Now().Before(l.until)) {
		return l.holder
	}
	return ""
}

// Refused returns the messages of the Sync streams refused so far (ABORTED), in order.
func (f *Fake) Refused() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.refused...)
}

// Sync claims the first message's door for its holder (refusing the stream with ABORTED when
// another holder has it), then acknowledges every message with the fake's epoch and a growing
// generation. Messages of a refused stream are not recorded.
func (f *Fake) Sync(s grpc.BidiStreamingServer[tidalv1.SyncRequest, tidalv1.SyncAck]) error {
	var gen uint64
	var d tidalv1.FrontDoor
	claimed := false
	defer func() {
		if claimed {
			f.mu.Lock()
			f.releaseLocked(d)
			f.mu.Unlock()
		}
	}()
	for {
		m, err := s.Recv()
		if err != nil {
			return nil
		}
		f.mu.Lock()
		if !claimed {
			if !m.GetResync() {
				f.mu.Unlock()
				return status.Error(codes.FailedPrecondition, "resync: the first message of a Sync stream must be a full snapshot (resync=true)")
			}
			d = door(m.GetDoor())
			if err := f.acquireLocked(d, m.GetHolder(), m.GetLeaseTtlMs()); err != nil {
				f.mu.Unlock()
				f.notify()
				return err
			}
			claimed = true
		} else if m.GetDoor() != tidalv1.FrontDoor_FRONT_DOOR_UNSPECIFIED && m.GetDoor() != d {
			f.mu.Unlock()
			return status.Errorf(codes.InvalidArgument, "door: a Sync stream speaks for one door (%s), got %s", d, m.GetDoor())
		}
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

// Evicted records "Evicted ns/preemptor pods=ns/a,ns/b protected=id,id", plus " disruption=ID
// reason=R" when it names a disruption (no preemptor: "Evicted / pods=...").
func (f *Fake) Evicted(_ context.Context, r *tidalv1.EvictedRequest) (*tidalv1.EvictedResponse, error) {
	pods := make([]string, 0, len(r.GetPods()))
	for _, p := range r.GetPods() {
		pods = append(pods, key(p))
	}
	call := "Evicted " + key(r.GetPreemptor()) + " pods=" + strings.Join(pods, ",") + " protected=" + strings.Join(r.GetProtectedGangs(), ",")
	if r.GetDisruption() != "" {
		call += " disruption=" + r.GetDisruption() + " reason=" + r.GetReason()
	}
	f.record(call)
	if f.EvictedFn != nil {
		return f.EvictedFn(r), nil
	}
	return &tidalv1.EvictedResponse{Status: &tidalv1.Status{}}, nil
}

// Admit records "Admit DOOR holder"; it is refused (FAILED_PRECONDITION) unless holder holds the
// door's lease.
func (f *Fake) Admit(_ context.Context, r *tidalv1.AdmitRequest) (*tidalv1.AdmitResponse, error) {
	f.record("Admit " + door(r.GetDoor()).String() + " " + r.GetHolder())
	if f.Holder(r.GetDoor()) != r.GetHolder() {
		return nil, status.Errorf(codes.FailedPrecondition, "holder: %q does not hold the %s door's Sync lease (open a Sync stream first)",
			r.GetHolder(), door(r.GetDoor()))
	}
	if f.AdmitFn != nil {
		return f.AdmitFn(r), nil
	}
	return &tidalv1.AdmitResponse{Status: &tidalv1.Status{}}, nil
}

// SetTakeActivationsFn sets the answer of TakeActivations (nil: no pods); an error fails the call
// as it is (e.g. a status.Error). A setter, not a field: the shim polls it on its own goroutine.
func (f *Fake) SetTakeActivationsFn(fn func(*tidalv1.TakeActivationsRequest) (*tidalv1.TakeActivationsResponse, error)) {
	f.mu.Lock()
	f.takeActivationsFn = fn
	f.mu.Unlock()
}

// TakeActivations records "TakeActivations DOOR" (the door as sent: FRONT_DOOR_UNSPECIFIED stays).
func (f *Fake) TakeActivations(_ context.Context, r *tidalv1.TakeActivationsRequest) (*tidalv1.TakeActivationsResponse, error) {
	f.record("TakeActivations " + r.GetDoor().String())
	f.mu.Lock()
	fn := f.takeActivationsFn
	f.mu.Unlock()
	if fn != nil {
		return fn(r)
	}
	return &tidalv1.TakeActivationsResponse{}, nil
}

// SetDisruptionsFn sets the answer of Disruptions (nil: no disruptions); an error fails the call
// as it is (e.g. status.Error(codes.Unimplemented, ...) for an older engine). A setter, not a
// field: the shim polls it on its own goroutine.
func (f *Fake) SetDisruptionsFn(fn func(*tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error)) {
	f.mu.Lock()
	f.disruptionsFn = fn
	f.mu.Unlock()
}

// Disruptions records "Disruptions DOOR" (the door as sent).
func (f *Fake) Disruptions(_ context.Context, r *tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error) {
	f.record("Disruptions " + r.GetDoor().String())
	f.mu.Lock()
	fn := f.disruptionsFn
	f.mu.Unlock()
	if fn != nil {
		return fn(r)
	}
	return &tidalv1.DisruptionsResponse{Status: &tidalv1.Status{}}, nil
}
