// The upstream gang API (scheduling.k8s.io/v1alpha2, kube-scheduler v1.36): a pod names its
// PodGroup in spec.schedulingGroup.podGroupName; the PodGroup carries the gang
// (schedulingPolicy.gang.minCount, or schedulingPolicy.basic: no gang) and its topology
// (schedulingConstraints.topology[0].key, a node label key).
//
// The engine reads what a pod asks for from its labels and annotations, so the converted pod (only
// the message to the engine, never the API object) gets the PodGroup in reserved annotations, which
// the engine reads after tidal.dev/* and before the peers' keys (engine/pod_keys.cc):
//
//	podgroup.internal.tidal.dev/name          the PodGroup's name
//	podgroup.internal.tidal.dev/state         gang | basic | missing (an unbound pod whose PodGroup
//	                                          does not exist yet: the engine holds it, never alone)
//	podgroup.internal.tidal.dev/min-count     schedulingPolicy.gang.minCount
//	podgroup.internal.tidal.dev/topology-key  schedulingConstraints.topology[0].key
//
// Values a user wrote under that prefix are dropped. PodGroups are read through a getter the
// plugin installs once (SetPodGroupGetter) from its PodGroup informer; without one (the API is not
// served) a pod that names a PodGroup counts as missing it.
//
// Threading: the getter is installed once, before the informers start, and read by any goroutine
// (atomic); PodGroupAnnotations is pure.
package convert

import (
	"strconv"
	"strings"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

// The reserved annotations of the converted pod (kept in sync with engine/pod_spec.h).
const (
	PodGroupPrefix         = "podgroup.internal.tidal.dev/"
	PodGroupNameKey        = PodGroupPrefix + "name"
	PodGroupStateKey       = PodGroupPrefix + "state"
	PodGroupMinCountKey    = PodGroupPrefix + "min-count"
	PodGroupTopologyKeyKey = PodGroupPrefix + "topology-key"
)

// PodGroupGetter returns the PodGroup ns/name, or nil when there is none.
type PodGroupGetter func(namespace, name string) *schedulingv1alpha2.PodGroup

var podGroupGetter atomic.Pointer[PodGroupGetter]

// SetPodGroupGetter installs how Pod reads PodGroups (nil: none are read).
func SetPodGroupGetter(g PodGroupGetter) {
	if g == nil {
		podGroupGetter.Store(nil)
		return
	}
	podGroupGetter.Store(&g)
}

// PodGroupName is the PodGroup a pod names (spec.schedulingGroup.podGroupName), "" when none.
func PodGroupName(p *v1.Pod) string {
	if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
		return *sg.PodGroupName
	}
	return ""
}

// PodGroupAnnotations are the reserved annotations for a pod naming PodGroup `name`: pg is the
// PodGroup (nil when it does not exist), bound whether the pod is bound (a bound pod whose PodGroup
// went away keeps its gang's name and no size: it only has to be counted).
func PodGroupAnnotations(name string, pg *schedulingv1alpha2.PodGroup, bound bool) map[string]string {
	out := map[string]string{PodGroupNameKey: name}
	switch {
	case pg == nil && bound:
		out[PodGroupStateKey] = "basic"
	case pg == nil:
		out[PodGroupStateKey] = "missing"
	case pg.Spec.SchedulingPolicy.Gang != nil:
		out[PodGroupStateKey] = "gang"
		out[PodGroupMinCountKey] = strconv.FormatInt(int64(pg.Spec.SchedulingPolicy.Gang.MinCount), 10)
	default:
		out[PodGroupStateKey] = "basic"
	}
	if pg != nil && pg.Spec.SchedulingConstraints != nil && len(pg.Spec.SchedulingConstraints.Topology) > 0 {
		out[PodGroupTopologyKeyKey] = pg.Spec.SchedulingConstraints.Topology[0].Key
	}
	return out
}

// applyPodGroup drops user-set reserved annotations from out and adds the PodGroup's.
func applyPodGroup(p *v1.Pod, out *tidalv1.Pod) {
	for k := range out.Annotations {
		if strings.HasPrefix(k, PodGroupPrefix) {
			delete(out.Annotations, k)
		}
	}
	name := PodGroupName(p)
	if name == "" {
		return
	}
	var pg *schedulingv1alpha2.PodGroup
	if g := podGroupGetter.Load(); g != nil {
		pg = (*g)(p.Namespace, name)
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	for k, v := range PodGroupAnnotations(name, pg, p.Spec.NodeName != "") {
		out.Annotations[k] = v
	}
}
