package tidal

// The informers behind the engine's headroom derived from HPAs (queues[].headroom.fromHPA):
// HorizontalPodAutoscalers (autoscaling/v2) and the Deployments and StatefulSets they scale, from
// the scheduler's SharedInformerFactory, streamed by the engine client (engineclient/autoscalers.go).
// Watched only when this scheduler may list all three (deploy/base/rbac.yaml grants list/watch):
// an informer it may not list never syncs, and the engine client's first snapshot waits for every
// informer it watches. A refusal is logged once and the feature is off (no HPA reaches the engine:
// fromHPA queues keep only their configured gpus).
//
// Threading: called from New (one per profile; the client watches once).

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tidal-sched/tidal/shim/kube/pkg/engineclient"
)

func watchAutoscalers(ctx context.Context, h fwk.Handle, client *engineclient.Client, logger klog.Logger) error {
	cs, f := h.ClientSet(), h.SharedInformerFactory()
	if cs == nil || f == nil {
		return nil
	}
	if what, err := unlistable(ctx, cs); what != "" {
		logger.Info("Tidal: HPAs are not watched (this scheduler may not list "+what+"): headroom fromHPA derives nothing; "+
			"grant list/watch on horizontalpodautoscalers, deployments and statefulsets (deploy/base/rbac.yaml)", "err", err)
		return nil
	}
	return client.WatchAutoscalers(f.Autoscaling().V2().HorizontalPodAutoscalers().Informer(),
		f.Apps().V1().Deployments().Informer(), f.Apps().V1().StatefulSets().Informer())
}

// unlistable is the first of the three resources this scheduler may not list (Forbidden, or not
// served), with the API server's answer; "" when it may list all. Other errors (the API server
// restarting) are taken as transient: the informers retry.
func unlistable(ctx context.Context, cs kubernetes.Interface) (string, error) {
	one := metav1.ListOptions{Limit: 1}
	for _, l := range []struct {
		what string
		list func() error
	}{
		{"horizontalpodautoscalers.autoscaling", func() error {
			_, err := cs.AutoscalingV2().HorizontalPodAutoscalers("").List(ctx, one)
			return err
		}},
		{"deployments.apps", func() error { _, err := cs.AppsV1().Deployments("").List(ctx, one); return err }},
		{"statefulsets.apps", func() error { _, err := cs.AppsV1().StatefulSets("").List(ctx, one); return err }},
	} {
		if err := l.list(); apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			return l.what, err
		}
	}
	return "", nil
}
