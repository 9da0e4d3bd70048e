#!/usr/bin/env bash
# Creates fake KWOK GPU nodes laid out on a fabric of BLOCKS x LEAVES x NVLINKS x NODES:
#   BLOCKS blocks, LEAVES leaf switches per block, NVLINKS NVLink domains per leaf, NODES nodes per domain
# (BLOCKS*LEAVES*NVLINKS*NODES nodes in all), then waits until kwok has made all of them Ready.
#
# Usage: make-nodes.sh [--print] BASE BLOCKS LEAVES NVLINKS NODES
#   BASE     a directory set up by cluster-up.sh (uses BASE/kubeconfig)
#   --print  only write the YAML to stdout (no cluster needed; BASE is ignored)
# e.g. make-nodes.sh /tmp/e2e 2 2 2 2    -> 16 nodes node-0 .. node-15
#
# Each node: name ${PREFIX}<i> (i = 0.. in fabric order), annotation kwok.x-k8s.io/node: fake (kwok only
# manages nodes with it), capacity = allocatable = cpu 64, memory 512Gi, pods 110, nvidia.com/gpu 8, and
#   topology.tidal.dev/block:  block-<b>    (b: block index)
#   topology.tidal.dev/leaf:   leaf-<l>     (l: global leaf index, b*LEAVES + leaf-in-block)
#   topology.tidal.dev/nvlink: nvlink-<d>   (d: global NVLink-domain index)
# the same names and labels as the engine's GenerateFabric (core/io/cluster_file.cc), so a fabric made
# here and one made by the engine describe the same cluster.
#
# Env: TIDAL_E2E_NODE_PREFIX (node-), TIDAL_E2E_NODE_GPUS (8), TIDAL_E2E_NODE_CPU (64),
#      TIDAL_E2E_NODE_MEMORY (512Gi), TIDAL_E2E_NODE_PODS (110), TIDAL_E2E_GPU_PRODUCT (H100-SXM5-80GB),
#      TIDAL_E2E_APPLY_PARALLEL (4: concurrent kubectl processes), TIDAL_E2E_TIMEOUT (wait, seconds).
# The nodes are sent in bulk: one multi-document YAML stream, split over a few parallel
# `kubectl create` calls (nodes that already exist are skipped, so a rerun is harmless).
set -euo pipefail
# shellcheck source=test/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PRINT=0
[ "${1:-}" = --print ] && { PRINT=1; shift; }
[ $# -eq 5 ] || { sed -n '5,9p' "${BASH_SOURCE[0]}" >&2; exit 2; }
BASE=$1 NB=$2 NL=$3 ND=$4 NN=$5
for v in "$NB" "$NL" "$ND" "$NN"; do [[ $v =~ ^[1-9][0-9]*$ ]] || e2e_die "fabric sizes must be positive integers"; done
PREFIX=${TIDAL_E2E_NODE_PREFIX:-node-}
GPUS=${TIDAL_E2E_NODE_GPUS:-8}
CPU=${TIDAL_E2E_NODE_CPU:-64}
MEM=${TIDAL_E2E_NODE_MEMORY:-512Gi}
PODS=${TIDAL_E2E_NODE_PODS:-110}
PRODUCT=${TIDAL_E2E_GPU_PRODUCT:-H100-SXM5-80GB}
PAR=${TIDAL_E2E_APPLY_PARALLEL:-4}
TOTAL=$((NB * NL * ND * NN))

# gen FIRST STEP: YAML for nodes FIRST, FIRST+STEP, ... (so PAR streams get an even share)
gen() {
  local i=$1 step=$2 dom b l
  for ((; i < TOTAL; i += step)); do
    dom=$((i / NN)); l=$((dom / ND)); b=$((l / NL))
    printf -- '---
apiVersion: v1
kind: Node
metadata:
  name: %s%d
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    kubernetes.io/hostname: %s%d
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    nvidia.com/gpu.product: %s
    topology.tidal.dev/block: block-%d
    topology.tidal.dev/leaf: leaf-%d
    topology.tidal.dev/nvlink: nvlink-%d
status:
  capacity: {cpu: "%s", memory: %s, pods: "%s", nvidia.com/gpu: "%s"}
  allocatable: {cpu: "%s", memory: %s, pods: "%s", nvidia.com/gpu: "%s"}
' "$PREFIX" "$i" "$PREFIX" "$i" "$PRODUCT" "$b" "$l" "$dom" \
      "$CPU" "$MEM" "$PODS" "$GPUS" "$CPU" "$MEM" "$PODS" "$GPUS"
  done
}

if [ "$PRINT" = 1 ]; then gen 0 1; exit 0; fi

[ -f "$BASE/kubeconfig" ] || e2e_die "$BASE/kubeconfig missing: run cluster-up.sh $BASE first"
T0=$(e2e_now_ms)
[ "$PAR" -ge 1 ] || PAR=1
[ "$PAR" -le "$TOTAL" ] || PAR=$TOTAL
pids=()
for ((k = 0; k < PAR; k++)); do
  gen "$k" "$PAR" | e2e_kubectl "$BASE" create -f - -o name 2> >(grep -v 'AlreadyExists' >&2) >/dev/null &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
T1=$(e2e_now_ms)
have=$(e2e_kubectl "$BASE" get nodes -l type=kwok -o name | grep -c "^node/$PREFIX" || true)
[ "$have" -ge "$TOTAL" ] || e2e_die "only $have of $TOTAL nodes exist after create (rc=$rc)"

# kwok's node-initialize stage marks them Ready; poll the count (kubectl wait is one watch per node).
ready_count() {
  e2e_kubectl "$BASE" get nodes -l type=kwok \
    -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
    awk -v p="$PREFIX" 'index($1, p) == 1 && $2 == "True"' | wc -l
}
all_ready() { [ "$(ready_count)" -ge "$TOTAL" ]; }
deadline=$((SECONDS + TIDAL_E2E_TIMEOUT + TOTAL / 20))
until all_ready; do
  [ "$SECONDS" -lt "$deadline" ] || e2e_die "only $(ready_count) of $TOTAL nodes Ready (is kwok running? see $BASE/log/kwok.log)"
  sleep 0.2
done
T2=$(e2e_now_ms)
e2e_log "created $TOTAL nodes (${NB}x${NL}x${ND}x${NN}) in $((T1 - T0))ms, all Ready after $((T2 - T0))ms"
