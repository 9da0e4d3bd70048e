package engineclient

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/enginetest"
)

// A node condition the engine's nodeHealth rules read (GPU health tooling's GPUUnhealthy) reaches
// the engine as a node upsert when its type, status or reason changes; a heartbeat (new
// lastHeartbeatTime), a new message or lastTransitionTime alone sends nothing.
func TestNodeConditionChangeIsSentHeartbeatIsNot(t *testing.T) {
	sock := enginetest.Socket(t)
	eng := enginetest.Start(t, sock, "e")
	n0 := node("n0")
	beat := metav1.NewTime(time.Unix(1700000000, 0))
	n0.Status.Conditions = []v1.NodeCondition{
		{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: beat},
		{Type: "GPUUnhealthy", Status: v1.ConditionFalse, Reason: "AllGPUsHealthy", LastHeartbeatTime: beat},
	}
	e := start(t, eng.Addr, Config{FlushInterval: 10 * time.Millisecond}, n0)
	if err := e.client.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := eng.SyncMessages()[0].UpsertNodes; len(got) != 1 || len(got[0].Conditions) != 1 ||
		got[0].Conditions[0].Type != "GPUUnhealthy" || got[0].Conditions[0].Status != "False" {
		t.Fatalf("snapshot nodes %v: want n0 with its GPUUnhealthy condition (and not Ready)", got)
	}
	ctx := context.Background()
	// update changes n0's status with f and waits until the informer holds the change.
	update := func(f func(*v1.NodeStatus)) {
		t.Helper()
		n, err := e.cs.CoreV1().Nodes().Get(ctx, "n0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f(&n.Status)
		if _, err := e.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		want := n.Status.DeepCopy()
		eng.WaitFor(t, "the informer sees the update", 2*time.Second, func() bool {
			o, ok, _ := e.client.nodeStore.GetByKey("n0")
			cur, _ := o.(*v1.Node)
			return ok && cur != nil && len(cur.Status.Conditions) == len(want.Conditions) &&
				cur.Status.Conditions[1].LastHeartbeatTime.Equal(&want.Conditions[1].LastHeartbeatTime) &&
				cur.Status.Conditions[1].Message == want.Conditions[1].Message &&
				cur.Status.Conditions[1].Status == want.Conditions[1].Status
		})
	}
	upserts := func(from int) (out []*tidalv1.Node) {
		for _, m := range eng.SyncMessages()[from:] {
			out = append(out, m.UpsertNodes...)
		}
		return out
	}
	quiet := func(what string, from int) {
		t.Helper()
		time.Sleep(150 * time.Millisecond) // 15 flush intervals
		if got := upserts(from); len(got) != 0 {
			t.Errorf("%s sent %d node upserts (%v), want none", what, len(got), got)
		}
	}

	before := len(eng.SyncMessages())
	update(func(s *v1.NodeStatus) {
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.NewTime(beat.Add(10 * time.Second))
		}
	})
	quiet("a heartbeat", before)

	before = len(eng.SyncMessages())
	update(func(s *v1.NodeStatus) {
		s.Conditions[1].Status, s.Conditions[1].Reason = v1.ConditionTrue, "XidError79"
		s.Conditions[1].LastTransitionTime = metav1.NewTime(beat.Add(20 * time.Second))
	})
	eng.WaitFor(t, "GPUUnhealthy=True reaches the engine", 3*time.Second, func() bool {
		for _, n := range upserts(before) {
			if c := n.GetConditions(); n.Name == "n0" && len(c) == 1 && c[0].Status == "True" && c[0].Reason == "XidError79" {
				return n.Ready
			}
		}
		return false
	})

	before = len(eng.SyncMessages())
	update(func(s *v1.NodeStatus) {
		s.Conditions[1].Message = "GPU 3: Xid 79 (fallen off the bus), seen again"
		s.Conditions[1].LastHeartbeatTime = metav1.NewTime(beat.Add(30 * time.Second))
	})
	quiet("a new message and heartbeat", before)

	update(func(s *v1.NodeStatus) { s.Conditions[1].Reason = "XidError48" })
	eng.WaitFor(t, "a new reason reaches the engine", 3*time.Second, func() bool {
		for _, n := range upserts(before) {
			if c := n.GetConditions(); len(c) == 1 && c[0].Reason == "XidError48" {
				return true
			}
		}
		return false
	})
}
