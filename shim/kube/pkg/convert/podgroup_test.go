package convert

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podInGroup(group string, annotations map[string]string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "w-0", UID: "u0", Annotations: annotations},
		Spec: v1.PodSpec{SchedulerName: "tidal-scheduler"}}
	if group != "" {
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	}
	return p
}

func gangGroup(name string, min int32, topologyKey string) *schedulingv1alpha2.PodGroup {
	pg := &schedulingv1alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
		Spec: schedulingv1alpha2.PodGroupSpec{SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{
			Gang: &schedulingv1alpha2.GangSchedulingPolicy{MinCount: min}}}}
	if topologyKey != "" {
		pg.Spec.SchedulingConstraints = &schedulingv1alpha2.PodGroupSchedulingConstraints{
			Topology: []schedulingv1alpha2.TopologyConstraint{{Key: topologyKey}}}
	}
	return pg
}

func TestPodGroupConversion(t *testing.T) {
	groups := map[string]*schedulingv1alpha2.PodGroup{
		"train": gangGroup("train", 4, "topology.tidal.dev/leaf"),
		"loose": {ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "loose"},
			Spec: schedulingv1alpha2.PodGroupSpec{SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{
				Basic: &schedulingv1alpha2.BasicSchedulingPolicy{}}}},
	}
	SetPodGroupGetter(func(ns, name string) *schedulingv1alpha2.PodGroup {
		if ns != "team" {
			return nil
		}
		return groups[name]
	})
	defer SetPodGroupGetter(nil)

	cases := []struct {
		name, group string
		bound       bool
		in, want    map[string]string
	}{
		{"no pod group: user values under the reserved prefix are dropped", "", false,
			map[string]string{PodGroupStateKey: "gang", PodGroupMinCountKey: "1", "tidal.dev/gang": "g"},
			map[string]string{"tidal.dev/gang": "g"}},
		{"gang with topology", "train", false, nil, map[string]string{
			PodGroupNameKey: "train", PodGroupStateKey: "gang", PodGroupMinCountKey: "4",
			PodGroupTopologyKeyKey: "topology.tidal.dev/leaf"}},
		{"basic policy", "loose", false, nil, map[string]string{PodGroupNameKey: "loose", PodGroupStateKey: "basic"}},
		{"pod group not created yet: the pod waits", "later", false, map[string]string{PodGroupMinCountKey: "1"},
			map[string]string{PodGroupNameKey: "later", PodGroupStateKey: "missing"}},
		{"bound pod whose pod group is gone: counted, no gang", "gone", true, nil,
			map[string]string{PodGroupNameKey: "gone", PodGroupStateKey: "basic"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := podInGroup(c.group, c.in)
			if c.bound {
				p.Spec.NodeName = "node-0"
			}
			got := Pod(p).GetAnnotations()
			if len(got) != len(c.want) {
				t.Fatalf("annotations = %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
			if c.in != nil && c.in[PodGroupMinCountKey] != "" && p.Annotations[PodGroupMinCountKey] == "" {
				t.Errorf("the informer's pod was modified")
			}
		})
	}
}

func TestPodGroupWithoutGetterIsMissing(t *testing.T) {
	SetPodGroupGetter(nil)
	got := Pod(podInGroup("train", nil)).GetAnnotations()
	if got[PodGroupStateKey] != "missing" || got[PodGroupNameKey] != "train" {
		t.Fatalf("annotations = %v, want the pod group missing", got)
	}
	if PodGroupName(podInGroup("", nil)) != "" || PodGroupName(podInGroup("x", nil)) != "x" {
		t.Fatalf("PodGroupName")
	}
}
