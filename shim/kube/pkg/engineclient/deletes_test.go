package engineclient

// How deletes reach the engine when they are coalesced with the update before them: a member that
// finished and was deleted before the Sync stream flushed must reach the engine as "Succeeded,
// then deleted", never as a bare delete of a pod the engine thinks runs (a lost member: its whole
// gang would be evicted). A tombstone (gone on a relist) is sent as vanished: unknown, not lost.
//
// Threading: single goroutine; the client is never started, takePending is called directly.

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

func unstartedClient(t *testing.T) *Client {
	t.Helper()
	c, err := New(Config{Address: "unix:///nonexistent.sock"}, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func onlyMessage(t *testing.T, c *Client) *tidalv1.SyncRequest {
	t.Helper()
	msgs, _ := c.takePending()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	return msgs[0]
}

func withPhase(p *v1.Pod, phase v1.PodPhase) *v1.Pod {
	q := p.DeepCopy()
	q.Status.Phase = phase
	return q
}

func TestASucceededPodDeletedBeforeTheFlushReachesTheEngineAsSucceededThenDeleted(t *testing.T) {
	c := unstartedClient(t)
	running := withPhase(pod("ns", "m7", "n0"), v1.PodRunning)
	done := withPhase(running, v1.PodSucceeded)
	c.upsertPod(running, done)
	c.deletePod(done, false)
	m := onlyMessage(t, c)
	if len(m.DeletePods) != 1 || m.DeletePods[0] != string(done.UID) {
		t.Fatalf("delete_pods = %v, want [%s]", m.DeletePods, done.UID)
	}
	if len(m.UpsertPods) != 1 || m.UpsertPods[0].Uid != string(done.UID) || m.UpsertPods[0].Phase != tidalv1.Pod_SUCCEEDED {
		t.Fatalf("upsert_pods = %v: the final Succeeded state must travel with the delete", m.UpsertPods)
	}
	if len(m.VanishedPods) != 0 {
		t.Errorf("vanished_pods = %v for a delete the informer saw", m.VanishedPods)
	}
}

func TestAFailedPodsFinalStateTravelsWithItsDelete(t *testing.T) {
	c := unstartedClient(t)
	c.deletePod(withPhase(pod("ns", "f", "n0"), v1.PodFailed), false)
	m := onlyMessage(t, c)
	if len(m.UpsertPods) != 1 || m.UpsertPods[0].Phase != tidalv1.Pod_FAILED || len(m.DeletePods) != 1 {
		t.Fatalf("upserts %v deletes %v: want the Failed state, then the delete", m.UpsertPods, m.DeletePods)
	}
}

func TestATerminatingRunningPodsDeleteIsABareDelete(t *testing.T) {
	c := unstartedClient(t)
	looked := false
	c.SetPodLookup(func(context.Context, string, string) (*v1.Pod, error) { looked = true; return nil, nil })
	p := withPhase(pod("ns", "r", "n0"), v1.PodRunning)
	now := metav1.Now()
	p.DeletionTimestamp = &now // deleted while running: the informer saw it terminate
	c.deletePod(p, false)
	m := onlyMessage(t, c)
	if len(m.UpsertPods) != 0 || len(m.DeletePods) != 1 || len(m.VanishedPods) != 0 {
		t.Fatalf("upserts %v deletes %v vanished %v: want one delete", m.UpsertPods, m.DeletePods, m.VanishedPods)
	}
	if looked {
		t.Errorf("a delete seen coming needs no lookup")
	}
}

// Bug (the soak, issue 14): kube-scheduler's informer filters out Succeeded and Failed pods, so a
// member that finished reached the shim as a delete of a Running pod and the engine evicted the
// rest of its gang as "member lost". The client looks such a delete up.
func TestADeleteOfARunningPodWithoutDeletionIsLookedUp(t *testing.T) {
	running := withPhase(pod("ns", "m", "n0"), v1.PodRunning)
	for _, tc := range []struct {
		name  string
		found *v1.Pod
		err   error
		phase tidalv1.Pod_Phase // the final state sent; -1: vanished
	}{
		{"finished", withPhase(running, v1.PodSucceeded), nil, tidalv1.Pod_SUCCEEDED},
		{"failed", withPhase(running, v1.PodFailed), nil, tidalv1.Pod_FAILED},
		{"gone", nil, nil, -1},
		{"unreadable", nil, errors.New("timeout"), -1},
		{"replaced under its name", func() *v1.Pod { q := withPhase(running, v1.PodSucceeded); q.UID = "other"; return q }(), nil, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := unstartedClient(t)
			c.SetPodLookup(func(_ context.Context, ns, name string) (*v1.Pod, error) {
				if ns != "ns" || name != "m" {
					t.Errorf("looked up %s/%s", ns, name)
				}
				return tc.found, tc.err
			})
			c.deletePod(running, false)
			m := onlyMessage(t, c)
			if tc.phase < 0 {
				if len(m.VanishedPods) != 1 || len(m.DeletePods) != 0 || len(m.UpsertPods) != 0 {
					t.Fatalf("upserts %v deletes %v vanished %v: want vanished (unknown is never lost)", m.UpsertPods, m.DeletePods, m.VanishedPods)
				}
				return
			}
			if len(m.UpsertPods) != 1 || m.UpsertPods[0].Phase != tc.phase || len(m.DeletePods) != 1 {
				t.Fatalf("upserts %v deletes %v: want the %v state, then the delete", m.UpsertPods, m.DeletePods, tc.phase)
			}
		})
	}
	c := unstartedClient(t) // no lookup installed: unknown
	c.deletePod(running, false)
	if m := onlyMessage(t, c); len(m.VanishedPods) != 1 {
		t.Fatalf("without a lookup: vanished %v", m.VanishedPods)
	}
}

func TestATombstoneIsSentAsVanishedNotDeleted(t *testing.T) {
	c := unstartedClient(t)
	c.deletePod(withPhase(pod("ns", "t", "n0"), v1.PodRunning), true)
	m := onlyMessage(t, c)
	if len(m.VanishedPods) != 1 || m.VanishedPods[0] != "ns-t" || len(m.DeletePods) != 0 || len(m.UpsertPods) != 0 {
		t.Fatalf("upserts %v deletes %v vanished %v: want ns-t vanished only", m.UpsertPods, m.DeletePods, m.VanishedPods)
	}
}
