package convert

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodConstraintsTravelToTheEngine(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team", Labels: map[string]string{"job": "train"}},
		Spec: v1.PodSpec{
			NodeSelector: map[string]string{"gpu": "a100"},
			Tolerations:  []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "infer", Effect: v1.TaintEffectNoSchedule}},
			Affinity: &v1.Affinity{
				NodeAffinity: &v1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
						MatchExpressions: []v1.NodeSelectorRequirement{{Key: "nvidia.com/gpu.product", Operator: v1.NodeSelectorOpIn, Values: []string{"H100"}}},
					}}},
					PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 7, Preference: v1.NodeSelectorTerm{
						MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n1"}}},
					}}},
				},
				PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{
					{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"other": "x"}}, TopologyKey: "zone"},
					{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"job": "train"}}, TopologyKey: hostnameKey},
				}},
			},
		},
	}
	out := Pod(pod)
	if out.GetNodeSelector()["gpu"] != "a100" {
		t.Errorf("node selector: %v", out.GetNodeSelector())
	}
	if len(out.GetTolerations()) != 1 || out.GetTolerations()[0].GetEffect() != "NoSchedule" || out.GetTolerations()[0].GetOperator() != "Equal" {
		t.Errorf("tolerations: %v", out.GetTolerations())
	}
	req := out.GetRequiredNodeAffinity()
	if len(req) != 1 || req[0].GetMatchExpressions()[0].GetOperator() != "In" || req[0].GetMatchExpressions()[0].GetValues()[0] != "H100" {
		t.Errorf("required affinity: %v", req)
	}
	pref := out.GetPreferredNodeAffinity()
	if len(pref) != 1 || pref[0].GetWeight() != 7 || pref[0].GetPreference().GetMatchFields()[0].GetKey() != "metadata.name" {
		t.Errorf("preferred affinity: %v", pref)
	}
	if out.GetSelfAntiAffinityKey() != hostnameKey {
		t.Errorf("self anti-affinity: %q (the zone term selects other pods, not this one)", out.GetSelfAntiAffinityKey())
	}
}

func TestNodeTaintsTravelToTheEngine(t *testing.T) {
	n := &v1.Node{Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "k", Value: "v", Effect: v1.TaintEffectNoExecute}}}}
	got := Node(n).GetTaints()
	if len(got) != 1 || got[0].GetKey() != "k" || got[0].GetEffect() != "NoExecute" {
		t.Errorf("taints: %v", got)
	}
}
