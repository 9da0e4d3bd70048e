package convert

// Fuzz targets for the shim's conversions (docs/testing.md, "Fuzzing"): a Pod or Node as the API
// server would hand it over (JSON), with the PodGroup and the peers' PodGroups it names, into the
// engine's messages. `go test ./...` runs the seeds below and those in testdata/fuzz/ as regression
// tests; `make fuzz` runs each with -fuzz for FUZZ_TIME.
//
// What every input must keep (besides not panicking):
//   - the input is not modified (informer objects are shared);
//   - the message marshals (valid proto3: strings are UTF-8);
//   - no user-set podgroup.internal.tidal.dev/* annotation survives; the PodGroup's are there
//     exactly when the pod names one;
//   - a gang size added from a peer's PodGroup is 1..MaxGangSize, and never over the pod's own.

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
)

const seedPod = `{"metadata":{"name":"w-0","namespace":"team","uid":"u0",
 "labels":{"tidal.dev/gang":"train","app":"w"},
 "annotations":{"tidal.dev/gang-size":"4","podgroup.internal.tidal.dev/state":"gang"}},
 "spec":{"schedulerName":"tidal-scheduler","priority":10,
  "schedulingGroup":{"podGroupName":"train"},
  "containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":"8","cpu":"500m","memory":"1Gi"}}}],
  "initContainers":[{"name":"i","resources":{"requests":{"cpu":"2"}}}],
  "nodeSelector":{"pool":"gpu"},
  "tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule"}],
  "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
    {"matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]}]}]},
   "preferredDuringSchedulingIgnoredDuringExecution":[{"weight":5,"preference":{"matchFields":[
    {"key":"metadata.name","operator":"NotIn","values":["n1"]}]}}]},
   "podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
    {"labelSelector":{"matchLabels":{"app":"w"}},"topologyKey":"kubernetes.io/hostname"}]}}},
 "status":{"phase":"Pending"}}`

const seedPeerPod = `{"metadata":{"name":"v-1","namespace":"team","uid":"u1",
 "annotations":{"scheduling.k8s.io/group-name":"pg","pod-group-name":"kg"}},
 "spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"2"}}}]},
 "status":{"phase":"Running","startTime":"2026-01-01T00:00:00Z"}}`

const seedNode = `{"metadata":{"name":"n1","labels":{"nvidia.com/gpu.product":"h100","topology.tidal.dev/leaf":"l0"}},
 "spec":{"unschedulable":true,"taints":[{"key":"gpu","value":"x","effect":"NoSchedule"}]},
 "status":{"allocatable":{"nvidia.com/gpu":"8","cpu":"64","memory":"512Gi"},
  "conditions":[{"type":"Ready","status":"True"},{"type":"GPUUnhealthy","status":"True","reason":"XidError79",
   "lastHeartbeatTime":"2026-01-01T00:00:00Z"}]}}`

func FuzzPod(f *testing.F) {
	f.Add([]byte(seedPod), int32(4), "topology.tidal.dev/leaf", int64(3), "research")
	f.Add([]byte(seedPeerPod), int32(0), "", int64(10001), "")
	f.Add([]byte(`{"metadata":{"name":"p"},"spec":{"schedulingGroup":{"podGroupName":""}}}`), int32(-1), "k", int64(-5), "q")
	f.Fuzz(func(t *testing.T, podJSON []byte, minCount int32, topologyKey string, peerMin int64, peerQueue string) {
		var p v1.Pod
		if err := json.Unmarshal(podJSON, &p); err != nil {
			return
		}
		if !utf8.ValidString(topologyKey) || !utf8.ValidString(peerQueue) {
			return // PodGroups come from the API server as JSON: their strings are UTF-8
		}
		// The PodGroups the pod names: gang (minCount > 0), basic (0) or missing (< 0); the peers'
		// with minMember peerMin and queue peerQueue.
		SetPodGroupGetter(func(ns, name string) *schedulingv1alpha2.PodGroup {
			switch {
			case minCount < 0:
				return nil
			case minCount == 0:
				return &schedulingv1alpha2.PodGroup{Spec: schedulingv1alpha2.PodGroupSpec{SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{
					Basic: &schedulingv1alpha2.BasicSchedulingPolicy{}}}}
			}
			return gangGroup(name, minCount, topologyKey)
		})
		peer := func(ns, name string) *PeerGroup { return &PeerGroup{MinMember: peerMin, Queue: peerQueue} }
		SetPeerGroupGetter(Volcano, peer)
		SetPeerGroupGetter(KAI, peer)
		defer SetPodGroupGetter(nil)
		defer SetPeerGroupGetter(Volcano, nil)
		defer SetPeerGroupGetter(KAI, nil)

		before := p.DeepCopy()
		out := Pod(&p)
		if !reflect.DeepEqual(before, &p) {
			t.Fatalf("Pod modified its input")
		}
		if _, err := proto.Marshal(out); err != nil {
			t.Fatalf("converted pod does not marshal: %v", err)
		}
		group := PodGroupName(&p)
		for k, v := range out.Annotations {
			if strings.HasPrefix(k, PodGroupPrefix) && group == "" {
				t.Fatalf("annotation %s=%q survives on a pod naming no PodGroup", k, v)
			}
		}
		if group != "" && out.Annotations[PodGroupNameKey] != group {
			t.Fatalf("%s = %q, want %q", PodGroupNameKey, out.Annotations[PodGroupNameKey], group)
		}
		if !has(&p, GangSizeKey) {
			if v, ok := out.Annotations[GangSizeKey]; ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 1 || n > MaxGangSize {
					t.Fatalf("gang size %q from a peer's PodGroup is not 1..%d", v, MaxGangSize)
				}
			}
		} else if p.Annotations[GangSizeKey] != "" && out.Annotations[GangSizeKey] != p.Annotations[GangSizeKey] {
			t.Fatalf("the pod's own gang size %q became %q", p.Annotations[GangSizeKey], out.Annotations[GangSizeKey])
		}
		if out.Uid != string(p.UID) || out.Name != p.Name || out.Namespace != p.Namespace {
			t.Fatalf("identity changed: %s/%s %s", out.Namespace, out.Name, out.Uid)
		}
		_ = PodRef(&p)
	})
}

func FuzzNode(f *testing.F) {
	f.Add([]byte(seedNode))
	f.Add([]byte(`{"metadata":{"name":"n"},"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Ready","status":"True"}]}}`))
	f.Fuzz(func(t *testing.T, nodeJSON []byte) {
		var n v1.Node
		if err := json.Unmarshal(nodeJSON, &n); err != nil {
			return
		}
		before := n.DeepCopy()
		out := Node(&n)
		if !reflect.DeepEqual(before, &n) {
			t.Fatalf("Node modified its input")
		}
		if _, err := proto.Marshal(out); err != nil {
			t.Fatalf("converted node does not marshal: %v", err)
		}
		if len(out.Conditions) > MaxNodeConditions {
			t.Fatalf("%d conditions, at most %d", len(out.Conditions), MaxNodeConditions)
		}
		for _, c := range out.Conditions {
			if c.Type == "" || c.Type == string(v1.NodeReady) || len(c.Type) > MaxNameBytes || len(c.Status) > MaxNameBytes || len(c.Reason) > MaxNameBytes {
				t.Fatalf("condition %q/%q/%q sent", c.Type, c.Status, c.Reason)
			}
		}
		if out.GpuModel != n.Labels[GPUModelLabel] || len(out.Taints) != len(n.Spec.Taints) {
			t.Fatalf("gpu model %q / %d taints, want %q / %d", out.GpuModel, len(out.Taints), n.Labels[GPUModelLabel], len(n.Spec.Taints))
		}
	})
}
