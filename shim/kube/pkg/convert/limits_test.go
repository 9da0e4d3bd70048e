package convert

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func gpuPod(labels, annotations map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "w-0", UID: "u0", Labels: labels, Annotations: annotations},
		Spec: v1.PodSpec{SchedulerName: "tidal-scheduler", NodeName: "n1", Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{GPUResource: resource.MustParse("8")}}}}},
	}
}

// A pod carries to the engine only the keys the engine reads: a 200 KB annotation of kubectl's
// and a controller's labels stay behind (before, every label and annotation was copied).
func TestPodCarriesOnlyEngineKeys(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	p := gpuPod(map[string]string{"app": "train", "tidal.dev/gang": "llm", "leaderworkerset.sigs.k8s.io/name": "l"},
		map[string]string{"kubectl.kubernetes.io/last-applied-configuration": big, "tidal.dev/gang-size": "16",
			"kueue.x-k8s.io/queue-name": "q"})
	out := Pod(p)
	if sz := proto.Size(out); sz > 4096 {
		t.Fatalf("converted pod is %d bytes: the 200 KB annotation travelled", sz)
	}
	if len(out.Labels) != 2 || out.Labels["tidal.dev/gang"] != "llm" || out.Labels["leaderworkerset.sigs.k8s.io/name"] != "l" {
		t.Errorf("labels %v, want tidal.dev/gang and leaderworkerset.sigs.k8s.io/name", out.Labels)
	}
	if len(out.Annotations) != 2 || out.Annotations["tidal.dev/gang-size"] != "16" || out.Annotations["kueue.x-k8s.io/queue-name"] != "q" {
		t.Errorf("annotations %v, want tidal.dev/gang-size and kueue.x-k8s.io/queue-name", out.Annotations)
	}
	if len(p.Annotations) != 3 || len(p.Labels) != 3 {
		t.Error("the informer's pod was modified")
	}
}

// tidal.dev/gang-leader reaches the engine as a label or an annotation (the engine gives that
// member back last when an elastic gang shrinks). Before, it was not in engine_keys.txt and every
// Kubernetes user's mark was stripped; only tidal-slurm's own annotation ever reached the engine.
func TestGangLeaderTravelsAsLabelOrAnnotation(t *testing.T) {
	out := Pod(gpuPod(map[string]string{"tidal.dev/gang-leader": "true"}, nil))
	if out.Labels["tidal.dev/gang-leader"] != "true" {
		t.Errorf("labels %v: the gang-leader label was dropped", out.Labels)
	}
	out = Pod(gpuPod(nil, map[string]string{"tidal.dev/gang-leader": "true"}))
	if out.Annotations["tidal.dev/gang-leader"] != "true" {
		t.Errorf("annotations %v: the gang-leader annotation was dropped", out.Annotations)
	}
}

// The shim's own reserved keys are never taken from the user.
func TestUserCannotSetOversizeMarker(t *testing.T) {
	out := Pod(gpuPod(nil, map[string]string{OversizeAnnotation: "5"}))
	if _, ok := out.Annotations[OversizeAnnotation]; ok || PodOversize(out) != 0 {
		t.Errorf("a user-set %s travelled: %v", OversizeAnnotation, out.Annotations)
	}
}

func TestEngineKeysListTheTablesKeys(t *testing.T) {
	for _, k := range []string{GangKey, GangSizeKey, "tidal.dev/gang-leader", "tidal.dev/gpu-model", SchedulerPluginsKey, PodGroupNameKey, PodGroupStateKey,
		PodGroupMinCountKey, PodGroupTopologyKeyKey, OversizeAnnotation, "tidal.dev/runtime-limit",
		"scheduling.k8s.io/group-name", "pod-group-name", "kai.scheduler/queue", "runai/queue",
		"scheduling.volcano.sh/queue-name"} {
		if !EngineReads(k) {
			t.Errorf("engine_keys.txt lacks %s", k)
		}
	}
	if EngineReads("app") || EngineReads("") || EngineKeys() < 30 {
		t.Errorf("engine_keys.txt: %d keys, or it lists keys the engine does not read", EngineKeys())
	}
}

// A pod whose message would be over MaxObjectBytes (node affinity naming 100,000 nodes) is sent
// without its keys and constraints, marked with its size; its request and node stay, so a bound
// one is still counted. Never dropped, never an over-limit message.
func TestOversizePodIsSentMarked(t *testing.T) {
	p := gpuPod(map[string]string{"tidal.dev/gang": "llm"}, nil)
	vals := make([]string, 100000)
	for i := range vals {
		vals[i] = fmt.Sprintf("node-%06d", i)
	}
	p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
			{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpNotIn, Values: vals}}}}}}}
	out := Pod(p)
	if sz := proto.Size(out); sz > MaxObjectBytes {
		t.Fatalf("converted pod is %d bytes, over %d", sz, MaxObjectBytes)
	}
	if PodOversize(out) <= MaxObjectBytes {
		t.Errorf("%s = %q, want the full size (> %d)", OversizeAnnotation, out.Annotations[OversizeAnnotation], MaxObjectBytes)
	}
	if out.Uid != "u0" || out.NodeName != "n1" || out.Request.GetGpus() != 8 || len(out.RequiredNodeAffinity) != 0 || len(out.Labels) != 0 {
		t.Errorf("stub %v: want uid, node and request kept, constraints and labels left out", out)
	}
}

func TestOversizeNodeIsSentCordoned(t *testing.T) {
	labels := map[string]string{HostnameLabel: "n1", "topology.tidal.dev/leaf": "l1"}
	for i := 0; i < 20000; i++ {
		labels[fmt.Sprintf("example.com/feature-%05d-%s", i, strings.Repeat("f", 20))] = strings.Repeat("v", 20)
	}
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{GPUResource: resource.MustParse("8")},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue},
				{Type: "GPUUnhealthy", Status: v1.ConditionTrue, Reason: "XidError79"}}}}
	out := Node(n)
	if c := out.Conditions; len(c) != 1 || c[0].Type != "GPUUnhealthy" || c[0].Status != "True" {
		t.Errorf("stub conditions %v: a health verdict must still arrive", c)
	}
	if sz := proto.Size(out); sz > MaxObjectBytes {
		t.Fatalf("converted node is %d bytes, over %d", sz, MaxObjectBytes)
	}
	if !out.Unschedulable || out.Capacity.GetGpus() != 8 || NodeOversize(out) <= MaxObjectBytes || out.Labels[HostnameLabel] != "n1" {
		t.Errorf("stub %v: want cordoned, capacity kept, marked with its size", out)
	}
	// A normal node keeps every label (node selectors may name any).
	small := Node(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{"a": "b", "c": "d"}}})
	if len(small.Labels) != 2 || small.Unschedulable || NodeOversize(small) != 0 {
		t.Errorf("small node %v changed", small)
	}
}
