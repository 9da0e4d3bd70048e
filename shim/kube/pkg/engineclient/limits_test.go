package engineclient

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-sched/tidal/shim/kube/pkg/convert"
	"github.com/tidal-sched/tidal/shim/kube/pkg/enginetest"
)

// Batches of changes are cut by bytes as well as by count: 200 pods of ~1 KB under a 16 KB
// message limit and a MaxBatch of 500 need several messages, each under the limit (before, one
// message of all 200 went: only snapshots were cut by bytes).
func TestIncrementalBatchesAreCutByBytes(t *testing.T) {
	sock := enginetest.Socket(t)
	eng := enginetest.Start(t, sock, "e")
	const limit = 16 << 10
	e := start(t, eng.Addr, Config{FlushInterval: 200 * time.Millisecond, MaxBatch: 500, MaxMessageBytes: limit}, node("n0"))
	if err := e.client.WaitSynced(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := 0; i < n; i++ {
		p := pod("b", fmt.Sprintf("p%d", i), "")
		p.Annotations = map[string]string{"tidal.dev/gang": fmt.Sprintf("g-%d-%0900d", i, 0)} // ~1 KB the engine reads
		if _, err := e.cs.CoreV1().Pods("b").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eng.WaitFor(t, "all pods synced", 10*time.Second, func() bool {
		p, _, _ := countObjects(eng.SyncMessages()[1:])
		return p >= n
	})
	msgs := eng.SyncMessages()[1:]
	if len(msgs) < n*1000/limit {
		t.Errorf("%d messages for %d pods of ~1 KB under a %d-byte limit: not cut by bytes", len(msgs), n, limit)
	}
	for i, m := range msgs {
		if sz := proto.Size(m); sz > limit+convert.MaxObjectBytes/1024 && len(m.UpsertPods) > 1 {
			t.Errorf("message %d: %d bytes, %d pods; over the %d-byte limit", i, sz, len(m.UpsertPods), limit)
		}
	}
}
