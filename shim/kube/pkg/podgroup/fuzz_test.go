package podgroup

// Fuzz target for reading a peer's PodGroup (Volcano's, KAI's custom resources, as the dynamic
// informer hands them over: unstructured JSON) into what the shim adds to converted pods
// (docs/testing.md, "Fuzzing"). `go test ./...` runs the seeds; `make fuzz` runs it with -fuzz.
//
// What every input must keep: no panic; nil exactly for what is not an object; a minMember that
// is not a whole number reads as 0; the queue is spec.queue when that is a string.

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/tools/cache"
)

func FuzzPeerGroupOf(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"PodGroup","metadata":{"name":"pg","namespace":"team"},"spec":{"minMember":4,"queue":"research"}}`), false)
	f.Add([]byte(`{"apiVersion":"scheduling.run.ai/v2alpha2","kind":"PodGroup","spec":{"minMember":2.5,"queue":7}}`), true)
	f.Add([]byte(`{"spec":{"minMember":"4"}}`), false)
	f.Add([]byte(`{"spec":[1,2]}`), false)
	f.Fuzz(func(t *testing.T, data []byte, tombstone bool) {
		u := &unstructured.Unstructured{}
		// As the dynamic informer decodes: whole numbers become int64.
		if err := utiljson.Unmarshal(data, &u.Object); err != nil || u.Object == nil {
			return
		}
		var obj interface{} = u
		if tombstone {
			obj = cache.DeletedFinalStateUnknown{Key: "team/pg", Obj: u}
		}
		g := PeerGroupOf(obj)
		if g == nil {
			t.Fatalf("nil for an unstructured object")
		}
		spec, _ := u.Object["spec"].(map[string]interface{})
		if q, ok := spec["queue"].(string); ok && g.Queue != q {
			t.Fatalf("queue %q, want %q", g.Queue, q)
		}
		if m, ok := spec["minMember"].(float64); ok && m != float64(int64(m)) && g.MinMember != 0 {
			t.Fatalf("minMember %v read as %d, want 0", m, g.MinMember)
		}
		if PeerGroupOf("not an object") != nil {
			t.Fatalf("a string read as a PodGroup")
		}
	})
}
