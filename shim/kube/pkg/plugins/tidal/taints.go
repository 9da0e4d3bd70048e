package tidal

// Taints on the Kubernetes pool's nodes the engine lends to Slurm. While Slurm has such a node
// (lent, or being reclaimed until Slurm's jobs there are gone) tidal-scheduler keeps the taint
// tidal.dev/lent-to=slurm:NoSchedule on it, so that no other scheduler's pods land there. Tidal's
// own pods do not either: the engine plans none there, and kube-scheduler's TaintToleration
// agrees. Each Disruptions answer carries the whole set (lent_to_slurm). The poller adds the taint
// where it is missing and removes it from nodes no longer lent. Only the taint with this key is
// touched: the node's other taints stay, and so does everything else about it (the
// ValidatingAdmissionPolicy in deploy/base/node-taint-policy.yaml refuses any other change by
// tidal-scheduler). An engine that does not report the set (lending_known false: an older one)
// changes nothing, and neither does an answer from an engine the Sync stream has not synced with
// (one that restarted under the call knows no loans yet).
//
// Threading: called from the disruption poller's goroutine only.

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

// LentTaintKey is the taint kept on a Kubernetes node while Slurm borrows it.
const LentTaintKey = "tidal.dev/lent-to"

func lentTaint() v1.Taint {
	return v1.Taint{Key: LentTaintKey, Value: "slurm", Effect: v1.TaintEffectNoSchedule}
}

func hasLentTaint(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == LentTaintKey {
			return true
		}
	}
	return false
}

// syncLentTaints makes the taint present on exactly the nodes of resp.lent_to_slurm; it returns
// the nodes it changed.
func (dp *disruptionPoller) syncLentTaints(ctx context.Context, resp *tidalv1.DisruptionsResponse) []string {
	if !resp.GetLendingKnown() {
		return nil
	}
	dp.mu.Lock()
	var p *Plugin
	if len(dp.plugins) > 0 {
		p = dp.plugins[0]
	}
	dp.mu.Unlock()
	if p == nil || p.handle == nil || p.nodes == nil {
		return nil
	}
	lent := make(map[string]bool, len(resp.GetLentToSlurm()))
	for _, n := range resp.GetLentToSlurm() {
		lent[n] = true
	}
	nodes, err := p.nodes.List(labels.Everything())
	if err != nil {
		return nil
	}
	var changed []string
	for _, n := range nodes {
		if lent[n.Name] == hasLentTaint(n) {
			continue
		}
		if err := setLentTaint(ctx, p.handle.ClientSet(), n.Name, lent[n.Name]); err != nil {
			dp.logger.V(2).Info("lent-node taint not changed; retried next poll", "node", n.Name, "lent", lent[n.Name], "err", err)
			continue
		}
		changed = append(changed, n.Name)
	}
	return changed
}

// setLentTaint adds (on) or removes the lent taint on one node, leaving its other taints alone.
// A node gone meanwhile is not an error.
func setLentTaint(ctx context.Context, cs kubernetes.Interface, node string, on bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if hasLentTaint(n) == on {
			return nil
		}
		var taints []v1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != LentTaintKey {
				taints = append(taints, t)
			}
		}
		if on {
			taints = append(taints, lentTaint())
		}
		n.Spec.Taints = taints
		_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}
