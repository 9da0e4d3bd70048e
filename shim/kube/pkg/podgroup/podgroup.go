// Package podgroup connects Tidal to kube-scheduler v1.36's gang API, scheduling.k8s.io/v1alpha2
// PodGroup (a pod names it in spec.schedulingGroup.podGroupName):
//
//   - When the API is served (discovery, once at start-up), it watches PodGroups with the typed
//     informer of the scheduler's SharedInformerFactory, installs the getter convert.Pod reads
//     them through (so the engine learns a pod's gang, minCount and topology key), and re-sends a
//     PodGroup's pods to the engine when the PodGroup is added, changed or deleted (their
//     conversion depends on it; the Sync batch then retries the namespace's held pods). When it is
//     not served, nothing is watched: a pod that names a PodGroup waits, as for a missing one.
//   - It writes the PodGroup's PodGroupScheduled condition, as kube-scheduler's own pod-group
//     cycle does: True (reason Scheduled) once minCount of its pods (1 for schedulingPolicy.basic)
//     of Tidal's profiles are bound; False (reason Unschedulable, the message kube-scheduler wrote
//     in the pod's PodScheduled condition, i.e. the engine's reason) while none is and one of its
//     pending pods was refused. Like upstream it never turns True back to False. Only the
//     leading replica writes (pkg/leader): a standby queues the groups until it leads.
//
// Volcano's and KAI's PodGroups are watched too, read only (peers.go).
//
// kube-scheduler's own GenericWorkload/GangScheduling gates stay off in tidal-scheduler (their
// defaults): no profile of the binary runs a pod-group cycle or the GangScheduling plugin; Tidal's
// plugin is the gang scheduler for its pods.
//
// Threading: one Controller per process (the profiles share it, like the engine client); informer
// handlers only enqueue; one worker goroutine writes statuses; the profile set is under mu.
package podgroup

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1alpha2"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tidal-sched/tidal/shim/kube/pkg/convert"
	"github.com/tidal-sched/tidal/shim/kube/pkg/leader"
)

// GroupVersion is the API the shim reads.
var GroupVersion = schedulingv1alpha2.SchemeGroupVersion.String()

// Controller watches PodGroups and writes their PodGroupScheduled condition.
type Controller struct {
	client  kubernetes.Interface
	pods    corelisters.PodLister
	groups  schedulinglisters.PodGroupLister
	synced  []cache.InformerSynced
	refresh func([]*v1.Pod)
	queue   workqueue.TypedRateLimitingInterface[string]
	logger  klog.Logger

	mu       sync.Mutex
	profiles map[string]bool // scheduler names of the profiles that run Tidal
}

var shared struct {
	sync.Mutex
	c       *Controller
	peers   *peerWatcher // Volcano's and KAI's PodGroups; nil when neither is served
	checked bool         // discovery ran (c is nil when the API is not served)
}

// Watch is called by each Tidal profile's plugin before the informers start. refresh re-sends
// pods to the engine (engineclient.Client.Refresh).
func Watch(ctx context.Context, h fwk.Handle, refresh func([]*v1.Pod), logger klog.Logger) error {
	if h == nil || h.SharedInformerFactory() == nil || h.ClientSet() == nil {
		return nil
	}
	shared.Lock()
	defer shared.Unlock()
	if shared.checked {
		if shared.c != nil {
			shared.c.addProfile(h.ProfileName())
		}
		if shared.peers != nil {
			shared.peers.addProfile(h.ProfileName())
		}
		return nil
	}
	shared.checked = true
	peers, err := watchPeers(ctx, h, refresh, logger)
	if err != nil {
		return err
	}
	shared.peers = peers
	if !Served(h.ClientSet()) {
		logger.Info("scheduling.k8s.io/v1alpha2 PodGroups are not served: pods that name a PodGroup wait for it",
			"groupVersion", GroupVersion)
		return nil
	}
	f := h.SharedInformerFactory()
	pgInf := f.Scheduling().V1alpha2().PodGroups()
	podInf := f.Core().V1().Pods()
	c := &Controller{
		client: h.ClientSet(), pods: podInf.Lister(), groups: pgInf.Lister(), refresh: refresh, logger: logger,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		profiles: map[string]bool{},
	}
	c.addProfile(h.ProfileName())
	lister := pgInf.Lister()
	convert.SetPodGroupGetter(func(ns, name string) *schedulingv1alpha2.PodGroup {
		pg, err := lister.PodGroups(ns).Get(name)
		if err != nil {
			return nil
		}
		return pg
	})
	pr, err := pgInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { c.groupChanged(obj) },
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, _ := oldObj.(*schedulingv1alpha2.PodGroup)
			n, _ := newObj.(*schedulingv1alpha2.PodGroup)
			if o == nil || n == nil || !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) {
				c.groupChanged(newObj)
				return
			}
			c.enqueue(n.Namespace, n.Name) // a status write (ours or another's): check it
		},
		DeleteFunc: func(obj interface{}) { c.groupChanged(obj) },
	})
	if err != nil {
		return fmt.Errorf("podgroup informer: %w", err)
	}
	podReg, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podChanged,
		UpdateFunc: func(_, newObj interface{}) { c.podChanged(newObj) },
		DeleteFunc: c.podChanged,
	})
	if err != nil {
		return fmt.Errorf("pod informer: %w", err)
	}
	c.synced = []cache.InformerSynced{pr.HasSynced, podReg.HasSynced}
	shared.c = c
	go c.run(ctx)
	return nil
}

// Served: the API server lists podgroups in scheduling.k8s.io/v1alpha2.
func Served(cs kubernetes.Interface) bool { return servedResource(cs, GroupVersion, "podgroups") }

func (c *Controller) addProfile(name string) {
	c.mu.Lock()
	c.profiles[name] = true
	c.mu.Unlock()
}

func (c *Controller) ours(schedulerName string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.profiles[schedulerName]
}

func (c *Controller) enqueue(ns, name string) { c.queue.Add(ns + "/" + name) }

func (c *Controller) groupChanged(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pg, ok := obj.(*schedulingv1alpha2.PodGroup)
	if !ok {
		return
	}
	c.enqueue(pg.Namespace, pg.Name)
	members := c.members(pg.Namespace, pg.Name)
	if len(members) > 0 && c.refresh != nil {
		c.refresh(members)
	}
}

func (c *Controller) podChanged(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	if name := convert.PodGroupName(pod); name != "" && c.ours(pod.Spec.SchedulerName) {
		c.enqueue(pod.Namespace, name)
	}
}

// members: the pods of Tidal's profiles naming PodGroup ns/name, not being deleted.
func (c *Controller) members(ns, name string) []*v1.Pod {
	all, err := c.pods.Pods(ns).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*v1.Pod
	for _, p := range all {
		if convert.PodGroupName(p) == name && p.DeletionTimestamp == nil && c.ours(p.Spec.SchedulerName) {
			out = append(out, p)
		}
	}
	return out
}

func (c *Controller) run(ctx context.Context) {
	defer c.queue.ShutDown()
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	// A standby replica writes no status: the queue collects the groups (one entry each) until
	// this replica leads, then writes what the members call for by then.
	if leader.Wait(ctx) != nil {
		return
	}
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		if !leader.Leading() { // renewals failing: kube-scheduler is about to exit
			c.queue.AddAfter(key, time.Second)
			c.queue.Done(key)
			continue
		}
		if err := c.sync(ctx, key); err != nil {
			c.logger.V(2).Info("PodGroup status not written; retrying", "podGroup", key, "err", err)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pg, err := c.groups.PodGroups(ns).Get(name)
	if err != nil {
		return nil // deleted
	}
	want := Condition(pg, c.members(ns, name))
	if want == nil {
		return nil
	}
	if old := apimeta.FindStatusCondition(pg.Status.Conditions, want.Type); old != nil &&
		old.Status == metav1.ConditionTrue && want.Status != metav1.ConditionTrue {
		return nil // never regress a scheduled group
	}
	next := pg.DeepCopy()
	if !apimeta.SetStatusCondition(&next.Status.Conditions, *want) {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = c.client.SchedulingV1alpha2().PodGroups(ns).UpdateStatus(wctx, next, metav1.UpdateOptions{})
	if err == nil {
		c.logger.V(2).Info("PodGroup condition written", "podGroup", key, "status", want.Status, "reason", want.Reason)
	}
	return err
}

// Condition is the PodGroupScheduled condition the members call for, nil when none yet (fewer
// than minCount bound and none refused).
func Condition(pg *schedulingv1alpha2.PodGroup, members []*v1.Pod) *metav1.Condition {
	need := int32(1)
	if g := pg.Spec.SchedulingPolicy.Gang; g != nil && g.MinCount > need {
		need = g.MinCount
	}
	var bound int32
	var refused *v1.PodCondition
	scheduler := ""
	for _, p := range members {
		scheduler = p.Spec.SchedulerName
		if p.Spec.NodeName != "" {
			bound++
			continue
		}
		for i := range p.Status.Conditions {
			pc := &p.Status.Conditions[i]
			if pc.Type == v1.PodScheduled && pc.Status == v1.ConditionFalse && pc.Reason == v1.PodReasonUnschedulable &&
				(refused == nil || pc.LastTransitionTime.After(refused.LastTransitionTime.Time)) {
				refused = pc
			}
		}
	}
	switch {
	case bound >= need:
		return &metav1.Condition{Type: schedulingv1alpha2.PodGroupScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled",
			ObservedGeneration: pg.Generation,
			Message:            fmt.Sprintf("%d of %d pods bound by %s (minCount %d)", bound, len(members), scheduler, need)}
	case refused != nil:
		return &metav1.Condition{Type: schedulingv1alpha2.PodGroupScheduled, Status: metav1.ConditionFalse,
			Reason: schedulingv1alpha2.PodGroupReasonUnschedulable, ObservedGeneration: pg.Generation, Message: refused.Message}
	default:
		return nil
	}
}
