package tidal

import (
	"testing"
	"time"
)

// A notice that ends before the next tick brings the next poll forward to just after its
// deadline, so its pods are evicted at the deadline rather than up to a poll later.
func TestNextWaitPollsAtTheEarliestNoticeDeadline(t *testing.T) {
	now := time.Unix(1000, 0)
	every := 500 * time.Millisecond
	cases := []struct {
		name     string
		deadline time.Time
		want     time.Duration
	}{
		{"no notice", time.Time{}, every},
		{"a deadline after the next tick", now.Add(3 * time.Second), every},
		{"a deadline before it", now.Add(200 * time.Millisecond), 220 * time.Millisecond},
		{"a deadline already past", now.Add(-time.Second), 10 * time.Millisecond},
	}
	for _, c := range cases {
		dp := &disruptionPoller{nextDeadline: c.deadline}
		if got := dp.nextWait(every, now); got != c.want {
			t.Errorf("%s: nextWait = %v, want %v", c.name, got, c.want)
		}
	}
}
