// Volcano's (scheduling.volcano.sh/v1beta1) and KAI's (scheduling.run.ai/v2alpha2) PodGroups:
// custom resources, watched with a dynamic informer for each API that is served (discovery, once
// at start-up, like the upstream API). For each it installs the getter convert.Pod reads them
// through (their spec.minMember and spec.queue, see convert/peergroup.go) and re-sends a
// PodGroup's pods (Tidal's, not being deleted) to the engine when the PodGroup is added, deleted,
// or its minMember or queue change. An API that is not served is not watched: its pods convert as
// before. Tidal only reads these PodGroups (their status is the peer's own).
//
// Threading: informer handlers call refresh (engineclient.Client.Refresh, which locks) and read
// the profile set under mu.
package podgroup

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tidal-sched/tidal/shim/kube/pkg/convert"
)

// PeerAPI is a peer's PodGroup resource.
type PeerAPI struct {
	Peer convert.Peer
	GVR  schema.GroupVersionResource
}

// PeerAPIs are the peers' PodGroup resources Tidal reads.
var PeerAPIs = []PeerAPI{
	{convert.Volcano, schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}},
	{convert.KAI, schema.GroupVersionResource{Group: "scheduling.run.ai", Version: "v2alpha2", Resource: "podgroups"}},
}

// peerWatcher re-sends the pods of a peer's PodGroup when it changes.
type peerWatcher struct {
	pods    corelisters.PodLister
	refresh func([]*v1.Pod)

	mu       sync.Mutex
	profiles map[string]bool // scheduler names of the profiles that run Tidal
}

// watchPeers starts the informers of the peers' served PodGroup APIs; nil when none is served.
func watchPeers(ctx context.Context, h fwk.Handle, refresh func([]*v1.Pod), logger klog.Logger) (*peerWatcher, error) {
	var served []PeerAPI
	for _, api := range PeerAPIs {
		if servedResource(h.ClientSet(), api.GVR.GroupVersion().String(), api.GVR.Resource) {
			served = append(served, api)
		} else {
			logger.V(2).Info("PodGroups not served: their pods need tidal.dev/gang-size", "peer", api.Peer.String(),
				"groupVersion", api.GVR.GroupVersion().String())
		}
	}
	if len(served) == 0 || h.KubeConfig() == nil {
		return nil, nil
	}
	dyn, err := dynamic.NewForConfig(h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("dynamic client for peer PodGroups: %w", err)
	}
	w := &peerWatcher{pods: h.SharedInformerFactory().Core().V1().Pods().Lister(), refresh: refresh,
		profiles: map[string]bool{h.ProfileName(): true}}
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	for _, api := range served {
		if err := w.watch(f, api); err != nil {
			return nil, err
		}
		logger.Info("watching PodGroups: their minMember and queue are read", "peer", api.Peer.String(),
			"groupVersion", api.GVR.GroupVersion().String())
	}
	f.Start(ctx.Done())
	return w, nil
}

// watch installs the peer's getter and handlers on f's informer for the API.
func (w *peerWatcher) watch(f dynamicinformer.DynamicSharedInformerFactory, api PeerAPI) error {
	inf := f.ForResource(api.GVR)
	lister := inf.Lister()
	convert.SetPeerGroupGetter(api.Peer, func(ns, name string) *convert.PeerGroup {
		obj, err := lister.ByNamespace(ns).Get(name)
		if err != nil {
			return nil
		}
		return PeerGroupOf(obj)
	})
	_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { w.changed(api.Peer, obj) },
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, n := PeerGroupOf(oldObj), PeerGroupOf(newObj)
			if o == nil || n == nil || *o != *n {
				w.changed(api.Peer, newObj)
			}
		},
		DeleteFunc: func(obj interface{}) { w.changed(api.Peer, obj) },
	})
	if err != nil {
		return fmt.Errorf("%s podgroup informer: %w", api.Peer, err)
	}
	return nil
}

func (w *peerWatcher) addProfile(name string) {
	w.mu.Lock()
	w.profiles[name] = true
	w.mu.Unlock()
}

func (w *peerWatcher) ours(schedulerName string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.profiles[schedulerName]
}

func (w *peerWatcher) changed(peer convert.Peer, obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return
	}
	if members := w.members(peer, m.GetNamespace(), m.GetName()); len(members) > 0 && w.refresh != nil {
		w.refresh(members)
	}
}

// members: the pods of Tidal's profiles naming the peer's PodGroup ns/name, not being deleted.
func (w *peerWatcher) members(peer convert.Peer, ns, name string) []*v1.Pod {
	all, err := w.pods.Pods(ns).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*v1.Pod
	for _, p := range all {
		if convert.PeerGroupName(peer, p) == name && p.DeletionTimestamp == nil && w.ours(p.Spec.SchedulerName) {
			out = append(out, p)
		}
	}
	return out
}

// PeerGroupOf reads spec.minMember and spec.queue of a peer's PodGroup (an unstructured object);
// nil for anything else. A missing or non-integer minMember reads as 0 (no size).
func PeerGroupOf(obj interface{}) *convert.PeerGroup {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	g := &convert.PeerGroup{}
	if v, found, err := unstructured.NestedFieldNoCopy(u.Object, "spec", "minMember"); found && err == nil {
		switch n := v.(type) {
		case int64:
			g.MinMember = n
		case int32:
			g.MinMember = int64(n)
		case int:
			g.MinMember = int64(n)
		case float64:
			if n == float64(int64(n)) {
				g.MinMember = int64(n)
			}
		}
	}
	if q, found, err := unstructured.NestedString(u.Object, "spec", "queue"); found && err == nil {
		g.Queue = q
	}
	return g
}

// servedResource: the API server lists `resource` in group version gv.
func servedResource(cs kubernetes.Interface, gv, resource string) bool {
	rl, err := cs.Discovery().ServerResourcesForGroupVersion(gv)
	if err != nil || rl == nil {
		return false
	}
	for _, r := range rl.APIResources {
		if r.Name == resource {
			return true
		}
	}
	return false
}
