package convert

import (
	"reflect"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func hpa(kind, target string, maxReplicas int32) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "e2e", Name: "serve-hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: kind, Name: target, APIVersion: "apps/v1"},
			MaxReplicas:    maxReplicas,
		},
	}
}

func limitsOnly(name string, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Limits: lim}}
}

func TestAutoscalerForwardsTheHpaAndOneReplicaOfItsTemplate(t *testing.T) {
	tmpl := &v1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "serve", "tidal.dev/queue": "inference"},
			Annotations: map[string]string{"tidal.dev/preemptible": "false", "unrelated.example.com/x": "y"},
		},
		Spec: v1.PodSpec{SchedulerName: "tidal-scheduler", Containers: []v1.Container{
			container("main", rl("4", "1", "1Gi")), container("side", rl("4", "", ""))}},
	}
	got := Autoscaler(hpa(KindDeployment, "serve", 10), tmpl)
	if got.GetNamespace() != "e2e" || got.GetName() != "serve-hpa" || got.GetTargetKind() != "Deployment" ||
		got.GetTargetName() != "serve" || got.GetTargetApiVersion() != "apps/v1" || got.GetMaxReplicas() != 10 {
		t.Fatalf("HPA fields: %v", got)
	}
	r := got.GetReplica()
	if !got.GetTargetFound() || r == nil {
		t.Fatalf("target found, replica expected: %v", got)
	}
	if r.GetRequest().GetGpus() != 8 || r.GetSchedulerName() != "tidal-scheduler" {
		t.Errorf("replica: gpus %d (want 8: summed over containers), scheduler %q", r.GetRequest().GetGpus(), r.GetSchedulerName())
	}
	if r.GetLabels()["tidal.dev/queue"] != "inference" || r.GetAnnotations()["tidal.dev/preemptible"] != "false" {
		t.Errorf("the engine's keys travel: labels %v annotations %v", r.GetLabels(), r.GetAnnotations())
	}
	if _, ok := r.GetAnnotations()["unrelated.example.com/x"]; ok {
		t.Errorf("only the keys the engine reads travel, as for pods: %v", r.GetAnnotations())
	}
	if r.GetNamespace() != "e2e" || r.GetName() != "serve" || r.GetUid() != "" || r.GetNodeName() != "" {
		t.Errorf("replica identity: %v", r)
	}
}

func TestReplicaGpus(t *testing.T) {
	cases := []struct {
		name string
		spec v1.PodSpec
		want int64
	}{
		{"requests", v1.PodSpec{Containers: []v1.Container{container("a", rl("8", "", ""))}}, 8},
		{"limits only count, as the API server defaults a pod's requests from them",
			v1.PodSpec{Containers: []v1.Container{limitsOnly("a", rl("2", "", "")), limitsOnly("b", rl("6", "1", ""))}}, 8},
		{"a request set wins over its limit", v1.PodSpec{Containers: []v1.Container{{Name: "a",
			Resources: v1.ResourceRequirements{Requests: rl("1", "", ""), Limits: rl("1", "", "")}}}}, 1},
		{"the largest init container, as for pods", v1.PodSpec{
			InitContainers: []v1.Container{limitsOnly("init", rl("16", "", ""))},
			Containers:     []v1.Container{container("a", rl("8", "", ""))}}, 16},
		{"no GPUs", v1.PodSpec{Containers: []v1.Container{container("a", rl("", "1", "1Gi"))}}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl := &v1.PodTemplateSpec{Spec: c.spec}
			before := tmpl.DeepCopy()
			if got := Replica("ns", "w", tmpl).GetRequest().GetGpus(); got != c.want {
				t.Errorf("gpus per replica = %d, want %d", got, c.want)
			}
			if !reflect.DeepEqual(tmpl, before) {
				t.Errorf("the informer's template was modified")
			}
		})
	}
}

func TestAutoscalerWithoutItsTargetOrOfAnotherKind(t *testing.T) {
	for _, c := range []struct {
		name string
		h    *autoscalingv2.HorizontalPodAutoscaler
	}{
		{"target not known yet", hpa(KindDeployment, "serve", 10)},
		{"another kind", hpa("CronJob", "nightly", 3)},
		{"maxReplicas forwarded as it is (the engine judges)", hpa(KindStatefulSet, "db", -1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Autoscaler(c.h, nil)
			if got.GetTargetFound() || got.GetReplica() != nil {
				t.Errorf("no target: %v", got)
			}
			if got.GetTargetKind() != c.h.Spec.ScaleTargetRef.Kind || got.GetMaxReplicas() != c.h.Spec.MaxReplicas {
				t.Errorf("facts forwarded: %v", got)
			}
		})
	}
	if AutoscalerKey("e2e", "serve") != "e2e/serve" {
		t.Errorf("key: %q", AutoscalerKey("e2e", "serve"))
	}
}
