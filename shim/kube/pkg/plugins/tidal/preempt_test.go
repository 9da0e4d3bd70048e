package tidal

// PostFilter's preemption (preempt.go): the whole-gang PodDisruptionBudget check, and the shim
// skipping a protected victim gang (no pod of it evicted), reporting it and asking again.

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

func runningPod(ns, name string, lbl map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Labels: lbl},
		Spec:       v1.PodSpec{NodeName: "node-" + name},
		Status:     v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}},
	}
}

func pdb(ns, name string, sel *metav1.LabelSelector, allowed int32) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: sel, MinAvailable: &one},
		Status:     policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed},
	}
}

func gangSel(g string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"tidal.dev/gang": g}}
}

func gangPods(ns, g string, n int) []*v1.Pod {
	var out []*v1.Pod
	for i := 0; i < n; i++ {
		out = append(out, runningPod(ns, g+"-"+string(rune('0'+i)), map[string]string{"tidal.dev/gang": g}))
	}
	return out
}

func TestPDBBlockJudgesTheWholeGang(t *testing.T) {
	four := gangPods("batch", "a", 4)
	pending := gangPods("batch", "a", 4)
	for _, p := range pending[:3] {
		p.Status.Phase = v1.PodPending
	}
	behind := pdb("batch", "a", gangSel("a"), 10)
	behind.Generation = 2
	always := policyv1.AlwaysAllow
	unhealthy := gangPods("batch", "a", 4)
	for _, p := range unhealthy[:3] {
		p.Status.Conditions = nil
	}
	lenient := pdb("batch", "a", gangSel("a"), 1)
	lenient.Spec.UnhealthyPodEvictionPolicy = &always
	cases := []struct {
		name string
		pods []*v1.Pod
		pdbs []*policyv1.PodDisruptionBudget
		want string // substring; "" = allowed
	}{
		{"no PDB", four, nil, ""},
		{"allows every pod of the gang", four, []*policyv1.PodDisruptionBudget{pdb("batch", "a", gangSel("a"), 4)}, ""},
		{"allows one of four (pod by pod would break the gang)", four, []*policyv1.PodDisruptionBudget{pdb("batch", "a", gangSel("a"), 1)},
			"allows 1 disruption(s); the workload has 4 pod(s) it covers"},
		{"selects other pods", four, []*policyv1.PodDisruptionBudget{pdb("batch", "b", gangSel("b"), 0)}, ""},
		{"another namespace", four, []*policyv1.PodDisruptionBudget{pdb("other", "a", gangSel("a"), 0)}, ""},
		{"nil selector selects nothing", four, []*policyv1.PodDisruptionBudget{pdb("batch", "a", nil, 0)}, ""},
		{"empty selector selects everything", four, []*policyv1.PodDisruptionBudget{pdb("batch", "a", &metav1.LabelSelector{}, 3)},
			"allows 3 disruption(s); the workload has 4"},
		{"two PDBs select one pod", four, []*policyv1.PodDisruptionBudget{pdb("batch", "a", gangSel("a"), 9), pdb("batch", "all", &metav1.LabelSelector{}, 9)},
			"selected by 2 PodDisruptionBudgets"},
		{"status older than spec", four, []*policyv1.PodDisruptionBudget{behind}, "still being processed"},
		{"pods not running need no budget", pending, []*policyv1.PodDisruptionBudget{pdb("batch", "a", gangSel("a"), 1)}, ""},
		{"unhealthy pods under AlwaysAllow need none", unhealthy, []*policyv1.PodDisruptionBudget{lenient}, ""},
	}
	for _, c := range cases {
		got := pdbBlock(c.pods, c.pdbs)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: pdbBlock = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestPostFilterSkipsAGangPDBsProtectAndEvictsTheNextChoiceWhole(t *testing.T) {
	var objs []runtime.Object
	a, b := gangPods("batch", "a", 2), gangPods("batch", "b", 2)
	for _, p := range append(append([]*v1.Pod{}, a...), b...) {
		objs = append(objs, p)
	}
	objs = append(objs, pdb("batch", "keep-a", gangSel("a"), 1)) // one of a's two pods: a is not evicted at all
	e := newEnv(t, objs...)
	refs := func(pods []*v1.Pod) []*tidalv1.PodRef {
		var out []*tidalv1.PodRef
		for _, p := range pods {
			out = append(out, &tidalv1.PodRef{Uid: string(p.UID), Namespace: p.Namespace, Name: p.Name})
		}
		return out
	}
	asked := 0
	e.eng.PreemptFn = func(*tidalv1.PodRef) *tidalv1.PreemptResponse {
		asked++
		g, pods := "batch/a", a
		if asked > 1 { // the engine left the protected gang out
			g, pods = "batch/b", b
		}
		return &tidalv1.PreemptResponse{Status: &tidalv1.Status{}, Victims: refs(pods), Reason: "priority",
			VictimGangs: []*tidalv1.VictimGang{{Id: g, Pods: refs(pods)}}}
	}
	res, st := e.plugin.PostFilter(context.Background(), framework.NewCycleState(), gpuPod("ml", "w-0", nil), nil)
	if !st.IsSuccess() || res == nil {
		t.Fatalf("PostFilter = %+v, %v", res, st)
	}
	evicted := map[string]bool{}
	for _, act := range e.cs.Actions() {
		if c, ok := act.(clienttesting.CreateAction); ok && act.GetSubresource() == "eviction" {
			evicted[c.GetObject().(*policyv1.Eviction).Name] = true
		}
	}
	if evicted["a-0"] || evicted["a-1"] || !evicted["b-0"] || !evicted["b-1"] {
		t.Errorf("evicted %v; want exactly b's two pods, none of a's", evicted)
	}
	calls := strings.Join(e.eng.Calls(), "\n")
	for _, want := range []string{"Evicted ml/w-0 pods= protected=batch/a", "Evicted ml/w-0 pods=batch/b-0,batch/b-1 protected="} {
		if !strings.Contains(calls, want) {
			t.Errorf("no %q; calls:\n%s", want, calls)
		}
	}
	if evs := strings.Join(e.events(), "\n"); !strings.Contains(evs, ReasonPreemptionBlocked) || !strings.Contains(evs, "keep-a allows 1 disruption(s)") {
		t.Errorf("events = %s", evs)
	}

	// Every proposal protected: nothing evicted, Unschedulable naming the gangs.
	e.cs.ClearActions()
	e.eng.PreemptFn = func(*tidalv1.PodRef) *tidalv1.PreemptResponse {
		return &tidalv1.PreemptResponse{Status: &tidalv1.Status{}, Victims: refs(a), VictimGangs: []*tidalv1.VictimGang{{Id: "batch/a", Pods: refs(a)}}}
	}
	if _, st := e.plugin.PostFilter(context.Background(), framework.NewCycleState(), gpuPod("ml", "w-0", nil), nil); st.Code() != fwk.Unschedulable ||
		!strings.Contains(st.Message(), "protected by PodDisruptionBudgets") {
		t.Errorf("PostFilter with only protected victims = %v", st)
	}
	for _, act := range e.cs.Actions() {
		if act.GetSubresource() == "eviction" {
			t.Errorf("evicted a protected pod: %v", act)
		}
	}
}

// PostFilter runs in the scheduling cycle: a live PDB list (a consistent read, ~85 ms idle, seconds
// under load) there held up every pending pod. A victim in a namespace without PDBs (by the shared
// lister) costs no API call; one whose namespace has a PDB is still checked on a live list.
func TestPostFilterListsPDBsLiveOnlyWhereTheNamespaceHasOne(t *testing.T) {
	a, b := gangPods("batch", "a", 1), gangPods("serve", "b", 1)
	e := newEnv(t, a[0], b[0], pdb("serve", "keep-b", gangSel("b"), 1))
	victim := func(p *v1.Pod) func(*tidalv1.PodRef) *tidalv1.PreemptResponse {
		ref := &tidalv1.PodRef{Uid: string(p.UID), Namespace: p.Namespace, Name: p.Name}
		return func(*tidalv1.PodRef) *tidalv1.PreemptResponse {
			return &tidalv1.PreemptResponse{Status: &tidalv1.Status{}, Victims: []*tidalv1.PodRef{ref}, Reason: "priority",
				VictimGangs: []*tidalv1.VictimGang{{Id: p.Namespace + "/" + p.Name, Pods: []*tidalv1.PodRef{ref}}}}
		}
	}
	// PostFilter for a preemptor whose one victim is v: the live PDB lists it made.
	pdbLists := func(v *v1.Pod, preemptor string) (n int) {
		e.cs.ClearActions()
		e.eng.PreemptFn = victim(v)
		if _, st := e.plugin.PostFilter(context.Background(), framework.NewCycleState(), gpuPod("ml", preemptor, nil), nil); !st.IsSuccess() {
			t.Fatalf("PostFilter = %v", st)
		}
		for _, act := range e.cs.Actions() {
			if act.GetVerb() == "list" && act.GetResource().Resource == "poddisruptionbudgets" && act.GetNamespace() != "" {
				n++
			}
		}
		return n
	}
	if n := pdbLists(a[0], "w-0"); n != 0 {
		t.Errorf("%d live PDB list(s) for a victim in a namespace without PDBs, want 0", n)
	}
	if n := pdbLists(b[0], "w-1"); n != 1 {
		t.Errorf("%d live PDB list(s) for a victim whose namespace has a PDB, want 1", n)
	}
}

// A Slurm job among the victims is tidal-slurm's: no PDB lookup or eviction for it, a PostFilter
// that succeeds when it is the only victim, and the event names it.
func TestPostFilterLeavesSlurmVictimsToTidalSlurm(t *testing.T) {
	a := gangPods("batch", "a", 1)
	e := newEnv(t, a[0])
	slurm := []*tidalv1.PodRef{{Uid: "slurm/17#0", Namespace: "slurm", Name: "17#0"}, {Uid: "slurm/17#1", Namespace: "slurm", Name: "17#1"}}
	kube := []*tidalv1.PodRef{{Uid: string(a[0].UID), Namespace: a[0].Namespace, Name: a[0].Name}}
	for _, withPod := range []bool{false, true} {
		e.cs.ClearActions()
		e.eng.PreemptFn = func(*tidalv1.PodRef) *tidalv1.PreemptResponse {
			r := &tidalv1.PreemptResponse{Status: &tidalv1.Status{}, Reason: "priority",
				VictimGangs: []*tidalv1.VictimGang{{Id: "slurm/17", Pods: slurm, Door: tidalv1.FrontDoor_SLURM}}}
			if withPod {
				r.Victims = kube
				r.VictimGangs = append(r.VictimGangs, &tidalv1.VictimGang{Id: "batch/a", Pods: kube})
			}
			return r
		}
		res, st := e.plugin.PostFilter(context.Background(), framework.NewCycleState(), gpuPod("ml", "w-0", nil), nil)
		if !st.IsSuccess() || res == nil {
			t.Fatalf("with pod %v: PostFilter = %+v, %v", withPod, res, st)
		}
		var evicted []string
		for _, act := range e.cs.Actions() {
			if c, ok := act.(clienttesting.CreateAction); ok && act.GetSubresource() == "eviction" {
				evicted = append(evicted, c.GetObject().(*policyv1.Eviction).Namespace+"/"+c.GetObject().(*policyv1.Eviction).Name)
			}
			if act.GetNamespace() == "slurm" {
				t.Errorf("with pod %v: an API call for a Slurm member: %v", withPod, act)
			}
		}
		want := ""
		if withPod {
			want = "batch/a-0"
		}
		if strings.Join(evicted, ",") != want {
			t.Errorf("with pod %v: evicted %v, want %q", withPod, evicted, want)
		}
	}
	if evs := strings.Join(e.events(), "\n"); !strings.Contains(evs, "Slurm job(s) slurm/17 (tidal-slurm requeues them)") {
		t.Errorf("events = %s", evs)
	}
}
