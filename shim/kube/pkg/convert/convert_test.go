package convert

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

func rl(gpus, cpu, mem string) v1.ResourceList {
	out := v1.ResourceList{}
	if gpus != "" {
		out[GPUResource] = resource.MustParse(gpus)
	}
	if cpu != "" {
		out[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		out[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return out
}

func container(name string, req v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: req}}
}

func TestPodRequests(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	sidecar := container("sidecar", rl("", "500m", "1Gi"))
	sidecar.RestartPolicy = &always
	cases := []struct {
		name string
		spec v1.PodSpec
		want *tidalv1.Resources
	}{
		{"no requests", v1.PodSpec{Containers: []v1.Container{container("a", nil)}}, &tidalv1.Resources{}},
		{"sum of containers", v1.PodSpec{Containers: []v1.Container{
			container("a", rl("4", "2", "8Gi")), container("b", rl("4", "500m", "1Gi"))}},
			&tidalv1.Resources{Gpus: 8, CpuMilli: 2500, MemoryBytes: 9 << 30}},
		{"init container larger than the sum wins per resource", v1.PodSpec{
			InitContainers: []v1.Container{container("init", rl("1", "8", "1Gi"))},
			Containers:     []v1.Container{container("a", rl("2", "1", "4Gi")), container("b", rl("", "1", ""))}},
			&tidalv1.Resources{Gpus: 2, CpuMilli: 8000, MemoryBytes: 4 << 30}},
		{"max over init containers", v1.PodSpec{
			InitContainers: []v1.Container{container("i1", rl("8", "", "")), container("i2", rl("3", "", ""))},
			Containers:     []v1.Container{container("a", rl("2", "", ""))}},
			&tidalv1.Resources{Gpus: 8}},
		{"sidecar init containers add to the sum", v1.PodSpec{
			InitContainers: []v1.Container{sidecar},
			Containers:     []v1.Container{container("a", rl("1", "1", "1Gi"))}},
			&tidalv1.Resources{Gpus: 1, CpuMilli: 1500, MemoryBytes: 2 << 30}},
		{"overhead is charged", v1.PodSpec{
			Overhead:   rl("", "250m", ""),
			Containers: []v1.Container{container("a", rl("", "1", ""))}},
			&tidalv1.Resources{CpuMilli: 1250}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Pod(&v1.Pod{Spec: tc.spec}).Request
			if got.Gpus != tc.want.Gpus || got.CpuMilli != tc.want.CpuMilli || got.MemoryBytes != tc.want.MemoryBytes {
				t.Errorf("request = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodFields(t *testing.T) {
	prio := int32(1000)
	created := metav1.NewTime(time.Unix(1700000000, 0))
	started := metav1.NewTime(time.Unix(1700000060, 0))
	deleted := metav1.NewTime(time.Unix(1700000100, 0))
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			UID: types.UID("u-1"), Namespace: "ml", Name: "w-0",
			Labels:            map[string]string{"tidal.dev/gang": "llm"},
			Annotations:       map[string]string{"tidal.dev/gang-size": "16"},
			CreationTimestamp: created, DeletionTimestamp: &deleted,
		},
		Spec: v1.PodSpec{SchedulerName: "tidal-scheduler", NodeName: "node-3", Priority: &prio,
			Containers: []v1.Container{container("a", rl("8", "", ""))}},
		Status: v1.PodStatus{Phase: v1.PodRunning, StartTime: &started},
	}
	got := Pod(p)
	if got.Uid != "u-1" || got.Namespace != "ml" || got.Name != "w-0" || got.SchedulerName != "tidal-scheduler" ||
		got.NodeName != "node-3" || got.Priority != 1000 || got.CreationUnix != 1700000000 || !got.Terminating ||
		got.Phase != tidalv1.Pod_RUNNING || got.Labels["tidal.dev/gang"] != "llm" ||
		got.Annotations["tidal.dev/gang-size"] != "16" || got.Request.Gpus != 8 || got.StartUnix != 1700000060 {
		t.Errorf("Pod() = %v", got)
	}
	// The converted maps are copies: informer objects must never be modified through them.
	got.Labels["x"] = "y"
	if _, ok := p.Labels["x"]; ok {
		t.Error("Pod() shares the labels map with the informer object")
	}
	if got := Pod(&v1.Pod{}); got.Priority != 0 || got.Phase != tidalv1.Pod_PENDING || got.CreationUnix != 0 || got.StartUnix != 0 || got.Terminating {
		t.Errorf("Pod(empty) = %v", got)
	}
}

// An unbound pod held back by scheduling gates is marked for the engine (its gang waits for it);
// a user's value under the reserved key is never taken; a bound pod is not marked.
func TestPodSchedulingGates(t *testing.T) {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "g-2", Annotations: map[string]string{SchedulingGatesAnnotation: "forged"}},
		Spec:       v1.PodSpec{SchedulingGates: []v1.PodSchedulingGate{{Name: "example.com/wait"}, {Name: "kueue.x-k8s.io/admission"}}},
	}
	if got := Pod(p).Annotations[SchedulingGatesAnnotation]; got != "example.com/wait (+1 more)" {
		t.Errorf("gated pod: %s = %q", SchedulingGatesAnnotation, got)
	}
	p.Spec.SchedulingGates = p.Spec.SchedulingGates[1:]
	if got := Pod(p).Annotations[SchedulingGatesAnnotation]; got != "kueue.x-k8s.io/admission" {
		t.Errorf("one gate: %q", got)
	}
	p.Spec.SchedulingGates = nil
	if got, ok := Pod(p).Annotations[SchedulingGatesAnnotation]; ok {
		t.Errorf("gates removed: still marked %q", got)
	}
	p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "x"}}
	p.Spec.NodeName = "node-1"
	if got, ok := Pod(p).Annotations[SchedulingGatesAnnotation]; ok {
		t.Errorf("bound pod: marked %q", got)
	}
}

func TestPhase(t *testing.T) {
	for in, want := range map[v1.PodPhase]tidalv1.Pod_Phase{
		"": tidalv1.Pod_PENDING, v1.PodPending: tidalv1.Pod_PENDING, v1.PodRunning: tidalv1.Pod_RUNNING,
		v1.PodSucceeded: tidalv1.Pod_SUCCEEDED, v1.PodFailed: tidalv1.Pod_FAILED, "Weird": tidalv1.Pod_UNKNOWN,
	} {
		if got := Phase(in); got != want {
			t.Errorf("Phase(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestNode(t *testing.T) {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-7", Labels: map[string]string{
			"topology.tidal.dev/leaf": "leaf-1", GPUModelLabel: "H100-SXM5-80GB"}},
		Spec: v1.NodeSpec{Unschedulable: true},
		Status: v1.NodeStatus{
			Capacity:    rl("8", "64", "512Gi"),
			Allocatable: rl("8", "63500m", "500Gi"),
			Conditions: []v1.NodeCondition{
				{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse},
				{Type: v1.NodeReady, Status: v1.ConditionTrue},
			},
		},
	}
	got := Node(n)
	if got.Name != "node-7" || !got.Ready || !got.Unschedulable || got.GpuModel != "H100-SXM5-80GB" ||
		got.Labels["topology.tidal.dev/leaf"] != "leaf-1" {
		t.Errorf("Node() = %v", got)
	}
	if c := got.Capacity; c.Gpus != 8 || c.CpuMilli != 63500 || c.MemoryBytes != 500<<30 {
		t.Errorf("capacity = %v, want allocatable 8 GPUs, 63500m, 500Gi", c)
	}
	for name, conds := range map[string][]v1.NodeCondition{
		"no conditions": nil,
		"ready false":   {{Type: v1.NodeReady, Status: v1.ConditionFalse}},
		"ready unknown": {{Type: v1.NodeReady, Status: v1.ConditionUnknown}},
	} {
		if NodeReady(&v1.Node{Status: v1.NodeStatus{Conditions: conds}}) {
			t.Errorf("%s: NodeReady = true", name)
		}
	}
}

func TestNodeDrainAnnotations(t *testing.T) {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-7", Annotations: map[string]string{
		DrainByAnnotation: "2026-12-02T20:00:00Z", DecommissionAnnotation: "true", AvailableUntilAnnotation: "1796500000",
		"kubectl.kubernetes.io/last-applied-configuration": "{...}", "tidal.dev/other": "x"}}}
	got := Node(n).GetAnnotations()
	want := map[string]string{DrainByAnnotation: "2026-12-02T20:00:00Z", DecommissionAnnotation: "true", AvailableUntilAnnotation: "1796500000"}
	if len(got) != len(want) || got[DrainByAnnotation] != want[DrainByAnnotation] || got[DecommissionAnnotation] != "true" ||
		got[AvailableUntilAnnotation] != want[AvailableUntilAnnotation] {
		t.Errorf("annotations = %v, want only %v", got, want)
	}
	if a := Node(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}).GetAnnotations(); a != nil {
		t.Errorf("a node without them: annotations = %v", a)
	}
	long := strings.Repeat("9", 5000)
	n.Annotations[DrainByAnnotation] = long
	if v := Node(n).GetAnnotations()[DrainByAnnotation]; len(v) != MaxNameBytes {
		t.Errorf("a %d-byte value arrives as %d bytes, want cut to %d", len(long), len(v), MaxNameBytes)
	}
}

func TestPodRef(t *testing.T) {
	r := PodRef(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Namespace: "ns", Name: "n"}})
	if r.Uid != "u" || r.Namespace != "ns" || r.Name != "n" {
		t.Errorf("PodRef = %v", r)
	}
}

func TestNodeConditions(t *testing.T) {
	beat := metav1.NewTime(time.Unix(1700000000, 0))
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
		{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: beat},
		{Type: "GPUUnhealthy", Status: v1.ConditionTrue, Reason: "XidError79", Message: "GPU 3 fell off the bus",
			LastHeartbeatTime: beat, LastTransitionTime: beat},
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
		{Type: "GPUUnhealthy", Status: v1.ConditionFalse}, // repeated: the first one counts
	}}}
	got := Node(n).Conditions
	want := []*tidalv1.NodeCondition{
		{Type: "GPUUnhealthy", Status: "True", Reason: "XidError79"},
		{Type: "MemoryPressure", Status: "False", Reason: "KubeletHasSufficientMemory"},
	}
	if len(got) != len(want) {
		t.Fatalf("conditions = %v, want %v (Ready is Node.ready; sorted by type)", got, want)
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("condition %d = %v, want %v", i, got[i], want[i])
		}
	}
	// Heartbeats, transition times, messages and the order of status.conditions change nothing.
	m := n.DeepCopy()
	later := metav1.NewTime(beat.Add(time.Hour))
	for i := range m.Status.Conditions {
		m.Status.Conditions[i].LastHeartbeatTime, m.Status.Conditions[i].LastTransitionTime = later, later
		m.Status.Conditions[i].Message = "still"
	}
	m.Status.Conditions[0], m.Status.Conditions[2] = m.Status.Conditions[2], m.Status.Conditions[0]
	if !proto.Equal(Node(n), Node(m)) {
		t.Errorf("heartbeat / message / order changed the converted node: %v vs %v", Node(n).Conditions, Node(m).Conditions)
	}
	// Type, status and reason each do.
	for _, f := range []func(*v1.NodeCondition){
		func(c *v1.NodeCondition) { c.Status = v1.ConditionUnknown },
		func(c *v1.NodeCondition) { c.Reason = "XidError48" },
		func(c *v1.NodeCondition) { c.Type = "GPUDegraded" },
	} {
		m := n.DeepCopy()
		f(&m.Status.Conditions[1])
		if proto.Equal(Node(n), Node(m)) {
			t.Errorf("a change of %v is no change of the converted node", m.Status.Conditions[1])
		}
	}
	if c := Node(&v1.Node{}).Conditions; c != nil {
		t.Errorf("a node without conditions has %v", c)
	}
}

func TestNodeConditionsAreBounded(t *testing.T) {
	var conds []v1.NodeCondition
	for i := 0; i < 40; i++ {
		conds = append(conds, v1.NodeCondition{Type: v1.NodeConditionType(fmt.Sprintf("Check%02d", i)), Status: v1.ConditionFalse})
	}
	long := strings.Repeat("x", MaxNameBytes+1)
	conds = append([]v1.NodeCondition{
		{Type: v1.NodeConditionType(long), Status: v1.ConditionTrue},                       // type too long: dropped
		{Type: "Odd", Status: v1.ConditionStatus(long)},                                    // status too long: dropped
		{Type: "", Status: v1.ConditionTrue},                                               // no type: dropped
		{Type: "GPUUnhealthy", Status: v1.ConditionTrue, Reason: strings.Repeat("é", 200)}, // 400 bytes: cut
	}, conds...)
	got := Node(&v1.Node{Status: v1.NodeStatus{Conditions: conds}}).Conditions
	if len(got) != MaxNodeConditions {
		t.Fatalf("%d conditions sent, want %d", len(got), MaxNodeConditions)
	}
	var unhealthy *tidalv1.NodeCondition
	for _, c := range got {
		if len(c.Type) > MaxNameBytes || len(c.Status) > MaxNameBytes || len(c.Reason) > MaxNameBytes || c.Type == "" || c.Type == "Odd" {
			t.Errorf("condition %.40v... kept", c)
		}
		if c.Type == "GPUUnhealthy" {
			unhealthy = c
		}
		if c.Type == "Check31" || c.Type == "Check39" {
			t.Errorf("%s kept: the first %d in status order count", c.Type, MaxNodeConditions)
		}
	}
	if unhealthy == nil || unhealthy.Status != "True" || len(unhealthy.Reason) != 252 || !utf8.ValidString(unhealthy.Reason) {
		t.Fatalf("GPUUnhealthy = %v: want it kept, its reason cut to 252 bytes of whole runes", unhealthy)
	}
	if _, err := proto.Marshal(&tidalv1.Node{Conditions: got}); err != nil {
		t.Errorf("conditions do not marshal: %v", err)
	}
	if s := cutUTF8("abc", 2); s != "ab" {
		t.Errorf("cutUTF8(abc, 2) = %q", s)
	}
}
