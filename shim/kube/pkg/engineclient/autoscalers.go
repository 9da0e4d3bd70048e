package engineclient

// HorizontalPodAutoscalers on the Sync stream (SyncRequest.upsert_autoscalers / delete_autoscalers):
// every HPA with its scaleTargetRef's Deployment or StatefulSet pod template (convert.Autoscaler),
// for the engine's headroom derived from HPAs. An HPA's message is recomputed when the HPA changes
// and when the workload it names changes (add, update, delete), and sent only when it differs from
// the last one computed (a Deployment's status churn sends nothing). Snapshots carry every HPA; the
// engine drops the HPAs a snapshot does not name. A batch with an HPA change counts as
// CapacityFreed for the hooks: a smaller headroom may let waiting pods in.
//
// Threading: the informer handlers compute and record under Client.mu (so two informers' handlers
// never record an older computation over a newer one); the stream goroutine takes the pending
// changes (takePending, snapshotLocked).

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/convert"
)

// WatchAutoscalers registers the Sync handlers on the HPA, Deployment and StatefulSet informers
// (once per client; later calls are no-ops). Call before Start: the first snapshot waits for them.
func (c *Client) WatchAutoscalers(hpas, deployments, statefulsets cache.SharedIndexInformer) error {
	c.mu.Lock()
	if c.hpaStore != nil {
		c.mu.Unlock()
		return nil
	}
	c.hpaStore, c.deployStore, c.stsStore = hpas.GetIndexer(), deployments.GetStore(), statefulsets.GetStore()
	c.mu.Unlock()
	hr, err := hpas.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.hpaChanged(obj) },
		UpdateFunc: func(_, obj interface{}) { c.hpaChanged(obj) },
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler); ok {
				c.mu.Lock()
				key := convert.AutoscalerKey(h.Namespace, h.Name)
				delete(c.autoscalers, key)
				c.pendingAutoscalers[key] = nil
				c.afterChangeLocked()
				c.mu.Unlock()
			}
		},
	})
	if err != nil {
		return fmt.Errorf("HorizontalPodAutoscaler informer: %w", err)
	}
	targetChanged := func(kind string) cache.ResourceEventHandlerFuncs {
		on := func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, ok := obj.(interface {
				GetNamespace() string
				GetName() string
			}); ok {
				c.targetChanged(kind, m.GetNamespace(), m.GetName())
			}
		}
		return cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, o interface{}) { on(o) }, DeleteFunc: on}
	}
	dr, err := deployments.AddEventHandler(targetChanged(convert.KindDeployment))
	if err != nil {
		return fmt.Errorf("Deployment informer: %w", err)
	}
	sr, err := statefulsets.AddEventHandler(targetChanged(convert.KindStatefulSet))
	if err != nil {
		return fmt.Errorf("StatefulSet informer: %w", err)
	}
	c.mu.Lock()
	c.hasSynced = append(c.hasSynced, hr.HasSynced, dr.HasSynced, sr.HasSynced)
	c.mu.Unlock()
	return nil
}

func (c *Client) hpaChanged(obj interface{}) {
	h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return
	}
	c.mu.Lock()
	c.recordAutoscalerLocked(h)
	c.mu.Unlock()
}

// targetChanged recomputes the HPAs of namespace ns whose scaleTargetRef names kind/name.
func (c *Client) targetChanged(kind, ns, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	objs, err := c.hpaStore.ByIndex(cache.NamespaceIndex, ns)
	if err != nil { // no namespace index: every HPA
		objs = c.hpaStore.List()
	}
	for _, o := range objs {
		if h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler); ok && h.Namespace == ns &&
			h.Spec.ScaleTargetRef.Kind == kind && h.Spec.ScaleTargetRef.Name == name && appsGroup(h) {
			c.recordAutoscalerLocked(h)
		}
	}
}

// recordAutoscalerLocked converts h with its target's template and records it when it changed.
func (c *Client) recordAutoscalerLocked(h *autoscalingv2.HorizontalPodAutoscaler) {
	msg := convert.Autoscaler(h, c.targetTemplateLocked(h))
	key := convert.AutoscalerKey(h.Namespace, h.Name)
	if old, ok := c.autoscalers[key]; ok && proto.Equal(old, msg) {
		return
	}
	c.autoscalers[key] = msg
	c.pendingAutoscalers[key] = msg
	c.afterChangeLocked()
}

// appsGroup: the scaleTargetRef's apiVersion is in group apps ("apps/v1"; "" is taken as apps).
func appsGroup(h *autoscalingv2.HorizontalPodAutoscaler) bool {
	gv, err := schema.ParseGroupVersion(h.Spec.ScaleTargetRef.APIVersion)
	return err == nil && (gv.Group == "apps" || h.Spec.ScaleTargetRef.APIVersion == "")
}

// targetTemplateLocked is the pod template of the Deployment or StatefulSet h scales; nil when
// the store does not hold it or the kind is another.
func (c *Client) targetTemplateLocked(h *autoscalingv2.HorizontalPodAutoscaler) *v1.PodTemplateSpec {
	if !appsGroup(h) {
		return nil
	}
	key := h.Namespace + "/" + h.Spec.ScaleTargetRef.Name
	var store cache.Store
	switch h.Spec.ScaleTargetRef.Kind {
	case convert.KindDeployment:
		store = c.deployStore
	case convert.KindStatefulSet:
		store = c.stsStore
	}
	if store == nil {
		return nil
	}
	o, ok, err := store.GetByKey(key)
	if err != nil || !ok {
		return nil
	}
	switch t := o.(type) {
	case *appsv1.Deployment:
		return &t.Spec.Template
	case *appsv1.StatefulSet:
		return &t.Spec.Template
	}
	return nil
}

// autoscalerSnapshotLocked recomputes every HPA from the stores (the pending changes are dropped:
// the snapshot supersedes them).
func (c *Client) autoscalerSnapshotLocked() []*tidalv1.Autoscaler {
	c.pendingAutoscalers = map[string]*tidalv1.Autoscaler{}
	c.autoscalers = map[string]*tidalv1.Autoscaler{}
	if c.hpaStore == nil {
		return nil
	}
	var out []*tidalv1.Autoscaler
	for _, o := range c.hpaStore.List() {
		if h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler); ok {
			m := convert.Autoscaler(h, c.targetTemplateLocked(h))
			c.autoscalers[convert.AutoscalerKey(h.Namespace, h.Name)] = m
			out = append(out, m)
		}
	}
	return out
}
