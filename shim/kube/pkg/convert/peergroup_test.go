package convert

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func peerPod(labels, annotations map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "w-0", UID: "u0", Labels: labels, Annotations: annotations},
		Spec: v1.PodSpec{SchedulerName: "tidal-scheduler"}}
}

// Volcano's and KAI's PodGroups give the gang's size and queue under the keys the engine reads, only
// where the engine's precedence lets the peer decide.
func TestPeerGroupsFollowTheEnginesPrecedence(t *testing.T) {
	volcano := map[string]*PeerGroup{"vj": {MinMember: 4, Queue: "research"}, "zero": {MinMember: 0, Queue: ""},
		"huge": {MinMember: 10001}}
	kai := map[string]*PeerGroup{"kj": {MinMember: 3, Queue: "team-a"}}
	SetPeerGroupGetter(Volcano, func(ns, name string) *PeerGroup {
		if ns != "team" {
			return nil
		}
		return volcano[name]
	})
	SetPeerGroupGetter(KAI, func(ns, name string) *PeerGroup { return kai[name] })
	defer SetPeerGroupGetter(Volcano, nil)
	defer SetPeerGroupGetter(KAI, nil)
	const vKey, kKey = "scheduling.k8s.io/group-name", "pod-group-name"
	const vQueue, kQueue = "scheduling.volcano.sh/queue-name", "kai.scheduler/queue"

	cases := []struct {
		name         string
		pod          *v1.Pod
		upstream     string
		size, vq, kq string // wanted annotations on the converted pod ("" = absent)
	}{
		{"Volcano: minMember and queue", peerPod(nil, map[string]string{vKey: "vj"}), "", "4", "research", ""},
		{"KAI: minMember and queue", peerPod(nil, map[string]string{kKey: "kj"}), "", "3", "", "team-a"},
		{"the pod's own size wins", peerPod(map[string]string{GangSizeKey: "2"}, map[string]string{vKey: "vj"}), "", "2", "research", ""},
		{"the pod's own Volcano queue wins", peerPod(nil, map[string]string{vKey: "vj", vQueue: "mine"}), "", "4", "mine", ""},
		{"KAI's legacy queue key counts as the pod's own", peerPod(map[string]string{"runai/queue": "old"}, map[string]string{kKey: "kj"}),
			"", "3", "", ""},
		{"tidal.dev/gang names the gang: no size from Volcano, its queue still",
			peerPod(map[string]string{GangKey: "g"}, map[string]string{vKey: "vj"}), "", "", "research", ""},
		{"the upstream PodGroup names the gang", peerPod(nil, map[string]string{vKey: "vj"}), "up", "", "research", ""},
		{"scheduler-plugins before Volcano", peerPod(map[string]string{SchedulerPluginsKey: "sp"}, map[string]string{vKey: "vj"}),
			"", "", "research", ""},
		{"Volcano before KAI: KAI adds its queue only", peerPod(nil, map[string]string{vKey: "vj", kKey: "kj"}), "", "4", "research", "team-a"},
		{"an empty Volcano annotation does not name a gang: KAI's does",
			peerPod(map[string]string{vKey: "vj"}, map[string]string{vKey: "", kKey: "kj"}), "", "3", "", "team-a"},
		{"PodGroup not there: nothing", peerPod(nil, map[string]string{vKey: "later"}), "", "", "", ""},
		{"minMember 0 gives no size", peerPod(nil, map[string]string{vKey: "zero"}), "", "", "", ""},
		{"minMember above 10000 gives no size", peerPod(nil, map[string]string{vKey: "huge"}), "", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.pod
			if c.upstream != "" {
				p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &c.upstream}
			}
			before := len(p.Annotations)
			out := Pod(p)
			// What the engine reads: the annotation, else the label.
			seen := func(k string) string {
				if v, ok := out.GetAnnotations()[k]; ok {
					return v
				}
				return out.GetLabels()[k]
			}
			for key, want := range map[string]string{GangSizeKey: c.size, vQueue: c.vq, kQueue: c.kq} {
				if got := seen(key); got != want {
					t.Errorf("%s = %q, want %q (annotations %v)", key, got, want, out.GetAnnotations())
				}
			}
			if len(p.Annotations) != before {
				t.Errorf("the informer's pod was modified: %v", p.Annotations)
			}
		})
	}
}

func TestPeerGroupsWithoutGettersAddNothing(t *testing.T) {
	SetPeerGroupGetter(Volcano, nil)
	SetPeerGroupGetter(KAI, nil)
	got := Pod(peerPod(nil, map[string]string{"scheduling.k8s.io/group-name": "vj", "pod-group-name": "kj"})).GetAnnotations()
	if _, ok := got[GangSizeKey]; ok || len(got) != 2 {
		t.Fatalf("annotations = %v, want the pod's own two", got)
	}
	if PeerGroupName(Volcano, peerPod(map[string]string{"scheduling.k8s.io/group-name": "l"}, nil)) != "l" ||
		PeerGroupName(KAI, peerPod(nil, nil)) != "" || Volcano.String() != "Volcano" || KAI.String() != "KAI" {
		t.Fatal("PeerGroupName / String")
	}
}
