package podgroup

import (
	"context"
	"testing"
	"time"

	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/tidal-sched/tidal/shim/kube/pkg/leader"
)

// A standby replica writes no PodGroup status: the group waits in the queue and its condition is
// written once the replica leads.
func TestStandbyWritesNoStatusUntilItLeads(t *testing.T) {
	elect, restore := leader.StandbyForTest()
	defer restore()
	cs := fake.NewClientset(group("train", 2), member("a", "train", "n0", ""), member("b", "train", "n1", ""))
	f := informers.NewSharedInformerFactory(cs, 0)
	pgInf, podInf := f.Scheduling().V1alpha2().PodGroups().Informer(), f.Core().V1().Pods().Informer()
	c := &Controller{client: cs, pods: f.Core().V1().Pods().Lister(), groups: f.Scheduling().V1alpha2().PodGroups().Lister(),
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		profiles: map[string]bool{"tidal-scheduler": true}, logger: klog.Background(),
		synced: []cache.InformerSynced{pgInf.HasSynced, podInf.HasSynced}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	c.enqueue("team", "train")
	go c.run(ctx)
	written := func() bool {
		got, err := cs.SchedulingV1alpha2().PodGroups("team").Get(ctx, "train", metav1.GetOptions{})
		return err == nil && apimeta.FindStatusCondition(got.Status.Conditions, schedulingv1alpha2.PodGroupScheduled) != nil
	}
	time.Sleep(300 * time.Millisecond)
	if written() {
		t.Fatal("a standby wrote the PodGroup's status")
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			t.Fatalf("a standby sent %v", a)
		}
	}
	elect()
	deadline := time.Now().Add(3 * time.Second)
	for !written() {
		if time.Now().After(deadline) {
			t.Fatal("the leader did not write the queued group's status")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
