package tidal

// Runtime-limit enforcement: pods that outran their declared tidal.dev/runtime-limit (plus the
// engine's grace) are evicted, so that the limits backfill plans with hold. The engine decides
// which pods are overdue (Overdue RPC); the shim only evicts them.
//
// Threading: one goroutine per plugin instance (profile), started by New and ended with its
// context; it reads the pod lister and writes events (p.event takes p.mu).

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tidal-sched/tidal/shim/kube/pkg/leader"
)

func (p *Plugin) evictOverdueEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if p.client.Synced() && leader.Leading() { // a standby replica evicts nothing
				p.evictOverdue(ctx)
			}
		}
	}
}

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
		pod, err := p.pods.Pods(ref.GetNamespace()).Get(ref.GetName())
		if err != nil || string(pod.UID) != ref.GetUid() || pod.DeletionTimestamp != nil || pod.Spec.SchedulerName != p.profile {
			continue
		}
		uid := types.UID(ref.GetUid())
		ev := &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
		}
		if err := p.handle.ClientSet().PolicyV1().Evictions(pod.Namespace).Evict(ctx, ev); err != nil {
			p.logger.Info("runtime limit: eviction failed; retried later", "pod", klog.KObj(pod), "err", err)
			continue
		}
		p.event(pod, v1.EventTypeWarning, ReasonRuntimeLimit, fmt.Sprintf("evicted by %s: %s", p.profile, o.GetReason()))
		p.logger.Info("runtime limit: evicted", "pod", klog.KObj(pod), "why", o.GetReason())
		evicted = append(evicted, key(pod))
	}
	return evicted
}
