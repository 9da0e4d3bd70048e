package podgroup

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

func group(name string, min int32) *schedulingv1alpha2.PodGroup {
	return &schedulingv1alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Generation: 1},
		Spec: schedulingv1alpha2.PodGroupSpec{SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{
			Gang: &schedulingv1alpha2.GangSchedulingPolicy{MinCount: min}}}}
}

func member(name, group, node string, refused string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: "u-" + "name"},
		Spec: v1.PodSpec{SchedulerName: "tidal-scheduler", NodeName: node,
			SchedulingGroup: &v1.PodSchedulingGroup{PodGroupName: &group}}}
	if refused != "" {
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse,
			Reason: v1.PodReasonUnschedulable, Message: refused}}
	}
	return p
}

func TestCondition(t *testing.T) {
	pg := group("train", 2)
	if c := Condition(pg, []*v1.Pod{member("a", "train", "", ""), member("b", "train", "", "")}); c != nil {
		t.Fatalf("nothing bound or refused yet: got %+v", c)
	}
	c := Condition(pg, []*v1.Pod{member("a", "train", "", "0/64 nodes are available: no leaf has room"), member("b", "train", "", "")})
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Unschedulable" || !strings.Contains(c.Message, "no leaf has room") {
		t.Fatalf("refused: got %+v", c)
	}
	c = Condition(pg, []*v1.Pod{member("a", "train", "n0", ""), member("b", "train", "n1", "")})
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Scheduled" || c.Type != "PodGroupScheduled" || c.ObservedGeneration != 1 {
		t.Fatalf("bound: got %+v", c)
	}
	if !strings.Contains(c.Message, "2 of 2 pods bound by tidal-scheduler (minCount 2)") {
		t.Fatalf("message %q", c.Message)
	}
}

func TestSyncWritesTheConditionOnceAndNeverRegresses(t *testing.T) {
	pg := group("train", 2)
	a, b := member("a", "train", "n0", ""), member("b", "train", "n1", "")
	cs := fake.NewClientset(pg, a, b)
	f := informers.NewSharedInformerFactory(cs, 0)
	c := &Controller{client: cs, pods: f.Core().V1().Pods().Lister(), groups: f.Scheduling().V1alpha2().PodGroups().Lister(),
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		profiles: map[string]bool{"tidal-scheduler": true}, logger: klog.Background()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	if err := c.sync(ctx, "team/train"); err != nil {
		t.Fatal(err)
	}
	got, err := cs.SchedulingV1alpha2().PodGroups("team").Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond := apimeta.FindStatusCondition(got.Status.Conditions, schedulingv1alpha2.PodGroupScheduled)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("condition %+v", got.Status.Conditions)
	}
	// A later refusal (e.g. an extra pod) does not turn it False.
	inf := f.Scheduling().V1alpha2().PodGroups().Informer()
	if err := inf.GetStore().Update(got); err != nil {
		t.Fatal(err)
	}
	_ = f.Core().V1().Pods().Informer().GetStore().Update(member("a", "train", "", "refused"))
	_ = f.Core().V1().Pods().Informer().GetStore().Update(member("b", "train", "", "refused"))
	if err := c.sync(ctx, "team/train"); err != nil {
		t.Fatal(err)
	}
	got, _ = cs.SchedulingV1alpha2().PodGroups("team").Get(ctx, "train", metav1.GetOptions{})
	if cond := apimeta.FindStatusCondition(got.Status.Conditions, schedulingv1alpha2.PodGroupScheduled); cond.Status != metav1.ConditionTrue {
		t.Fatalf("regressed: %+v", cond)
	}
	// Pods of other schedulers do not count.
	if m := c.members("team", "train"); len(m) != 2 {
		t.Fatalf("members %d", len(m))
	}
	c.profiles = map[string]bool{"other": true}
	if m := c.members("team", "train"); len(m) != 0 {
		t.Fatalf("members of another scheduler counted: %d", len(m))
	}
}

func TestServed(t *testing.T) {
	cs := fake.NewClientset()
	if Served(cs) {
		t.Fatal("served without the resource")
	}
	cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: GroupVersion, APIResources: []metav1.APIResource{{Name: "podgroups"}, {Name: "podgroups/status"}}}}
	if !Served(cs) {
		t.Fatal("not served")
	}
}
