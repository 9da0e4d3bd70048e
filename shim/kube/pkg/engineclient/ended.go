package engineclient

// How a deleted pod ended, for the engine's lost-member rule (a rigid gang whose member is
// deleted while running, or fails, is requeued whole; one whose member finished is not).
//
// kube-scheduler's pod informer filters out Succeeded and Failed pods
// (status.phase!=Succeeded,status.phase!=Failed). A pod that finishes therefore reaches the
// informer as a delete whose object is its state before (Running, no deletionTimestamp): the API
// server sends the previous object when one stops matching a watch's selector. Such a delete is
// ambiguous (it finished, it failed, or it was force-deleted), so it is looked up: found with its
// UID and a terminal phase, that state goes to the engine before the delete; gone or unreadable,
// it goes as vanished (unknown, never "lost"). A delete of a pod that was terminating is a delete
// the informer saw coming (the engine counted the running member lost on the terminating update).
//
// Threading: howItEnded runs on the informer's handler goroutine, without c.mu; the lookup is a
// GET bounded by lookupTimeout (it delays only this client's later notifications).

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/convert"
)

const lookupTimeout = 2 * time.Second

// PodLookup reads a pod from the API server (nil, nil when it does not exist).
type PodLookup func(ctx context.Context, namespace, name string) (*v1.Pod, error)

// SetPodLookup installs the lookup of ambiguous deletes (see the file comment). Without one, such
// a delete goes as vanished.
func (c *Client) SetPodLookup(l PodLookup) {
	c.mu.Lock()
	c.lookup = l
	c.mu.Unlock()
}

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// howItEnded: the final state to send before the delete (nil: none), or vanished.
func (c *Client) howItEnded(p *v1.Pod, tombstone bool) (final *tidalv1.Pod, vanished bool) {
	switch {
	case tombstone:
		return nil, true
	case terminal(p):
		return convert.Pod(p), false
	case p.DeletionTimestamp != nil || p.Spec.NodeName == "":
		return nil, false // a delete seen coming, or of a pod that never ran
	}
	c.mu.Lock()
	lookup := c.lookup
	c.mu.Unlock()
	if lookup == nil {
		return nil, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	now, err := lookup(ctx, p.Namespace, p.Name)
	if err != nil || now == nil || now.UID != p.UID || !terminal(now) {
		// Gone (reaped, force-deleted), replaced under its name, or unreadable: unknown.
		return nil, true
	}
	return convert.Pod(now), false
}
