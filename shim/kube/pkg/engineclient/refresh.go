// Refresh: re-sends pods whose conversion depends on more than the pod object itself (the
// upstream PodGroup a pod names, see convert/podgroup.go), when that other object changes. The pod
// informer reports no change then, so its handlers would not send the pod again.
//
// Threading: like the informer handlers, under c.mu.
package engineclient

import (
	v1 "k8s.io/api/core/v1"

	"github.com/tidal-sched/tidal/shim/kube/pkg/convert"
)

// Refresh converts the pods again and queues them for the next Sync batch, as updates (an unbound
// pod counts as a pending pod change: the batch's hooks retry its namespace's held pods).
func (c *Client) Refresh(pods []*v1.Pod) {
	if len(pods) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range pods {
		uid := string(p.UID)
		prev := c.pendingPods[uid]
		c.pendingPods[uid] = podOp{pod: convert.Pod(p), freed: prev.freed, pending: p.Spec.NodeName == "", ns: p.Namespace}
	}
	c.afterChangeLocked()
}
