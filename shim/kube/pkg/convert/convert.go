// Package convert turns Kubernetes objects into the engine's proto messages (tidal.v1). It is the
// only place in the shim that knows how a Pod or Node maps onto the contract; it decides nothing.
//
//   - GPUs are the extended resource nvidia.com/gpu; CPU in millicores, memory in bytes.
//   - A pod's request is what kube-scheduler itself charges: the sum over containers (plus sidecar
//     init containers), raised to the largest regular init container where that is bigger, plus
//     pod overhead; pod-level resources win when set (k8s.io/component-helpers/resource.PodRequests).
//   - A node's capacity is its allocatable; it is ready when its Ready condition is True;
//     unschedulable is spec.unschedulable (cordoned); the GPU model is the label
//     nvidia.com/gpu.product (set by NVIDIA's GPU feature discovery). Its other conditions travel
//     as type, status and reason (no times, no message: a heartbeat is no change), bounded
//     (nodeConditions).
//   - A pod's priority is spec.priority (0 when unset, as the Priority admission plugin leaves it).
//   - Node selector, node affinity, tolerations and self anti-affinity travel with the pod, taints
//     with the node (constraints.go).
//   - A pod carries only the labels and annotations the engine reads; an object too large for a
//     Sync message is sent without them, marked (limits.go).
//   - The PodGroup a pod names (upstream: podgroup.go; Volcano's, KAI's: peergroup.go) adds what
//     it says (gang size, topology, queue) to the converted pod's annotations.
//   - An unbound pod with spec.schedulingGates gets SchedulingGatesAnnotation (its first gate):
//     its gang waits for it, and says so, instead of planning around a member that cannot bind.
//
// Threading: pure functions; inputs are not modified (informer objects are shared).
package convert

import (
	"sort"
	"strconv"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

const (
	// GPUResource is the extended resource that counts GPUs.
	GPUResource v1.ResourceName = "nvidia.com/gpu"
	// GPUModelLabel is the node label that names the GPU model.
	GPUModelLabel = "nvidia.com/gpu.product"
)

// Resources converts a resource list (GPUs, CPU, memory; everything else is ignored).
func Resources(rl v1.ResourceList) *tidalv1.Resources {
	r := &tidalv1.Resources{}
	if q, ok := rl[GPUResource]; ok {
		r.Gpus = q.Value()
	}
	if q, ok := rl[v1.ResourceCPU]; ok {
		r.CpuMilli = q.MilliValue()
	}
	if q, ok := rl[v1.ResourceMemory]; ok {
		r.MemoryBytes = q.Value()
	}
	return r
}

// PodRequests is the pod's effective request: max(sum of containers, largest init container),
// with sidecars and overhead as kube-scheduler counts them.
func PodRequests(p *v1.Pod) v1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
}

// Pod converts a pod (any scheduler's, bound or pending).
func Pod(p *v1.Pod) *tidalv1.Pod {
	out := &tidalv1.Pod{
		Uid:           string(p.UID),
		Namespace:     p.Namespace,
		Name:          p.Name,
		SchedulerName: p.Spec.SchedulerName,
		NodeName:      p.Spec.NodeName,
		Phase:         Phase(p.Status.Phase),
		Request:       Resources(PodRequests(p)),
		Labels:        engineView(p.Labels), // only the keys the engine reads (limits.go)
		Annotations:   engineView(p.Annotations),
		CreationUnix:  p.CreationTimestamp.Unix(),
		Terminating:   p.DeletionTimestamp != nil,
	}
	applyPodGroup(p, out)   // the upstream PodGroup (podgroup.go)
	applyPeerGroups(p, out) // Volcano's and KAI's PodGroups (peergroup.go)
	applySchedulingGates(p, out)
	if p.CreationTimestamp.IsZero() {
		out.CreationUnix = 0
	}
	if p.Status.StartTime != nil && !p.Status.StartTime.IsZero() {
		out.StartUnix = p.Status.StartTime.Unix()
	}
	if p.Spec.Priority != nil {
		out.Priority = *p.Spec.Priority
	}
	podConstraints(p, out)
	return boundPod(out) // over MaxObjectBytes: without its keys, marked (limits.go)
}

// SchedulingGatesAnnotation marks an unbound pod that carries spec.schedulingGates (kept in sync
// with engine/pod_spec.h kSchedulingGates): its first gate's name, cut to MaxNameBytes, and
// " (+N more)". No scheduler places such a pod until its gates are removed, so the engine does not
// count it as a gang member that can be placed: the others wait in PreEnqueue, and their
// TidalGangIncomplete names the gate. Removing the gates changes the converted pod, and the Sync
// batch that carries the change requeues the gang's held members.
const SchedulingGatesAnnotation = "sync.internal.tidal.dev/scheduling-gates"

func applySchedulingGates(p *v1.Pod, out *tidalv1.Pod) {
	if p.Spec.NodeName != "" || len(p.Spec.SchedulingGates) == 0 {
		return
	}
	v := cutUTF8(p.Spec.SchedulingGates[0].Name, MaxNameBytes)
	if more := len(p.Spec.SchedulingGates) - 1; more > 0 {
		v += " (+" + strconv.Itoa(more) + " more)"
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[SchedulingGatesAnnotation] = v
}

// Phase maps a pod phase ("" and unknown values count as PENDING / UNKNOWN).
func Phase(ph v1.PodPhase) tidalv1.Pod_Phase {
	switch ph {
	case v1.PodRunning:
		return tidalv1.Pod_RUNNING
	case v1.PodSucceeded:
		return tidalv1.Pod_SUCCEEDED
	case v1.PodFailed:
		return tidalv1.Pod_FAILED
	case v1.PodPending, "":
		return tidalv1.Pod_PENDING
	default:
		return tidalv1.Pod_UNKNOWN
	}
}

// Node converts a node.
func Node(n *v1.Node) *tidalv1.Node {
	return boundNode(&tidalv1.Node{
		Name:          n.Name,
		Labels:        copyMap(n.Labels),
		Capacity:      Resources(n.Status.Allocatable),
		Ready:         NodeReady(n),
		Unschedulable: n.Spec.Unschedulable,
		GpuModel:      n.Labels[GPUModelLabel],
		Taints:        nodeTaints(n),
		Conditions:    nodeConditions(n),
		Annotations:   nodeAnnotations(n),
	}) // over MaxObjectBytes: cordoned, without its labels and taints (limits.go)
}

// Node annotations the engine reads: a drain or a perishable window's end set on the Node object
// itself, which every replica's shim streams to its own engine (a drain through tidalctl lives in
// one engine only).
const (
	DrainByAnnotation        = "tidal.dev/drain-by"        // RFC 3339 or unix seconds
	DecommissionAnnotation   = "tidal.dev/decommission"    // "true": the drain is for good
	AvailableUntilAnnotation = "tidal.dev/available-until" // RFC 3339 or unix seconds: the window's end
)

// nodeAnnotations: only DrainByAnnotation, DecommissionAnnotation and AvailableUntilAnnotation, each value cut to
// MaxNameBytes (a longer one is no time anyway; the engine says so on the node).
func nodeAnnotations(n *v1.Node) map[string]string {
	var out map[string]string
	for _, k := range []string{DrainByAnnotation, DecommissionAnnotation, AvailableUntilAnnotation} {
		if v, ok := n.Annotations[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = cutUTF8(v, MaxNameBytes)
		}
	}
	return out
}

// nodeConditions: the node's conditions other than Ready (GPU health tooling publishes its
// verdicts as conditions, e.g. GPUUnhealthy; the engine's nodeHealth rules read them), as type,
// status and reason. lastHeartbeatTime, lastTransitionTime and message are left out, so a
// heartbeat does not change the converted node (and sends no upsert). Bounded, so that no node
// can make the engine refuse it (its Sync checks every string's size):
//   - at most MaxNodeConditions, the first ones in status order (a real node has about 5-10;
//     the rest are dropped: a node publishing more is misconfigured);
//   - a type repeated is dropped (the API server merges conditions by type; only a malformed
//     object repeats one), as is Ready (it is Node.ready);
//   - a condition whose type or status is over MaxNameBytes is dropped (a cut type would match
//     no nodeHealth rule, and no valid status is that long); a reason over it is cut to
//     MaxNameBytes at a UTF-8 boundary (it only explains, and the verdict must still arrive).
//
// The result is sorted by type, so a reordered status.conditions is no change either.
func nodeConditions(n *v1.Node) []*tidalv1.NodeCondition {
	var out []*tidalv1.NodeCondition
	seen := map[v1.NodeConditionType]bool{v1.NodeReady: true}
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		if len(out) == MaxNodeConditions {
			break
		}
		if seen[c.Type] || c.Type == "" || len(c.Type) > MaxNameBytes || len(c.Status) > MaxNameBytes {
			continue
		}
		seen[c.Type] = true
		out = append(out, &tidalv1.NodeCondition{Type: string(c.Type), Status: string(c.Status),
			Reason: cutUTF8(c.Reason, MaxNameBytes)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// NodeReady is true when the node's Ready condition is True.
func NodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// PodRef names a pod for the unary RPCs.
func PodRef(p *v1.Pod) *tidalv1.PodRef {
	return &tidalv1.PodRef{Uid: string(p.UID), Namespace: p.Namespace, Name: p.Name}
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
