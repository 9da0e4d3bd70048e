package leader

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a lease lock whose writes fail while fail is set.
type fakeLock struct {
	id   string
	fail bool
}

func (f *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return nil, nil, errors.New("unused")
}
func (f *fakeLock) Create(_ context.Context, _ resourcelock.LeaderElectionRecord) error {
	return f.err()
}
func (f *fakeLock) Update(_ context.Context, _ resourcelock.LeaderElectionRecord) error {
	return f.err()
}
func (f *fakeLock) RecordEvent(string) {}
func (f *fakeLock) Identity() string   { return f.id }
func (f *fakeLock) Describe() string   { return "fake/" + f.id }
func (f *fakeLock) err() error {
	if f.fail {
		return errors.New("conflict")
	}
	return nil
}

// clock is a settable time source for a state.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestState() (*state, *clock) {
	c := &clock{t: time.Unix(1000, 0)}
	s := newState()
	s.now = c.now
	return s, c
}

func rec(holder string) resourcelock.LeaderElectionRecord {
	return resourcelock.LeaderElectionRecord{HolderIdentity: holder}
}

func TestNotEnabledAlwaysLeads(t *testing.T) {
	s, _ := newTestState()
	if !s.leading() {
		t.Fatal("leader election off: Leading must be true")
	}
	if err := s.wait(context.Background()); err != nil {
		t.Fatalf("wait without election: %v", err)
	}
}

func TestStandbyUntilOwnRenewal(t *testing.T) {
	s, c := newTestState()
	s.enable(3 * time.Second)
	inner := &fakeLock{id: "me"}
	l := &watchedLock{Interface: inner, st: s}
	if s.leading() {
		t.Fatal("enabled, no renewal yet: must be standby")
	}
	// A failed acquisition attempt (another replica holds the lease) is not a renewal.
	inner.fail = true
	if err := l.Update(context.Background(), rec("me")); err == nil {
		t.Fatal("fake should fail")
	}
	if s.leading() {
		t.Fatal("failed Update must not make us leader")
	}
	// A successful write that names another holder is not ours either.
	inner.fail = false
	_ = l.Update(context.Background(), rec("other"))
	if s.leading() {
		t.Fatal("an Update naming another holder must not make us leader")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := s.wait(ctx); err == nil {
		t.Fatal("wait must block while standing by")
	}
	if err := l.Create(context.Background(), rec("me")); err != nil {
		t.Fatal(err)
	}
	if !s.leading() {
		t.Fatal("after our own Create we lead")
	}
	if err := s.wait(context.Background()); err != nil {
		t.Fatalf("wait after election: %v", err)
	}
	// Renewals that keep failing: the term ends renewDeadline after the last good one started.
	c.t = c.t.Add(2900 * time.Millisecond)
	if !s.leading() {
		t.Fatal("2.9 s after the renewal (deadline 3 s) we still lead")
	}
	c.t = c.t.Add(200 * time.Millisecond)
	if s.leading() {
		t.Fatal("3.1 s after the last renewal we must stop writing")
	}
	_ = l.Update(context.Background(), rec("me"))
	if !s.leading() {
		t.Fatal("a fresh renewal makes us lead again")
	}
	// Release at shutdown (empty holder) ends the term at once.
	_ = l.Update(context.Background(), rec(""))
	if s.leading() {
		t.Fatal("after releasing the lease we must not write")
	}
}

// The renewal counts from when the write started, not when it returned: a slow API server
// must not stretch our term past the lease the server recorded.
func TestRenewalCountsFromWriteStart(t *testing.T) {
	s, c := newTestState()
	s.enable(3 * time.Second)
	slow := &slowLock{fakeLock: fakeLock{id: "me"}, c: c, took: 2 * time.Second}
	l := &watchedLock{Interface: slow, st: s}
	_ = l.Update(context.Background(), rec("me"))
	c.t = c.t.Add(1500 * time.Millisecond) // 3.5 s after the write started
	if s.leading() {
		t.Fatal("term must run from the start of the write")
	}
}

type slowLock struct {
	fakeLock
	c    *clock
	took time.Duration
}

func (s *slowLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	s.c.t = s.c.t.Add(s.took)
	return s.fakeLock.Update(ctx, r)
}

// Term is what the engine is told (engine/door_lease.h): the same bound Leading uses.
func TestTermIsTheLastRenewalPlusRenewDeadline(t *testing.T) {
	s, c := newTestState()
	if election, until := s.term(); election || !until.IsZero() {
		t.Fatalf("election off: term = %v %v, want false, zero", election, until)
	}
	s.enable(2 * time.Second)
	if election, until := s.term(); !election || !until.IsZero() {
		t.Fatalf("standing by: term = %v %v, want true, zero", election, until)
	}
	lock := &watchedLock{Interface: &fakeLock{id: "me"}, st: s}
	if err := lock.Update(context.Background(), rec("me")); err != nil {
		t.Fatal(err)
	}
	if _, until := s.term(); !until.Equal(c.t.Add(2 * time.Second)) {
		t.Fatalf("leading: until = %v, want %v", until, c.t.Add(2*time.Second))
	}
	if err := lock.Update(context.Background(), rec("other")); err != nil { // released
		t.Fatal(err)
	}
	if _, until := s.term(); !until.IsZero() {
		t.Fatalf("released: until = %v, want zero", until)
	}
}
