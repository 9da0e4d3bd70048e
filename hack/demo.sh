#!/usr/bin/env bash
# `make demo`: Tidal for real on a local cluster (everything on 127.0.0.1, nothing downloaded):
#   1. etcd + kube-apiserver + kwok, 128 fake 8-GPU nodes: 2 blocks x 4 leaves x 4 NVLink domains x 4 nodes
#   2. kube-controller-manager (Deployments, ReplicaSets, Jobs), tidal-engine with deploy/config/tidal.yaml
#      (queues, fair share, quota), tidal-scheduler as a secondary scheduler (plus the stock default profile)
#   3. a mixed sample in namespace tidal-demo: training gangs, single-GPU batch pods, an inference
#      Deployment, another team's Deployment on the default scheduler, and workloads that cannot run
#   4. a report: where each workload landed (nodes, leaves, NVLink domains), what is pending and why
#      (pod events, tidal-explain from the engine), the engine's queues
#   5. stays up until Ctrl-C (DEMO_ONCE=1: exits after the report), then tears everything down.
# Usage: hack/demo.sh            (make demo builds first; this script expects the binaries)
# Env:   DEMO_ONCE=1, TIDAL_DEMO_BASE (scratch dir; default a fresh mktemp dir, removed at the end),
#        TIDAL_DEMO_FABRIC (default "2 4 4 4"), TIDAL_DEMO_SETTLE (seconds to wait for placements, 60),
#        plus test/e2e/lib/common.sh's ports.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/e2e/lib/common.sh
source "$ROOT/test/e2e/lib/common.sh"
# shellcheck source=test/e2e/lib/pods.sh
source "$ROOT/test/e2e/lib/pods.sh"

ONCE=${DEMO_ONCE:-0}
if [ -n "${TIDAL_DEMO_BASE:-}" ]; then BASE=$TIDAL_DEMO_BASE; mkdir -p "$BASE"; else BASE=$(mktemp -d /tmp/tidal-demo.XXXXXX); fi
BASE=$(cd "$BASE" && pwd)
NS=tidal-demo
T0=$(e2e_now_ms)

finish() {
  local rc=$?
  trap - EXIT INT TERM
  echo
  e2e_log "tearing down the demo cluster"
  "$E2E_LIB/cluster-down.sh" "$BASE" >/dev/null 2>&1 || true
  if [ -z "${TIDAL_DEMO_BASE:-}" ]; then rm -rf "${BASE:?}"; else e2e_log "logs kept in $BASE/log"; fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 0' INT TERM

k() { e2e_kubectl "$BASE" "$@"; }
for b in tidal-engine tidal-scheduler tidal-explain; do
  [ -x "$TIDAL_E2E_BIN/$b" ] || e2e_die "$TIDAL_E2E_BIN/$b missing: run make demo (it builds everything)"
done

# --- 1-2: cluster, controllers, Tidal ------------------------------------------------------------------
# shellcheck disable=SC2086
set -- ${TIDAL_DEMO_FABRIC:-2 4 4 4}
"$E2E_LIB/cluster-up.sh" "$BASE"
"$E2E_LIB/make-nodes.sh" "$BASE" "$@"
"$E2E_LIB/kcm-up.sh" "$BASE"
TIDAL_E2E_ENGINE_CONFIG=$ROOT/deploy/config/tidal.yaml "$E2E_LIB/tidal-up.sh" "$BASE" all
T_UP=$(e2e_now_ms)
e2e_log "demo cluster up in $(( (T_UP - T0) / 1000 )).$(( (T_UP - T0) % 1000 / 100 ))s: $(k get nodes --no-headers | wc -l) nodes, tidal-engine + tidal-scheduler + kube-controller-manager"

# --- 3: the sample ---------------------------------------------------------------------------------------
k apply -f "$ROOT/test/e2e/demo/workloads.yaml" >/dev/null
w() { printf '"demo.tidal.dev/workload": "%s", "tidal.dev/queue": "%s", "tidal.dev/class": "%s"' "$1" "$2" "$3"; }
{

  # training gangs (8 GPUs per member = one whole node each)
  E2E_POD_CPU=32 E2E_POD_MEMORY=256Gi e2e_gang $NS llm-pretrain 32 8 "$(w llm-pretrain team-llm training)" \
    '"tidal.dev/topology-required": "block", "tidal.dev/topology-preferred": "leaf", "tidal.dev/runtime-limit": "48h"'
  E2E_POD_CPU=32 E2E_POD_MEMORY=256Gi e2e_gang $NS llm-finetune 16 8 "$(w llm-finetune team-llm training)" \
    '"tidal.dev/topology-required": "leaf", "tidal.dev/topology-preferred": "nvlink"'
  E2E_POD_CPU=32 E2E_POD_MEMORY=256Gi e2e_gang $NS vision-train 4 8 "$(w vision-train team-vision training)" \
    '"tidal.dev/topology-required": "nvlink"'
  E2E_POD_CPU=32 E2E_POD_MEMORY=256Gi e2e_gang $NS rl-sweep 24 8 "$(w rl-sweep team-vision training)" \
    '"tidal.dev/preemptible": "true"'
  # cannot run: 8 members need one NVLink domain, and domains hold 4 nodes
  E2E_POD_CPU=32 E2E_POD_MEMORY=256Gi e2e_gang $NS moe-strict-nvlink 8 8 "$(w moe-strict-nvlink team-llm training)" \
    '"tidal.dev/topology-required": "nvlink"'
  # cannot run: 80 nodes in one block, and blocks hold 64
  E2E_POD_CPU=32 E2E_POD_MEMORY=256Gi e2e_gang $NS frontier-run 80 8 "$(w frontier-run team-llm training)" \
    '"tidal.dev/topology-required": "block"'
  # single-GPU batch pods in the default queue (quota: nominal 0, may borrow up to 64 GPUs)
  E2E_POD_CPU=4 E2E_POD_MEMORY=32Gi e2e_pods $NS eval 72 1 tidal-scheduler "{$(w eval default batch)}" '{"tidal.dev/runtime-limit": "30m"}'
  # a typo: tidal.dev/class must be one of training, inference, batch, interactive
  E2E_POD_CPU=8 E2E_POD_MEMORY=64Gi e2e_pods $NS notebook 1 2 tidal-scheduler \
    '{"demo.tidal.dev/workload": "notebook", "tidal.dev/queue": "team-vision"}' '{"tidal.dev/class": "notebok"}'
} | k create -f - >/dev/null
T_SUB=$(e2e_now_ms)
TOTAL=$(k get pods -n $NS --no-headers | wc -l)
e2e_log "submitted the sample: $TOTAL pods so far (Deployments add theirs as kube-controller-manager creates them)"

# Wait until the placements settle: nothing changes for 5 s (or TIDAL_DEMO_SETTLE seconds pass).
settle=${TIDAL_DEMO_SETTLE:-60}
last="" same=0
for ((i = 0; i < settle * 2; i++)); do
  now=$(k get pods -n $NS -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}/{.status.phase}{"\n"}{end}' | sort | md5sum)
  if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; last=$now; fi
  [ "$same" -lt 10 ] || break
  sleep 0.5
done
T_SETTLED=$(e2e_now_ms)

# --- 4: report ---------------------------------------------------------------------------------------------
nodes_tsv=$BASE/nodes.tsv
k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.metadata.labels.topology\.tidal\.dev/block}{"\t"}{.metadata.labels.topology\.tidal\.dev/leaf}{"\t"}{.metadata.labels.topology\.tidal\.dev/nvlink}{"\n"}{end}' >"$nodes_tsv"
pods_tsv=$BASE/pods.tsv
k get pods -n $NS -o jsonpath='{range .items[*]}{.metadata.labels.demo\.tidal\.dev/workload}{"\t"}{.metadata.name}{"\t"}{.status.phase}{"\t"}{.spec.nodeName}{"\t"}{.spec.schedulerName}{"\t"}{.metadata.labels.tidal\.dev/gang}{"\n"}{end}' >"$pods_tsv"
events_tsv=$BASE/events.tsv
k get events -n $NS --sort-by=.lastTimestamp \
  -o jsonpath='{range .items[*]}{.involvedObject.name}{"\t"}{.reason}{"\t"}{.message}{"\n"}{end}' >"$events_tsv" 2>/dev/null || true

echo
echo "=================================================================================================="
echo " Tidal demo: $(wc -l <"$nodes_tsv") nodes ($*: blocks x leaves x NVLink domains x nodes, 8 GPUs each)"
echo "=================================================================================================="
echo
echo "--- kubectl get pods -n $NS -o wide (first 30 of $(wc -l <"$pods_tsv")) ---"
{ k get pods -n $NS -o wide --sort-by=.metadata.name || true; } | head -n 31
echo
echo "--- where each workload landed ---"
awk -F'\t' -v nodes="$nodes_tsv" '
  BEGIN { while ((getline l < nodes) > 0) { split(l, f, "\t"); blk[f[1]] = f[2]; leaf[f[1]] = f[3]; nvl[f[1]] = f[4] } }
  {
    wl = $1; if (wl == "") wl = "(other)"
    total[wl]++; sched[wl] = $5
    if ($4 != "") {
      bound[wl]++
      if (!((wl, blk[$4]) in sb)) { sb[wl, blk[$4]] = 1; blocks[wl] = blocks[wl] (blocks[wl] ? "," : "") blk[$4] }
      if (!((wl, leaf[$4]) in sl)) { sl[wl, leaf[$4]] = 1; nl[wl]++; leaves[wl] = leaves[wl] (leaves[wl] ? "," : "") leaf[$4] }
      if (!((wl, nvl[$4]) in sn)) { sn[wl, nvl[$4]] = 1; nn[wl]++ }
      if (!((wl, $4) in sd)) { sd[wl, $4] = 1; nd[wl]++ }
    }
  }
  END {
    printf "%-18s %-17s %7s  %s\n", "WORKLOAD", "SCHEDULER", "BOUND", "PLACEMENT"
    for (wl in total) {
      p = bound[wl] ? sprintf("%d node(s), %d NVLink domain(s), leaves %s (%s)", nd[wl], nn[wl], leaves[wl], blocks[wl]) : "pending"
      printf "%-18s %-17s %3d/%-3d  %s\n", wl, sched[wl], bound[wl], total[wl], p
    }
  }' "$pods_tsv" | { read -r hdr; echo "$hdr"; sort; } || true
echo
echo "--- pending, and why (the latest event of each pending workload) ---"
pending_wl=$(awk -F'\t' '$4 == "" {print $1}' "$pods_tsv" | sort -u)
if [ -z "$pending_wl" ]; then echo "nothing is pending"; fi
for wl in $pending_wl; do
  n=$(awk -F'\t' -v w="$wl" '$1 == w && $4 == ""' "$pods_tsv" | wc -l)
  pod=$(awk -F'\t' -v w="$wl" '$1 == w && $4 == "" {print $2; exit}' "$pods_tsv")
  ev=$(awk -F'\t' -v p="$pod" '$1 == p && $2 != "Scheduled" {r = $2 ": " $3} END {print r}' "$events_tsv")
  printf '%-18s %3d pending  %s\n' "$wl" "$n" "${ev:-(no event yet)}"
done
echo
echo "--- tidal-explain (the engine's own account of each gang) ---"
gangs=$(awk -F'\t' '$6 != "" {print $6}' "$pods_tsv" | sort -u)
for g in $gangs; do "$TIDAL_E2E_BIN/tidal-explain" --engine "unix://$BASE/run/engine.sock" "$NS/$g" 2>&1 | sed 's/^/  /'; done
for p in $(awk -F'\t' '$6 == "" && $4 == "" && $5 == "tidal-scheduler" {print $2}' "$pods_tsv" | head -n 3); do
  "$TIDAL_E2E_BIN/tidal-explain" --engine "unix://$BASE/run/engine.sock" "$NS/$p" 2>&1 | sed 's/^/  /'
done
echo
echo "--- tidal-engine /queues ---"
curl -sf "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/queues" | sed 's/^/  /' || echo "  (engine HTTP not reachable)"
echo
BOUND=$(awk -F'\t' '$4 != ""' "$pods_tsv" | wc -l)
e2e_log "timings: cluster + Tidal up $(( (T_UP - T0) / 1000 ))s, sample placed (settled) $(( (T_SETTLED - T_SUB) / 1000 ))s after submission;" \
  "$BOUND of $(wc -l <"$pods_tsv") pods bound"

if [ "$ONCE" = 1 ]; then exit 0; fi
cat <<EOF
The demo cluster stays up until Ctrl-C. Try:
  export KUBECONFIG=$BASE/kubeconfig; alias kubectl=$TIDAL_E2E_TOOLS_BIN/kubectl
  kubectl get pods -n $NS -o wide
  kubectl get events -n $NS --field-selector reason=FailedScheduling
  $TIDAL_E2E_BIN/tidal-explain --engine unix://$BASE/run/engine.sock $NS/llm-pretrain
  kubectl delete pods -n $NS -l tidal.dev/gang=llm-pretrain     # and watch frontier-run / moe-strict-nvlink stay refused
  logs: $BASE/log/
EOF
while true; do sleep 3600; done
