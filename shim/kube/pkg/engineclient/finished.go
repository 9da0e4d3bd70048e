package engineclient

// Finished members of gangs still waiting, named in a resync snapshot.
//
// kube-scheduler's pod informer drops Succeeded pods, so an engine that restarts (not a failover:
// a standby's engine saw them finish) would never learn that members of a gang an earlier
// scheduler bound in part (a leader killed mid-bind) already ran and finished; the rest would wait
// for a whole gang that can never form again. Before each snapshot the client lists, in every
// namespace with a pending pod, the Succeeded pods of the same schedulers that started no earlier
// than that namespace's earliest pending pod was created (the engine decides which gang, if any,
// each belongs to, and counts only members of the run still pending: engine_plan.cc). The
// snapshot's last messages name each in its final state and as vanished in the same message: the
// engine counts it (once, by uid) and keeps no pod of it.
//
// The lists are one per namespace, or one over all namespaces when more than listPerNamespaceMax
// have pending pods, all within finishedBudget: an API server that is slow or down delays a
// snapshot (an engine's recovery) by that much at most. A list that fails or runs out of time skips
// its namespaces (logged), never the snapshot.
//
// Threading: finishedMembers runs on the stream goroutine before the snapshot, holding c.mu only
// to read the lister and the store.

import (
	"context"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/convert"
)

// FinishedLister lists the Succeeded pods of a namespace ("": of all) from the API server.
type FinishedLister func(ctx context.Context, namespace string) ([]*v1.Pod, error)

const (
	// maxFinishedMembers bounds what one snapshot names (a namespace of finished Jobs can hold many).
	maxFinishedMembers = 10000
	// listPerNamespaceMax: with more namespaces with pending pods, one list over all namespaces.
	listPerNamespaceMax = 16
)

// finishedBudget bounds all of a snapshot's lists together (a variable for tests).
var finishedBudget = 5 * time.Second

// SetFinishedLister installs the lookup of finished gang members for snapshots (see the file
// comment). Without one, a snapshot names only the informer's pods.
func (c *Client) SetFinishedLister(l FinishedLister) {
	c.mu.Lock()
	c.finishedLister = l
	c.mu.Unlock()
}

// pendingSince: per namespace with a pending pod, the earliest creation of one and the schedulers
// they name; known: every pod uid in the informer's store.
func pendingSince(pods []interface{}) (since map[string]time.Time, schedulers map[string]map[string]bool, known map[types.UID]bool) {
	since, schedulers, known = map[string]time.Time{}, map[string]map[string]bool{}, map[types.UID]bool{}
	for _, o := range pods {
		p, ok := o.(*v1.Pod)
		if !ok {
			continue
		}
		known[p.UID] = true
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || terminal(p) {
			continue
		}
		if t, seen := since[p.Namespace]; !seen || p.CreationTimestamp.Time.Before(t) {
			since[p.Namespace] = p.CreationTimestamp.Time
		}
		if schedulers[p.Namespace] == nil {
			schedulers[p.Namespace] = map[string]bool{}
		}
		schedulers[p.Namespace][p.Spec.SchedulerName] = true
	}
	return since, schedulers, known
}

// finishedMembers: the Succeeded pods a snapshot names (see the file comment), in namespace order.
func (c *Client) finishedMembers(ctx context.Context) []*tidalv1.Pod {
	c.mu.Lock()
	lister, store := c.finishedLister, c.podStore
	c.mu.Unlock()
	if lister == nil || store == nil {
		return nil
	}
	since, schedulers, known := pendingSince(store.List())
	namespaces := make([]string, 0, len(since))
	for ns := range since {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	if len(namespaces) > listPerNamespaceMax {
		namespaces = []string{""}
	}
	bctx, cancel := context.WithTimeout(ctx, finishedBudget)
	defer cancel()
	var out []*tidalv1.Pod
	for _, ns := range namespaces {
		pods, err := lister(bctx, ns)
		if err != nil {
			c.logger.Info("Could not list finished pods for a snapshot; a gang there that an earlier scheduler bound in part may wait for its finished members",
				"namespace", ns, "err", err, "budget", finishedBudget)
			if bctx.Err() != nil {
				return out // the budget is spent: the namespaces left would fail the same way
			}
			continue
		}
		for _, p := range pods {
			s, pending := since[p.Namespace]
			if !pending || p.Status.Phase != v1.PodSucceeded || p.Spec.NodeName == "" || known[p.UID] ||
				!schedulers[p.Namespace][p.Spec.SchedulerName] || p.Status.StartTime == nil || p.Status.StartTime.Time.Before(s) {
				continue
			}
			if len(out) == maxFinishedMembers {
				c.logger.Info("A snapshot names at most this many finished pods of namespaces with pending pods; the rest are left out",
					"limit", maxFinishedMembers, "namespace", ns)
				return out
			}
			out = append(out, convert.Pod(p))
		}
	}
	return out
}
