// Bounds on what the shim sends the engine. The numbers mirror core/api/limits.h (the one place
// they are documented, with why); change both together.
//
//   - Only the labels and annotations the engine reads travel with a pod (engine_keys.txt, the
//     list of engine/pod_keys.cc's podkeys::KeysRead(); a C++ unit test keeps the two equal). A
//     pod's other keys (a 200 KB last-applied-configuration, a controller's bookkeeping) never
//     bloat the Sync stream. A node's labels all travel: node selectors and affinity may name any.
//   - A pod whose message is still over MaxObjectBytes is sent without its labels, annotations and
//     constraints but with OversizeAnnotation = its size: the engine counts its capacity if bound
//     and refuses it if pending (TidalInvalidSpec naming the size). Such a node is sent cordoned,
//     with only its hostname label (and the size under OversizeAnnotation). The stream logs both.
//     Nothing is dropped.
//   - A node's conditions other than Ready travel, at most MaxNodeConditions of them, each string
//     at most MaxNameBytes (what is dropped or cut: nodeConditions in convert.go).
//   - Sync messages are cut at SyncBatchBytes (and at MaxBatch objects); the engine receives up to
//     MaxSyncMessageBytes.
//
// Threading: constants and pure functions.
package convert

import (
	_ "embed"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

const (
	// MaxObjectBytes is the largest pod or node message (limits::kMaxObjectBytes).
	MaxObjectBytes = 1 << 20
	// SyncBatchBytes is where senders cut Sync messages (limits::kSyncBatchBytes).
	SyncBatchBytes = 4 << 20
	// MaxSyncMessageBytes is the engine's gRPC receive limit (limits::kMaxSyncMessageBytes).
	MaxSyncMessageBytes = 16 << 20
	// OversizeAnnotation marks a pod sent without its keys (limits::kOversizeAnnotation).
	OversizeAnnotation = "sync.internal.tidal.dev/oversize"
	// MaxNameBytes bounds names (limits::kMaxNameBytes, Kubernetes' DNS subdomain 253); here also
	// each string of a node condition.
	MaxNameBytes = 253
	// MaxNodeConditions is the most conditions a node is sent with (beside Ready).
	MaxNodeConditions = 32
	// HostnameLabel is the node label the engine reads as the node level.
	HostnameLabel = "kubernetes.io/hostname"
)

//go:embed engine_keys.txt
var engineKeysText string

// engineKeys: the keys of engine_keys.txt (one a line; '#' starts a comment).
var engineKeys = func() map[string]struct{} {
	out := map[string]struct{}{}
	for _, line := range strings.Split(engineKeysText, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			out[line] = struct{}{}
		}
	}
	return out
}()

// EngineReads reports whether the engine reads key on a pod (as a label or an annotation).
func EngineReads(key string) bool {
	_, ok := engineKeys[key]
	return ok
}

// EngineKeys is the number of keys the engine reads (for tests).
func EngineKeys() int { return len(engineKeys) }

// engineView copies the keys of m the engine reads; keys the shim itself sets (reserved
// *.internal.tidal.dev/ ones) are never taken from the user.
func engineView(m map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		if !EngineReads(k) || strings.Contains(k, ".internal.tidal.dev/") {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// boundPod returns out, or when its message is over MaxObjectBytes a copy without labels,
// annotations and constraints, marked with OversizeAnnotation.
func boundPod(out *tidalv1.Pod) *tidalv1.Pod {
	size := proto.Size(out)
	if size <= MaxObjectBytes {
		return out
	}
	return &tidalv1.Pod{
		Uid: out.Uid, Namespace: out.Namespace, Name: out.Name, SchedulerName: out.SchedulerName,
		NodeName: out.NodeName, Phase: out.Phase, Request: out.Request, Priority: out.Priority,
		CreationUnix: out.CreationUnix, StartUnix: out.StartUnix, Terminating: out.Terminating,
		Annotations: map[string]string{OversizeAnnotation: strconv.Itoa(size)},
	}
}

// PodOversize reports the size a pod's full message had when it was sent without its keys (0: it
// was not).
func PodOversize(p *tidalv1.Pod) int {
	n, _ := strconv.Atoi(p.GetAnnotations()[OversizeAnnotation])
	return n
}

// boundNode returns out, or when its message is over MaxObjectBytes a cordoned copy with only its
// hostname label, its (bounded) conditions and OversizeAnnotation = its size as a label (its
// capacity still counts for the pods bound there; nothing new lands on it).
func boundNode(out *tidalv1.Node) *tidalv1.Node {
	size := proto.Size(out)
	if size <= MaxObjectBytes {
		return out
	}
	return &tidalv1.Node{
		Name: out.Name, Capacity: out.Capacity, Ready: out.Ready, Unschedulable: true, GpuModel: out.GpuModel,
		Labels:      map[string]string{HostnameLabel: out.Labels[HostnameLabel], OversizeAnnotation: strconv.Itoa(size)},
		Conditions:  out.Conditions,  // bounded (about 25 KB at most): a health verdict still arrives
		Annotations: out.Annotations, // bounded (two keys): a drain still arrives
	}
}

// cutUTF8 is s cut to at most max bytes, not inside a UTF-8 sequence (proto strings must stay
// valid UTF-8).
func cutUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size > 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// NodeOversize is the size a node's full message had when it was sent cordoned without its
// labels and taints (0: it was not).
func NodeOversize(n *tidalv1.Node) int {
	v, _ := strconv.Atoi(n.GetLabels()[OversizeAnnotation])
	return v
}
