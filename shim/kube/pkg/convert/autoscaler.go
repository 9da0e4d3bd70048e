package convert

// HorizontalPodAutoscalers (autoscaling/v2) for the engine's headroom derived from them
// (queues[].headroom.fromHPA, engine/autoscalers.h). The shim forwards facts: the HPA's
// scaleTargetRef and maxReplicas, and one replica of the target's pod template converted exactly
// as a pod of it would be (Pod: scheduler name, the labels and annotations the engine reads, the
// request kube-scheduler charges). The engine decides what counts (kind, scheduler, queue).
//
// A pod template is not defaulted like a pod: the API server copies a container's limits into
// unset requests only when it creates the pod. Replica does that copy first, so a template that
// sets only `limits: {nvidia.com/gpu: 8}` counts 8 GPUs per replica, as its pods will.
//
// Threading: pure functions; inputs are not modified (informer objects are shared).

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

// Kinds of scaleTargetRef whose pod template the shim watches (group apps).
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
)

// AutoscalerKey is how the engine names an HPA (deletes, snapshots): "namespace/name".
func AutoscalerKey(ns, name string) string { return ns + "/" + name }

// Autoscaler converts an HPA; target is the pod template of the workload its scaleTargetRef names
// (nil when the shim does not know it: not created yet, or a kind it does not watch).
func Autoscaler(h *autoscalingv2.HorizontalPodAutoscaler, target *v1.PodTemplateSpec) *tidalv1.Autoscaler {
	out := &tidalv1.Autoscaler{
		Namespace:        h.Namespace,
		Name:             h.Name,
		TargetKind:       h.Spec.ScaleTargetRef.Kind,
		TargetName:       h.Spec.ScaleTargetRef.Name,
		TargetApiVersion: h.Spec.ScaleTargetRef.APIVersion,
		MaxReplicas:      h.Spec.MaxReplicas,
	}
	if target != nil {
		out.TargetFound = true
		out.Replica = Replica(h.Namespace, h.Spec.ScaleTargetRef.Name, target)
	}
	return out
}

// Replica converts one replica of a pod template as Pod converts a pod (no uid, node or phase).
func Replica(ns, name string, t *v1.PodTemplateSpec) *tidalv1.Pod {
	p := &v1.Pod{ObjectMeta: *t.ObjectMeta.DeepCopy(), Spec: *t.Spec.DeepCopy()}
	p.Namespace, p.Name, p.UID = ns, name, ""
	p.CreationTimestamp, p.DeletionTimestamp = metav1.Time{}, nil
	for _, cs := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			defaultRequests(&cs[i].Resources)
		}
	}
	return Pod(p)
}

// defaultRequests copies limits into unset requests, as the API server does for a pod's containers.
func defaultRequests(r *v1.ResourceRequirements) {
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if r.Requests == nil {
			r.Requests = v1.ResourceList{}
		}
		r.Requests[name] = q.DeepCopy()
	}
}
