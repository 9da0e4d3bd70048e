package tidal

// The lent-node taint (taints.go): kept on exactly the nodes the engine reports lent to Slurm, the
// nodes' other taints untouched, nothing written when nothing changes, and nothing at all when the
// engine does not report the set.

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

func nodeWithTaints(name string, taints ...v1.Taint) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{Taints: taints}}
}

func (e *env) taintsOf(name string) []v1.Taint {
	e.t.Helper()
	n, err := e.cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return n.Spec.Taints
}

func (e *env) nodeUpdates() int {
	n := 0
	for _, a := range e.cs.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == "nodes" {
			n++
		}
	}
	return n
}

func lentAnswer(known bool, nodes ...string) func(*tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error) {
	return func(*tidalv1.DisruptionsRequest) (*tidalv1.DisruptionsResponse, error) {
		return &tidalv1.DisruptionsResponse{Status: &tidalv1.Status{}, LentToSlurm: nodes, LendingKnown: known}, nil
	}
}

func TestLentNodesAreTaintedWhileLentAndOtherTaintsStay(t *testing.T) {
	gpu := v1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: v1.TaintEffectNoSchedule}
	e := newEnv(t, nodeWithTaints("k0", gpu), nodeWithTaints("k1"))
	ctx := context.Background()
	waitNodeTaint := func(name string, want bool) {
		e.eng.WaitFor(t, "the lister sees "+name, 3*time.Second, func() bool {
			n, err := e.plugin.nodes.Get(name)
			return err == nil && hasLentTaint(n) == want
		})
	}

	e.eng.SetDisruptionsFn(lentAnswer(true, "k0", "not-a-kubernetes-node"))
	e.plugin.disruptions.once(ctx)
	if got := e.taintsOf("k0"); len(got) != 2 || got[0] != gpu || got[1] != lentTaint() {
		t.Fatalf("k0 taints = %+v, want the GPU taint and %s=slurm:NoSchedule", got, LentTaintKey)
	}
	if got := e.taintsOf("k1"); len(got) != 0 {
		t.Fatalf("k1 (not lent) got taints %+v", got)
	}
	if n := e.nodeUpdates(); n != 1 {
		t.Fatalf("%d node updates, want 1", n)
	}
	waitNodeTaint("k0", true)
	e.plugin.disruptions.once(ctx)
	if n := e.nodeUpdates(); n != 1 {
		t.Errorf("%d node updates after a repeat of the same set, want still 1", n)
	}

	// An engine that does not report the set changes nothing.
	e.eng.SetDisruptionsFn(lentAnswer(false))
	e.plugin.disruptions.once(ctx)
	if n := e.nodeUpdates(); n != 1 {
		t.Errorf("lending_known false changed nodes (%d updates)", n)
	}

	// Returned: the taint goes, the GPU taint stays.
	e.eng.SetDisruptionsFn(lentAnswer(true))
	e.plugin.disruptions.once(ctx)
	if got := e.taintsOf("k0"); len(got) != 1 || got[0] != gpu {
		t.Fatalf("k0 taints after the return = %+v, want only the GPU taint", got)
	}
	waitNodeTaint("k0", false)
}
