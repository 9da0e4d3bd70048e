package convert

// The node-static constraints of a pod that the engine evaluates itself before it plans (so the
// node it plans passes kube-scheduler's NodeAffinity and TaintToleration filters), and node taints.
// Everything else kube-scheduler filters on (host ports, inter-pod affinity, topology spread,
// volumes, extended resources) stays kube-scheduler's: a refused planned node is reported back to
// the engine (NodeRefused) and excluded from the gang's next plan.

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

// hostnameKey is the topology key of "one per node" anti-affinity.
const hostnameKey = "kubernetes.io/hostname"

// podConstraints fills out's node selector, node affinity, tolerations and self anti-affinity.
func podConstraints(p *v1.Pod, out *tidalv1.Pod) {
	out.NodeSelector = copyMap(p.Spec.NodeSelector)
	for _, t := range p.Spec.Tolerations {
		out.Tolerations = append(out.Tolerations, &tidalv1.Toleration{
			Key: t.Key, Operator: string(t.Operator), Value: t.Value, Effect: string(t.Effect)})
	}
	a := p.Spec.Affinity
	if a == nil {
		return
	}
	if na := a.NodeAffinity; na != nil {
		if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			for i := range r.NodeSelectorTerms {
				out.RequiredNodeAffinity = append(out.RequiredNodeAffinity, selectorTerm(&r.NodeSelectorTerms[i]))
			}
		}
		for i := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			pt := &na.PreferredDuringSchedulingIgnoredDuringExecution[i]
			out.PreferredNodeAffinity = append(out.PreferredNodeAffinity,
				&tidalv1.PreferredSchedulingTerm{Weight: pt.Weight, Preference: selectorTerm(&pt.Preference)})
		}
	}
	if pa := a.PodAntiAffinity; pa != nil {
		for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
			if t := &pa.RequiredDuringSchedulingIgnoredDuringExecution[i]; selectsItself(p, t) {
				out.SelfAntiAffinityKey = t.TopologyKey
				if t.TopologyKey == hostnameKey {
					break
				}
			}
		}
	}
}

// selectsItself: the term repels pods like p itself (its own namespace, a selector matching its
// labels), as the members of one gang do when they must not share a node.
func selectsItself(p *v1.Pod, t *v1.PodAffinityTerm) bool {
	if t.LabelSelector == nil || t.NamespaceSelector != nil {
		return false
	}
	if len(t.Namespaces) > 0 {
		found := false
		for _, ns := range t.Namespaces {
			found = found || ns == p.Namespace
		}
		if !found {
			return false
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
	return err == nil && !sel.Empty() && sel.Matches(labels.Set(p.Labels))
}

func selectorTerm(t *v1.NodeSelectorTerm) *tidalv1.NodeSelectorTerm {
	out := &tidalv1.NodeSelectorTerm{}
	for _, r := range t.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, requirement(r))
	}
	for _, r := range t.MatchFields {
		out.MatchFields = append(out.MatchFields, requirement(r))
	}
	return out
}

func requirement(r v1.NodeSelectorRequirement) *tidalv1.NodeSelectorRequirement {
	return &tidalv1.NodeSelectorRequirement{Key: r.Key, Operator: string(r.Operator), Values: append([]string(nil), r.Values...)}
}

// nodeTaints converts spec.taints.
func nodeTaints(n *v1.Node) []*tidalv1.Taint {
	var out []*tidalv1.Taint
	for _, t := range n.Spec.Taints {
		out = append(out, &tidalv1.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	return out
}
