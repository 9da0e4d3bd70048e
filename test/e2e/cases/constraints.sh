# shellcheck shell=bash
# Sourced by run.sh: the Kubernetes path obeys every stock constraint the engine must know before
# it plans (issue 11). Cases:
#   node-selector  a 1-GPU pod with a nodeSelector matching one node is bound there within seconds
#   taint          leaf-3 tainted NoSchedule: a 16-node leaf gang and four 1-GPU pods avoid it; a
#                  tolerating pod pinned to leaf-3 runs there
#   affinity       required node affinity to a GPU product label (one node relabelled A100) binds
#                  there; a 2-member gang whose members repel each other (required pod anti-affinity,
#                  kubernetes.io/hostname) runs on two nodes
#   unlabeled      two nodes without topology labels: a 2-node gang with topology-required nvlink
#                  pinned to them is never placed across them; without the requirement it runs
#   host-port      a planned node kube-scheduler's NodePorts filter refuses (a default-scheduler pod
#                  holds the host port there) is reported back, excluded, and the pod runs on the
#                  other node its selector allows, with a TidalPlannedNodeRefused event
MORE_CASES+=(node-selector taint affinity unlabeled host-port)

# one_pod NS NAME GPUS LABELS-JSON SPEC-MEMBERS: one tidal-scheduler pod with extra spec members
one_pod() {
  printf '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s", "namespace": "%s", "labels": %s},
 "spec": {"schedulerName": "tidal-scheduler", "terminationGracePeriodSeconds": 0, %s
  "containers": [{"name": "main", "image": "fake.invalid/x:1", "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "%s"}, "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "%s"}}}]}}\n' \
    "$2" "$1" "$4" "${5:+$5,}" "$3" "$3"
}
node_of() { pod_field "$1" "$2" '{.spec.nodeName}'; }
leaf_of_node() { k get node "$1" -o jsonpath='{.metadata.labels.topology\.tidal\.dev/leaf}'; }

case_node-selector() {
  local ns=e2e-selector t0
  new_ns $ns
  t0=$(e2e_now_ms)
  one_pod $ns pinned 1 '{}' '"nodeSelector": {"kubernetes.io/hostname": "node-37"}' | k create -f - >/dev/null
  check "a pod whose nodeSelector matches only node-37 is bound within 10 s" \
    until_true 10 eval "[ \"\$(node_of $ns pinned)\" = node-37 ]"
  timings+=("node-selector-bound=$(ms_since "$t0")ms")
  check "no TidalPlannedNodeRefused on the way (the engine planned node-37 itself)" no_event $ns TidalPlannedNodeRefused pinned
  cleanup_ns $ns
}

case_taint() {
  local ns=e2e-taint nodes l i
  new_ns $ns
  nodes=$(k get nodes -l topology.tidal.dev/leaf=leaf-3 -o name)
  # shellcheck disable=SC2086
  k taint nodes $nodes dedicated=infer:NoSchedule --overwrite >/dev/null
  gang $ns leafgang 16 leaf | k create -f - >/dev/null
  pods $ns single 4 1 tidal-scheduler | k create -f - >/dev/null
  check "the 16-node leaf gang and four 1-GPU pods run within 40 s" until_true 40 all_running $ns 20
  l=$(leaves $ns tidal.dev/gang=leafgang)
  check "the gang is in one leaf, not the tainted leaf-3 ($(echo "$l" | tr '\n' ' '))" \
    eval "[ \"\$(echo \"\$l\" | grep -c .)\" -eq 1 ] && ! grep -qx leaf-3 <<<\"\$l\""
  local bad=""
  for i in 0 1 2 3; do [ "$(leaf_of_node "$(node_of $ns single-$i)")" != leaf-3 ] || bad+=" single-$i"; done
  check "no single pod landed in leaf-3${bad:+ ($bad)}" test -z "$bad"
  one_pod $ns tolerant 8 '{}' '"nodeSelector": {"topology.tidal.dev/leaf": "leaf-3"}, "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "infer", "effect": "NoSchedule"}]' |
    k create -f - >/dev/null
  check "a pod tolerating the taint runs in leaf-3" until_true 15 eval "[ \"\$(pod_field $ns tolerant '{.status.phase}')\" = Running ]"
  cleanup_ns $ns
  # shellcheck disable=SC2086
  k taint nodes $nodes dedicated- >/dev/null 2>&1 || true
}

case_affinity() {
  local ns=e2e-affinity a b
  new_ns $ns
  k label node node-21 nvidia.com/gpu.product=A100-SXM4-80GB --overwrite >/dev/null
  one_pod $ns a100 8 '{}' '"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["A100-SXM4-80GB"]}]}]}}}' |
    k create -f - >/dev/null
  check "required node affinity to the A100 product label binds on node-21" \
    until_true 15 eval "[ \"\$(node_of $ns a100)\" = node-21 ]"
  local anti='"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"tidal.dev/gang": "apart"}}, "topologyKey": "kubernetes.io/hostname"}]}}'
  for i in 0 1; do
    one_pod $ns apart-$i 4 '{"tidal.dev/gang": "apart", "tidal.dev/gang-size": "2"}' "$anti" | k create -f - >/dev/null
  done
  check "a 2-member gang with self anti-affinity runs" until_true 20 all_running $ns 2 tidal.dev/gang=apart
  a=$(node_of $ns apart-0) b=$(node_of $ns apart-1)
  check "its members are on two nodes ($a, $b)" test -n "$a" -a "$a" != "$b"
  cleanup_ns $ns
  k label node node-21 nvidia.com/gpu.product=H100-SXM5-80GB --overwrite >/dev/null
}

case_unlabeled() {
  local ns=e2e-unlabeled i sel='"nodeSelector": {"nvidia.com/gpu.product": "B200"}'
  new_ns $ns
  for i in 0 1; do
    printf '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare-%d", "annotations": {"kwok.x-k8s.io/node": "fake"},
 "labels": {"type": "kwok", "kubernetes.io/hostname": "bare-%d", "nvidia.com/gpu.product": "B200"}},
 "status": {"capacity": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"},
            "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}}}\n' "$i" "$i" | k create -f - >/dev/null
  done
  check "the two unlabeled nodes are Ready" until_true 30 eval \
    "[ \"\$(k get nodes bare-0 bare-1 -o jsonpath='{range .items[*]}{.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}' | grep -c True)\" -eq 2 ]"
  check "a TidalTopologyLabelMissing event on bare-0" until_true 10 eval \
    "k get events -n default --field-selector involvedObject.name=bare-0,reason=TidalTopologyLabelMissing -o name | grep -q ."
  check "tidal_nodes_missing_topology_label{level=\"nvlink\"} counts 2" until_true 10 eval \
    "curl -sf http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/metrics | grep -q '^tidal_nodes_missing_topology_label{level=\"nvlink\"} 2\$'"
  for i in 0 1; do
    one_pod $ns nv-$i 8 '{"tidal.dev/gang": "nv", "tidal.dev/gang-size": "2", "tidal.dev/topology-required": "nvlink"}' "$sel" | k create -f - >/dev/null
  done
  check "the nvlink-required gang pinned to them is refused (FailedScheduling)" until_true 20 has_event $ns FailedScheduling nv-
  sleep 2
  check "and never placed across the two unlabeled nodes" test "$(bound $ns tidal.dev/gang=nv)" -eq 0
  k delete pods -n $ns -l tidal.dev/gang=nv --wait=false >/dev/null
  for i in 0 1; do
    one_pod $ns loose-$i 8 '{"tidal.dev/gang": "loose", "tidal.dev/gang-size": "2"}' "$sel" | k create -f - >/dev/null
  done
  check "without a required level the same gang runs on both" until_true 30 all_running $ns 2 tidal.dev/gang=loose
  cleanup_ns $ns
  k delete node bare-0 bare-1 >/dev/null 2>&1 || true
}

case_host-port() {
  local ns=e2e-hostport port='"ports": [{"containerPort": 8080, "hostPort": 18080}]'
  new_ns $ns
  k label node node-50 node-51 e2e-hostport=yes --overwrite >/dev/null
  # The default scheduler's pod holds host port 18080 on node-50 and uses 4 of its GPUs, so the
  # engine's best fit for a 4-GPU pod is node-50 (the tightest of the two).
  printf '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "holder", "namespace": "%s"},
 "spec": {"nodeName": "node-50", "terminationGracePeriodSeconds": 0, "containers": [{"name": "main", "image": "fake.invalid/x:1", %s,
  "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"}, "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"}}}]}}\n' \
    "$ns" "$port" | k create -f - >/dev/null
  check "the port holder runs on node-50" until_true 15 eval "[ \"\$(pod_field $ns holder '{.status.phase}')\" = Running ]"
  sleep 1  # the engine has seen it bound
  printf '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "wants-port", "namespace": "%s"},
 "spec": {"schedulerName": "tidal-scheduler", "nodeSelector": {"e2e-hostport": "yes"}, "terminationGracePeriodSeconds": 0,
  "containers": [{"name": "main", "image": "fake.invalid/x:1", %s,
  "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"}, "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"}}}]}}\n' \
    "$ns" "$port" | k create -f - >/dev/null
  check "the Tidal pod asking for the same host port runs on node-51 within 15 s" \
    until_true 15 eval "[ \"\$(node_of $ns wants-port)\" = node-51 ]"
  check "a TidalPlannedNodeRefused event names node-50 and NodePorts" has_event $ns TidalPlannedNodeRefused node-50 NodePorts
  cleanup_ns $ns
  k label node node-50 node-51 e2e-hostport- >/dev/null 2>&1 || true
}
