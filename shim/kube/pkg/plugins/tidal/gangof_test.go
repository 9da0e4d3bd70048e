package tidal

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gangOf reads the engine's keys in the engine's order (engine/pod_keys.cc).
func TestGangOfFollowsTheEnginesPrecedence(t *testing.T) {
	pg := "upstream"
	withGroup := func(p *v1.Pod) *v1.Pod { p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &pg}; return p }
	pod := func(labels, ann map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: ann}}
	}
	cases := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"none", pod(nil, nil), ""},
		{"tidal first", withGroup(pod(map[string]string{"tidal.dev/gang": "t"}, map[string]string{"scheduling.k8s.io/group-name": "v"})), "t"},
		{"then the PodGroup", withGroup(pod(map[string]string{"scheduling.x-k8s.io/pod-group": "sp"}, nil)), "upstream"},
		{"scheduler-plugins before Volcano", pod(map[string]string{"scheduling.x-k8s.io/pod-group": "sp"}, map[string]string{"scheduling.k8s.io/group-name": "v"}), "sp"},
		{"KAI", pod(nil, map[string]string{"pod-group-name": "k"}), "k"},
		{"Kueue", pod(map[string]string{"kueue.x-k8s.io/pod-group-name": "q"}, nil), "q"},
		{"JobSet", pod(map[string]string{"jobset.sigs.k8s.io/jobset-name": "js"}, nil), "js"},
		{"LeaderWorkerSet: name and group index", pod(map[string]string{"leaderworkerset.sigs.k8s.io/name": "lws",
			"leaderworkerset.sigs.k8s.io/group-index": "3"}, nil), "lws-3"},
		{"LeaderWorkerSet without its index: none", pod(map[string]string{"leaderworkerset.sigs.k8s.io/name": "lws"}, nil), ""},
	}
	for _, c := range cases {
		if got := gangOf(c.pod); got != c.want {
			t.Errorf("%s: gangOf = %q, want %q", c.name, got, c.want)
		}
	}
}
