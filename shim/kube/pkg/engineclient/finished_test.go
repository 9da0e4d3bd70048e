package engineclient

// Finished gang members in a snapshot (finished.go): an engine that restarted learns of the
// Succeeded members of a gang an earlier scheduler bound in part, which kube-scheduler's informer
// no longer has. Before, the snapshot named only the informer's pods and the rest of such a gang
// waited for good ("2 of 4 members exist").
//
// Threading: single goroutine; the client is never started, the snapshot is built directly.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

var created = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func pendingAt(ns, name string, t time.Time) *v1.Pod {
	p := pod(ns, name, "")
	p.CreationTimestamp = metav1.NewTime(t)
	return p
}

func finishedAt(ns, name string, start time.Time) *v1.Pod {
	p := withPhase(pod(ns, name, "n0"), v1.PodSucceeded)
	st := metav1.NewTime(start)
	p.Status.StartTime = &st
	return p
}

// clientWith: an unstarted client whose informer store holds pods, and a lister serving listed
// (by namespace; calls counted per namespace).
func clientWith(t *testing.T, cfg Config, pods []*v1.Pod, listed map[string][]*v1.Pod, fail error) (*Client, map[string]int) {
	t.Helper()
	c := unstartedClient(t)
	c.cfg.MaxMessageBytes = cfg.MaxMessageBytes
	if c.cfg.MaxMessageBytes == 0 {
		c.cfg.MaxMessageBytes = 1 << 20
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, p := range pods {
		if err := store.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	c.podStore = store
	calls := map[string]int{}
	c.SetFinishedLister(func(_ context.Context, ns string) ([]*v1.Pod, error) {
		calls[ns]++
		if fail != nil {
			return nil, fail
		}
		return listed[ns], nil
	})
	return c, calls
}

func snapshot(c *Client) []*tidalv1.SyncRequest {
	finished := c.finishedMembers(context.Background())
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshotLocked(finished)
}

func TestASnapshotNamesTheFinishedMembersOfNamespacesWithPendingPods(t *testing.T) {
	other := finishedAt("a", "other-scheduler", created.Add(time.Second))
	other.Spec.SchedulerName = "default-scheduler"
	unbound := finishedAt("a", "never-bound", created.Add(time.Second))
	unbound.Spec.NodeName = ""
	c, calls := clientWith(t, Config{},
		[]*v1.Pod{pendingAt("a", "h2", created), pendingAt("a", "h3", created.Add(time.Minute)), pod("b", "running", "n1")},
		map[string][]*v1.Pod{"a": {
			finishedAt("a", "h0", created.Add(time.Second)), // a member of this run: named
			finishedAt("a", "h1", created),                  // started as the run's first pod was created: named
			finishedAt("a", "earlier-run", created.Add(-time.Hour)),
			withPhase(finishedAt("a", "failed", created.Add(time.Second)), v1.PodFailed),
			other, unbound,
		}}, nil)
	msgs := snapshot(c)
	if calls["a"] != 1 || len(calls) != 1 {
		t.Errorf("lists per namespace %v, want only a (b has no pending pod)", calls)
	}
	last := msgs[len(msgs)-1]
	var names []string
	for _, p := range last.UpsertPods {
		if p.Phase == tidalv1.Pod_SUCCEEDED {
			names = append(names, p.Name)
		}
	}
	if len(names) != 2 || names[0] != "h0" || names[1] != "h1" {
		t.Fatalf("finished pods named %v, want [h0 h1]", names)
	}
	if len(last.VanishedPods) != 2 || last.VanishedPods[0] != "a-h0" || last.VanishedPods[1] != "a-h1" {
		t.Errorf("vanished_pods = %v, want [a-h0 a-h1] (the engine keeps no finished pod)", last.VanishedPods)
	}
	if p, _, _ := countObjects(msgs); p != 5 {
		t.Errorf("%d pods upserted, want the informer's 3 and the 2 finished", p)
	}
}

// A finished pod the informer still has is sent as the informer has it, not looked up again; a
// namespace whose list fails is skipped, and the snapshot is still made.
func TestFinishedMembersSkipKnownPodsAndFailedLists(t *testing.T) {
	known := finishedAt("a", "h0", created.Add(time.Second))
	c, _ := clientWith(t, Config{}, []*v1.Pod{pendingAt("a", "h2", created), known},
		map[string][]*v1.Pod{"a": {known}}, nil)
	if f := c.finishedMembers(context.Background()); len(f) != 0 {
		t.Errorf("named %d finished pods the informer has, want 0", len(f))
	}
	c, calls := clientWith(t, Config{}, []*v1.Pod{pendingAt("a", "h2", created)}, nil, errors.New("forbidden"))
	msgs := snapshot(c)
	if calls["a"] != 1 || len(msgs) != 1 || len(msgs[0].UpsertPods) != 1 || len(msgs[0].VanishedPods) != 0 {
		t.Errorf("lists %v, messages %v: want one snapshot of the informer's pod", calls, msgs)
	}
}

// In a chunked snapshot each finished pod's final state and its vanish travel in one message, at
// or after the one carrying the last of the informer's pods (its gang's pending members exist by
// then, so the engine counts it for that gang).
func TestFinishedMembersComeAfterEveryPodInTheirOwnChunk(t *testing.T) {
	var pods, done []*v1.Pod
	for i := 0; i < 40; i++ {
		pods = append(pods, pendingAt("a", "p"+string(rune('a'+i%26))+string(rune('a'+i/26)), created))
		done = append(done, finishedAt("a", "d"+string(rune('a'+i%26))+string(rune('a'+i/26)), created.Add(time.Second)))
	}
	c, _ := clientWith(t, Config{MaxMessageBytes: 2048}, pods, map[string][]*v1.Pod{"a": done}, nil)
	msgs := snapshot(c)
	if len(msgs) < 3 {
		t.Fatalf("%d messages, want a chunked snapshot", len(msgs))
	}
	lastPending, finished := -1, 0
	for i, m := range msgs {
		vanished := map[string]bool{}
		for _, u := range m.VanishedPods {
			vanished[u] = true
		}
		for _, p := range m.UpsertPods {
			if p.Phase != tidalv1.Pod_SUCCEEDED {
				lastPending = i
				continue
			}
			finished++
			if !vanished[p.Uid] {
				t.Errorf("message %d names %s Succeeded but not vanished", i, p.Name)
			}
			if i < lastPending {
				t.Errorf("message %d names %s before the informer's last pod (message %d)", i, p.Name, lastPending)
			}
		}
		if len(m.VanishedPods) > len(m.UpsertPods) {
			t.Errorf("message %d vanishes pods it does not name", i)
		}
	}
	if finished != 40 {
		t.Errorf("%d finished pods named, want 40", finished)
	}
}

// With many namespaces with pending pods, one list over all namespaces, filtered by namespace.
func TestFinishedMembersOfManyNamespacesTakeOneList(t *testing.T) {
	var pending []*v1.Pod
	var all []*v1.Pod
	for i := 0; i <= listPerNamespaceMax; i++ {
		ns := fmt.Sprintf("ns-%02d", i)
		pending = append(pending, pendingAt(ns, "w", created))
		all = append(all, finishedAt(ns, "done", created.Add(time.Second)))
	}
	all = append(all, finishedAt("quiet", "done", created.Add(time.Second))) // no pending pod there
	c, calls := clientWith(t, Config{}, pending, map[string][]*v1.Pod{"": all}, nil)
	f := c.finishedMembers(context.Background())
	if len(calls) != 1 || calls[""] != 1 {
		t.Errorf("lists %v, want one over all namespaces", calls)
	}
	if len(f) != listPerNamespaceMax+1 {
		t.Errorf("named %d finished pods, want %d (not the one of a namespace without pending pods)", len(f), listPerNamespaceMax+1)
	}
	for _, p := range f {
		if p.Namespace == "quiet" {
			t.Errorf("named %s/%s, whose namespace has no pending pod", p.Namespace, p.Name)
		}
	}
}

// An API server that does not answer delays a snapshot by finishedBudget at most, for all its
// lists together; the snapshot is still made.
func TestAnUnansweredListDelaysASnapshotByTheBudgetAtMost(t *testing.T) {
	old := finishedBudget
	finishedBudget = 200 * time.Millisecond
	t.Cleanup(func() { finishedBudget = old })
	c := unstartedClient(t)
	c.cfg.MaxMessageBytes = 1 << 20
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, ns := range []string{"a", "b", "c"} {
		if err := store.Add(pendingAt(ns, "w", created)); err != nil {
			t.Fatal(err)
		}
	}
	c.podStore = store
	c.SetFinishedLister(func(ctx context.Context, _ string) ([]*v1.Pod, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	began := time.Now()
	msgs := snapshot(c)
	if d := time.Since(began); d > time.Second {
		t.Errorf("the snapshot waited %v for three unanswered lists, want about the 200 ms budget", d)
	}
	if p, _, _ := countObjects(msgs); p != 3 {
		t.Errorf("%d pods in the snapshot, want the informer's 3", p)
	}
}
