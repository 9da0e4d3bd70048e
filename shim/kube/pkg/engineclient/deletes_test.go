package engineclient

// How deletes reach the engine when they are coalesced with the update before them: a member that
// finished and was deleted before the Sync stream flushed must reach the engine as "Succeeded,
// then deleted", never as a bare delete of a pod the engine thinks runs (a lost member: its whole
// gang would be evicted). A tombstone (gone on a relist) is sent as vanished: unknown, not lost.
//
// Threading: single goroutine; the client is never started, takePending is called directly.

import (
	"testing"

	v1 "k8s.io/api/core/v1"
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

func TestARunningPodsDeleteIsABareDelete(t *testing.T) {
	c := unstartedClient(t)
	c.deletePod(withPhase(pod("ns", "r", "n0"), v1.PodRunning), false)
	m := onlyMessage(t, c)
	if len(m.UpsertPods) != 0 || len(m.DeletePods) != 1 || len(m.VanishedPods) != 0 {
		t.Fatalf("upserts %v deletes %v vanished %v: want one delete", m.UpsertPods, m.DeletePods, m.VanishedPods)
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
