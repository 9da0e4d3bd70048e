package podgroup

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tidal-sched/tidal/shim/kube/pkg/convert"
)

func peerGroup(api PeerAPI, kind, name string, minMember int64, queue string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": api.GVR.GroupVersion().String(), "kind": kind,
		"metadata": map[string]interface{}{"namespace": "team", "name": name},
		"spec":     map[string]interface{}{"minMember": minMember, "queue": queue},
	}}
	return u
}

func volcanoPod(name, group, scheduler string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID("u-" + name),
		Annotations: map[string]string{"scheduling.k8s.io/group-name": group}},
		Spec: v1.PodSpec{SchedulerName: scheduler}}
}

func TestPeerGroupOfReadsMinMemberAndQueue(t *testing.T) {
	g := PeerGroupOf(peerGroup(PeerAPIs[0], "PodGroup", "vj", 4, "research"))
	if g == nil || *g != (convert.PeerGroup{MinMember: 4, Queue: "research"}) {
		t.Fatalf("PeerGroupOf = %+v", g)
	}
	// JSON numbers may come as float64; a fraction is no size.
	u := peerGroup(PeerAPIs[1], "PodGroup", "kj", 0, "")
	u.Object["spec"] = map[string]interface{}{"minMember": float64(3)}
	if g := PeerGroupOf(u); g.MinMember != 3 || g.Queue != "" {
		t.Fatalf("float minMember: %+v", g)
	}
	u.Object["spec"] = map[string]interface{}{"minMember": 2.5}
	if g := PeerGroupOf(u); g.MinMember != 0 {
		t.Fatalf("fractional minMember: %+v", g)
	}
	if PeerGroupOf(&v1.Pod{}) != nil {
		t.Fatal("not a PodGroup")
	}
}

// A Volcano PodGroup seen by the informer: convert.Pod reads its minMember through the getter, and
// adding or changing it re-sends the pods (Tidal's) that name it.
func TestPeerWatcherInstallsTheGetterAndRefreshesMembers(t *testing.T) {
	api := PeerAPIs[0]
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{api.GVR: "PodGroupList"},
		peerGroup(api, "PodGroup", "vj", 4, "research"))
	ours, theirs := volcanoPod("a", "vj", "tidal-scheduler"), volcanoPod("b", "vj", "volcano")
	cs := fake.NewClientset(ours, theirs)
	pf := informers.NewSharedInformerFactory(cs, 0)
	var mu sync.Mutex
	var refreshed []string
	w := &peerWatcher{pods: pf.Core().V1().Pods().Lister(), profiles: map[string]bool{"tidal-scheduler": true},
		refresh: func(pods []*v1.Pod) {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range pods {
				refreshed = append(refreshed, p.Name)
			}
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pf.Core().V1().Pods().Informer()
	pf.Start(ctx.Done())
	pf.WaitForCacheSync(ctx.Done())
	df := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	if err := w.watch(df, api); err != nil {
		t.Fatal(err)
	}
	defer convert.SetPeerGroupGetter(api.Peer, nil)
	df.Start(ctx.Done())
	df.WaitForCacheSync(ctx.Done())

	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for ctx.Err() == nil && !ok() {
			time.Sleep(10 * time.Millisecond)
		}
		if !ok() {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	waitFor("the add to re-send Tidal's pod", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(refreshed) == 1 && refreshed[0] == "a"
	})
	if got := convert.Pod(ours).GetAnnotations()["tidal.dev/gang-size"]; got != "4" {
		t.Fatalf("converted gang-size = %q, want 4 from minMember", got)
	}
	// A status-only change re-sends nothing; a new minMember does.
	status := peerGroup(api, "PodGroup", "vj", 4, "research")
	status.Object["status"] = map[string]interface{}{"phase": "Running"}
	changed := peerGroup(api, "PodGroup", "vj", 6, "research")
	for _, u := range []*unstructured.Unstructured{status, changed} {
		if _, err := dyn.Resource(api.GVR).Namespace("team").Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("the getter to see the change", func() bool { return convert.Pod(ours).GetAnnotations()["tidal.dev/gang-size"] == "6" })
	waitFor("the change to re-send the pod", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(refreshed) >= 2
	})
	time.Sleep(100 * time.Millisecond) // handlers run in order: a refresh for the status change came first
	mu.Lock()
	if len(refreshed) != 2 {
		t.Errorf("refreshed %v, want the add and the minMember change only", refreshed)
	}
	mu.Unlock()
	if m := w.members(api.Peer, "team", "vj"); len(m) != 1 || m[0].Name != "a" {
		t.Fatalf("members = %v, want only Tidal's pod", m)
	}
}

func TestServedResource(t *testing.T) {
	cs := fake.NewClientset()
	api := PeerAPIs[1]
	if servedResource(cs, api.GVR.GroupVersion().String(), "podgroups") {
		t.Fatal("served without the resource")
	}
	cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: "scheduling.run.ai/v2alpha2", APIResources: []metav1.APIResource{{Name: "podgroups"}}}}
	if !servedResource(cs, api.GVR.GroupVersion().String(), "podgroups") {
		t.Fatal("not served")
	}
}
