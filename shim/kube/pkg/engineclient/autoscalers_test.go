package engineclient

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/enginetest"
)

func servingTemplate(gpus string) v1.PodTemplateSpec {
	return v1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "serve", "tidal.dev/queue": "inference"}},
		Spec: v1.PodSpec{SchedulerName: "tidal-scheduler", Containers: []v1.Container{{Name: "main",
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)}}}}},
	}
}

func deployment(name, gpus string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "e2e", Name: name},
		Spec: appsv1.DeploymentSpec{Template: servingTemplate(gpus)}}
}

func hpaOf(name, kind, target string, maxReplicas int32) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "e2e", Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: maxReplicas,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: kind, Name: target}}}
}

// startHpas runs a client watching nodes, pods, HPAs, Deployments and StatefulSets of cs.
func startHpas(t *testing.T, addr string, cs *fake.Clientset) *Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := New(Config{Address: addr, FlushInterval: 20 * time.Millisecond}, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	if err := c.Watch(f.Core().V1().Nodes().Informer(), f.Core().V1().Pods().Informer()); err != nil {
		t.Fatal(err)
	}
	if err := c.WatchAutoscalers(f.Autoscaling().V2().HorizontalPodAutoscalers().Informer(),
		f.Apps().V1().Deployments().Informer(), f.Apps().V1().StatefulSets().Informer()); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	c.Start(ctx)
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
		c.Close()
	})
	if err := c.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	return c
}

// lastAutoscaler is the latest message about HPA key in msgs: the upsert, or nil and deleted.
func lastAutoscaler(msgs []*tidalv1.SyncRequest, key string) (a *tidalv1.Autoscaler, deleted bool) {
	for _, m := range msgs {
		for _, u := range m.UpsertAutoscalers {
			if u.GetNamespace()+"/"+u.GetName() == key {
				a, deleted = u, false
			}
		}
		for _, d := range m.DeleteAutoscalers {
			if d == key {
				a, deleted = nil, true
			}
		}
	}
	return a, deleted
}

func TestSnapshotCarriesEveryHpaWithItsTargetsReplica(t *testing.T) {
	eng := enginetest.Start(t, enginetest.Socket(t), "e")
	cs := fake.NewClientset(deployment("serve", "8"), hpaOf("serve", "Deployment", "serve", 10),
		hpaOf("orphan", "Deployment", "not-yet", 4), hpaOf("cron", "CronJob", "nightly", 2))
	startHpas(t, eng.Addr, cs)
	msgs := eng.SyncMessages()
	if len(msgs) == 0 || !msgs[0].Resync || len(msgs[0].UpsertAutoscalers) != 3 {
		t.Fatalf("the snapshot names every HPA: %v", msgs)
	}
	a, _ := lastAutoscaler(msgs, "e2e/serve")
	if a == nil || !a.GetTargetFound() || a.GetMaxReplicas() != 10 || a.GetReplica().GetRequest().GetGpus() != 8 ||
		a.GetReplica().GetLabels()["tidal.dev/queue"] != "inference" || a.GetReplica().GetSchedulerName() != "tidal-scheduler" {
		t.Errorf("serve: %v", a)
	}
	for _, k := range []string{"e2e/orphan", "e2e/cron"} {
		if a, _ := lastAutoscaler(msgs, k); a == nil || a.GetTargetFound() {
			t.Errorf("%s: forwarded without a replica: %v", k, a)
		}
	}
}

func TestHpaAndTargetChangesAreSentAndADeleteToo(t *testing.T) {
	eng := enginetest.Start(t, enginetest.Socket(t), "e")
	cs := fake.NewClientset(deployment("serve", "8"), hpaOf("serve", "Deployment", "serve", 10),
		hpaOf("db", "StatefulSet", "db", 3))
	startHpas(t, eng.Addr, cs)
	ctx := context.Background()
	wait := func(what, key string, ok func(a *tidalv1.Autoscaler, deleted bool) bool) {
		t.Helper()
		eng.WaitFor(t, what, 5*time.Second, func() bool { return ok(lastAutoscaler(eng.SyncMessages(), key)) })
	}
	// maxReplicas edited.
	h, _ := cs.AutoscalingV2().HorizontalPodAutoscalers("e2e").Get(ctx, "serve", metav1.GetOptions{})
	h.Spec.MaxReplicas = 3
	if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers("e2e").Update(ctx, h, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("maxReplicas 3", "e2e/serve", func(a *tidalv1.Autoscaler, _ bool) bool { return a.GetMaxReplicas() == 3 })
	// The target's template asks fewer GPUs.
	if _, err := cs.AppsV1().Deployments("e2e").Update(ctx, deployment("serve", "2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("2 GPUs per replica", "e2e/serve", func(a *tidalv1.Autoscaler, _ bool) bool {
		return a.GetReplica().GetRequest().GetGpus() == 2 && a.GetMaxReplicas() == 3
	})
	// A StatefulSet created after its HPA: the HPA is sent again with its replica.
	if a, _ := lastAutoscaler(eng.SyncMessages(), "e2e/db"); a == nil || a.GetTargetFound() {
		t.Fatalf("db before its StatefulSet: %v", a)
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "e2e", Name: "db"},
		Spec: appsv1.StatefulSetSpec{Template: servingTemplate("4")}}
	if _, err := cs.AppsV1().StatefulSets("e2e").Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("db's StatefulSet found", "e2e/db", func(a *tidalv1.Autoscaler, _ bool) bool {
		return a.GetTargetFound() && a.GetReplica().GetRequest().GetGpus() == 4
	})
	// The Deployment deleted: the HPA stays, without its replica.
	if err := cs.AppsV1().Deployments("e2e").Delete(ctx, "serve", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("serve's target gone", "e2e/serve", func(a *tidalv1.Autoscaler, _ bool) bool { return a != nil && !a.GetTargetFound() })
	// The HPA deleted.
	if err := cs.AutoscalingV2().HorizontalPodAutoscalers("e2e").Delete(ctx, "serve", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("serve deleted", "e2e/serve", func(_ *tidalv1.Autoscaler, deleted bool) bool { return deleted })
}
