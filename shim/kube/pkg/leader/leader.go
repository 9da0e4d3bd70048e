// Package leader says whether this tidal-scheduler process may write to the API server: it is
// the elected leader, or leader election is off.
//
// kube-scheduler (v1.36, cmd/kube-scheduler/app.Run) starts its informers before it runs for
// the lease, so a standby replica's plugin already streams the cluster to its own engine (and
// runs PreEnqueue on every pod): only the scheduling loop (and so binding) waits for the lease.
// Everything else the plugin writes (pod and node events, runtime-limit evictions, PodGroup
// status) asks Leading first, so a standby writes nothing.
//
// Leadership is read from the lease lock itself: tidal-scheduler's command wraps the lock
// kube-scheduler's LeaderElector uses (Wrap), and every Create/Update that names this process as
// the holder renews it. Leading is true while the last such renewal started less than
// renewDeadline ago - the bound client-go's elector itself uses before it gives up (and
// kube-scheduler exits). Without Enable (leader election off, or a test), Leading is always true.
//
// Threading: any goroutine; state is guarded by mu, and Wait's channel is closed once.
package leader

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

type state struct {
	mu       sync.Mutex
	enabled  bool          // leader election is on: Leading needs a fresh renewal
	deadline time.Duration // renewDeadline
	renewed  time.Time     // start of the last Create/Update naming us as holder
	elected  chan struct{} // closed at the first such renewal (or when not enabled)
	closed   bool
	now      func() time.Time
	renewals uint64
}

// cur is the process's state (one kube-scheduler per process); a pointer so tests can swap it.
var cur atomic.Pointer[state]

func init() { cur.Store(newState()) }

func newState() *state { return &state{elected: make(chan struct{}), now: time.Now} }

// Enable turns leader election on for this process: from now on Leading is true only while
// the lease was renewed by this process less than renewDeadline ago. Call it before the
// scheduler's informers start (tidal-scheduler's command does, right after app.Setup).
func Enable(renewDeadline time.Duration) { cur.Load().enable(renewDeadline) }

// Leading: this process may write to the API server.
func Leading() bool { return cur.Load().leading() }

// Term: whether leader election is on, and until when this process leads (its last renewal +
// renewDeadline, the same bound Leading uses; zero while standing by). The engine client sends it
// to the engine, which serves the Slurm door only on the leading replica (engine/door_lease.h).
func Term() (election bool, until time.Time) { return cur.Load().term() }

// Wait blocks until this process first leads (at once when leader election is off); it returns
// ctx's error if ctx ends first.
func Wait(ctx context.Context) error { return cur.Load().wait(ctx) }

// Wrap returns lock, recording every successful Create/Update that names lock's identity as the
// holder as a renewal.
func Wrap(lock resourcelock.Interface) resourcelock.Interface {
	return &watchedLock{Interface: lock, st: cur.Load()}
}

// StandbyForTest is for other packages' tests: it puts the process on standby (election on, no
// renewal yet) and returns elect, which makes it lead (for an hour), and restore, which brings
// back the state from before.
func StandbyForTest() (elect, restore func()) {
	old := cur.Load()
	s := newState()
	s.enable(time.Hour)
	cur.Store(s)
	return func() { s.renew(time.Now()) }, func() { cur.Store(old) }
}

func (s *state) enable(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.enabled, s.deadline = true, d
}

func (s *state) leading() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.enabled {
		return true
	}
	return s.renewals > 0 && s.now().Sub(s.renewed) < s.deadline
}

func (s *state) term() (bool, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.enabled {
		return false, time.Time{}
	}
	if s.renewals == 0 || s.renewed.IsZero() {
		return true, time.Time{}
	}
	return true, s.renewed.Add(s.deadline)
}

func (s *state) wait(ctx context.Context) error {
	s.mu.Lock()
	enabled, ch := s.enabled, s.elected
	s.mu.Unlock()
	if !enabled {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *state) renew(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at.After(s.renewed) {
		s.renewed = at
	}
	s.renewals++
	if !s.closed {
		s.closed = true
		close(s.elected)
	}
}

func (s *state) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewed = time.Time{}
}

type watchedLock struct {
	resourcelock.Interface
	st *state
}

func (l *watchedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	t0 := l.st.now()
	err := l.Interface.Create(ctx, r)
	l.record(err, r, t0)
	return err
}

func (l *watchedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	t0 := l.st.now()
	err := l.Interface.Update(ctx, r)
	l.record(err, r, t0)
	return err
}

// record: a write that succeeded and names us renews from its start (the lease's renewTime is
// set before the call, so the lease runs out no sooner than t0 + leaseDuration). One that
// succeeded and names no one or another (a release at shutdown) ends our term at once.
func (l *watchedLock) record(err error, r resourcelock.LeaderElectionRecord, t0 time.Time) {
	switch {
	case err != nil:
	case r.HolderIdentity != "" && r.HolderIdentity == l.Identity():
		l.st.renew(t0)
	default:
		l.st.release()
	}
}
