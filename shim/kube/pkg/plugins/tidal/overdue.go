package tidal

// Runtime-limit enforcement with an older engine (one without the Disruptions RPC): pods that
// outran their declared tidal.dev/runtime-limit (plus the engine's grace) are evicted, so that the
// limits backfill plans with hold. The engine decides which pods are overdue (Overdue RPC); the
// shim only evicts them. A current engine reports them as Disruptions (cause runtime-limit), and
// the disruption poller (disruptions.go) calls this only when the engine answers Unimplemented.
//
// Threading: called from the disruption poller's goroutine; it reads the pod lister and writes
// events (p.event takes p.mu).

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// evictOverdue asks the engine once and evicts what it names; it returns the pods it evicted.
// A pod that is gone, replaced (another UID), already terminating or not this profile's is left
// alone; a failed eviction (e.g. a PodDisruptionBudget) is logged and tried again next time.
func (p *Plugin) evictOverdue(ctx context.Context) []string {
	resp, err := p.client.Overdue(ctx)
	if err != nil {
		p.logger.V(2).Info("runtime limits: engine not asked", "err", p.client.Describe(err))
		return nil
	}
	var evicted []string
	for _, o := range resp.GetPods() {
		ref := o.GetPod()
		pod := p.livePod(ref)
		if pod == nil || ref.GetUid() == "" || pod.Spec.SchedulerName != p.profile {
			continue
		}
		if err := p.evictPod(ctx, ref); err != nil {
			p.logger.Info("runtime limit: eviction failed; retried later", "pod", klog.KObj(pod), "err", err)
			continue
		}
		p.event(pod, v1.EventTypeWarning, ReasonRuntimeLimit, fmt.Sprintf("evicted by %s: %s", p.profile, o.GetReason()))
		p.logger.Info("runtime limit: evicted", "pod", klog.KObj(pod), "why", o.GetReason())
		evicted = append(evicted, key(pod))
	}
	return evicted
}
