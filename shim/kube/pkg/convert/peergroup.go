// Volcano's and KAI's PodGroups (custom resources of theirs): a pod names one in an annotation
// (Volcano scheduling.k8s.io/group-name, KAI pod-group-name); the PodGroup keeps the gang's size
// (spec.minMember) and its queue (spec.queue). The engine reads these peers' keys from the pod
// (engine/pod_keys.cc: gang names in the order Tidal, upstream PodGroup, scheduler-plugins,
// Volcano, KAI, ...; queue keys in the order tidal.dev/queue, Volcano, KAI, ...) but not their
// PodGroups, so the converted pod (the message to the engine, never the API object) gets what the
// PodGroup says under keys the engine reads, where the engine's precedence puts the peer:
//
//   - size: tidal.dev/gang-size = minMember (1..10000), only when the peer's key is the one that
//     names the pod's gang (no tidal.dev/gang, no upstream PodGroup, no scheduler-plugins label;
//     for KAI no Volcano annotation either) and the pod does not set tidal.dev/gang-size, which
//     wins, as it does over every source's own size;
//   - queue: the peer's own queue key (Volcano scheduling.volcano.sh/queue-name, KAI
//     kai.scheduler/queue) = spec.queue, unless the pod sets one of the peer's queue keys.
//
// A PodGroup that does not exist, or a peer whose API is not served (no getter), adds nothing: the
// pod converts as before (such a gang needs tidal.dev/gang-size). PodGroups are read through
// getters the podgroup package installs from its dynamic informers (SetPeerGroupGetter).
//
// Threading: getters are installed before the informers start and read by any goroutine (atomic).
package convert

import (
	"strconv"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

// Peer is a scheduler whose PodGroups Tidal reads.
type Peer int

const (
	Volcano Peer = iota // scheduling.volcano.sh/v1beta1 PodGroup
	KAI                 // scheduling.run.ai/v2alpha2 PodGroup
)

// Keys of the engine's gang and queue tables (engine/pod_spec.h, engine/pod_keys.cc).
const (
	GangKey             = "tidal.dev/gang"
	GangSizeKey         = "tidal.dev/gang-size"
	SchedulerPluginsKey = "scheduling.x-k8s.io/pod-group"
	MaxGangSize         = 10000
)

// PeerGroup is what Tidal reads from a peer's PodGroup.
type PeerGroup struct {
	MinMember int64  // spec.minMember
	Queue     string // spec.queue
}

// PeerGroupGetter returns the peer's PodGroup ns/name, or nil when there is none.
type PeerGroupGetter func(namespace, name string) *PeerGroup

type peerSource struct {
	Name      string   // for logs
	GroupKey  string   // the pod annotation naming the PodGroup
	QueueKeys []string // the peer's queue keys on the pod, in the engine's order
	getter    atomic.Pointer[PeerGroupGetter]
}

// Peers, in the engine's gang precedence.
var peers = [...]*peerSource{
	Volcano: {Name: "Volcano", GroupKey: "scheduling.k8s.io/group-name", QueueKeys: []string{"scheduling.volcano.sh/queue-name"}},
	KAI:     {Name: "KAI", GroupKey: "pod-group-name", QueueKeys: []string{"kai.scheduler/queue", "runai/queue"}},
}

// String is the peer's name.
func (p Peer) String() string { return peers[p].Name }

// SetPeerGroupGetter installs how Pod reads the peer's PodGroups (nil: none are read).
func SetPeerGroupGetter(p Peer, g PeerGroupGetter) {
	if g == nil {
		peers[p].getter.Store(nil)
		return
	}
	peers[p].getter.Store(&g)
}

// PeerGroupName is the peer's PodGroup a pod names, "" when none.
func PeerGroupName(p Peer, pod *v1.Pod) string { return lookup(pod, peers[p].GroupKey) }

// lookup reads a key as the engine does: the annotation when set (even empty), else the label.
func lookup(pod *v1.Pod, key string) string {
	if v, ok := pod.Annotations[key]; ok {
		return v
	}
	return pod.Labels[key]
}

func has(pod *v1.Pod, key string) bool {
	_, a := pod.Annotations[key]
	_, l := pod.Labels[key]
	return a || l
}

// gangPeer is the peer whose key names the pod's gang in the engine's order; false when another
// source (or none) does.
func gangPeer(pod *v1.Pod) (Peer, bool) {
	if lookup(pod, GangKey) != "" || PodGroupName(pod) != "" || lookup(pod, SchedulerPluginsKey) != "" {
		return 0, false
	}
	for i, src := range peers {
		if lookup(pod, src.GroupKey) != "" {
			return Peer(i), true
		}
	}
	return 0, false
}

// applyPeerGroups adds what the pod's peer PodGroups say (see the package comment above).
func applyPeerGroups(pod *v1.Pod, out *tidalv1.Pod) {
	named, ok := gangPeer(pod)
	for i, src := range peers {
		g := src.getter.Load()
		name := lookup(pod, src.GroupKey)
		if g == nil || name == "" {
			continue
		}
		pg := (*g)(pod.Namespace, name)
		if pg == nil {
			continue
		}
		set := func(k, v string) {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
		if ok && named == Peer(i) && !has(pod, GangSizeKey) && pg.MinMember >= 1 && pg.MinMember <= MaxGangSize {
			set(GangSizeKey, strconv.FormatInt(pg.MinMember, 10))
		}
		if pg.Queue != "" && !hasAny(pod, src.QueueKeys) {
			set(src.QueueKeys[0], pg.Queue)
		}
	}
}

func hasAny(pod *v1.Pod, keys []string) bool {
	for _, k := range keys {
		if has(pod, k) {
			return true
		}
	}
	return false
}
