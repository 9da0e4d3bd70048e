#!/usr/bin/env bash
# `make demo`: Tidal for real on a local cluster (everything on 127.0.0.1, nothing downloaded):
#   1. etcd + kube-apiserver + kwok, 128 fake 8-GPU nodes: 2 blocks x 4 leaves x 4 NVLink domains x 4 nodes
#   2. kube-controller-manager (Deployments, ReplicaSets, Jobs), tidal-engine with deploy/config/tidal.yaml
#      (queues, fair share, quota), tidal-scheduler as a secondary scheduler (plus the stock default profile)
#   3. a real Slurm 22.05 on the SAME fabric (test/e2e/demo/slurm.sh): 32 of those nodes are also slurmd
#      nodes (same names, topology features tidal-<level>-<value>), the submit gate holds every job, and
#      tidal-slurm (deploy/examples/tidal-slurm.yaml) is the engine's second front door
#   4. a mixed sample for the same teams (queues): sbatch jobs (as user tidaldemo), then in namespace
#      tidal-demo training gangs, single-GPU batch pods, an inference Deployment, another team's
#      Deployment on the default scheduler, and workloads that cannot run, to show why
#   5. a report: where each workload landed, pod or Slurm job (nodes, leaves, NVLink domains), what is
#      pending and why (pod events, tidal-explain, the AdminComment Tidal writes on Slurm jobs), and one
#      ledger: each queue's GPUs by front door; then an idle Slurm node lent to a Kubernetes pod and
#      taken back by an sbatch job (test/e2e/demo/slurm.sh demo_slurm_lend)
#   6. stays up until Ctrl-C (DEMO_ONCE=1: exits after the report), then tears everything down.
# Usage: hack/demo.sh            (make demo builds first; this script expects the binaries)
# Env:   DEMO_ONCE=1, TIDAL_DEMO_BASE (scratch dir; default a fresh mktemp dir, removed at the end),
#        TIDAL_DEMO_FABRIC (default "2 4 4 4"), TIDAL_DEMO_SETTLE (seconds to wait for placements, 60),
#        TIDAL_DEMO_SLURM (1; 0: Kubernetes only; without root or the Slurm packages the demo says so
#        and runs without it), plus test/e2e/demo/slurm.sh's (nodes, ports) and test/e2e/lib/common.sh's
#        ports. Runs as root for Slurm (slurmctld, slurmd; useradd tidaldemo).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/e2e/lib/common.sh
source "$ROOT/test/e2e/lib/common.sh"
# shellcheck source=test/e2e/lib/pods.sh
source "$ROOT/test/e2e/lib/pods.sh"
# shellcheck source=test/e2e/demo/slurm.sh
source "$ROOT/test/e2e/demo/slurm.sh"

ONCE=${DEMO_ONCE:-0}
if [ -n "${TIDAL_DEMO_BASE:-}" ]; then BASE=$TIDAL_DEMO_BASE; mkdir -p "$BASE"; else BASE=$(mktemp -d /tmp/tidal-demo.XXXXXX); fi
BASE=$(cd "$BASE" && pwd)
NS=tidal-demo
T0=$(e2e_now_ms)
SLURM_ON=0 SBASE=""   # SBASE: Slurm's own scratch dir (world-traversable: the jobs' user reads slurm.conf there)

finish() {
  local rc=$?
  trap - EXIT
  trap '' INT TERM   # a second Ctrl-C must not cut the teardown short (jobs, daemons left behind)
  echo
  e2e_log "tearing down the demo cluster${SBASE:+ and Slurm} (a few seconds)"
  local t0 tlog=$BASE/log/teardown.log; t0=$(e2e_now_ms)
  mkdir -p "$BASE/log"
  if [ -n "$SBASE" ]; then
    demo_slurm_down "$BASE" "$SBASE" >>"$tlog" 2>&1 || true
    echo "slurm down after $(($(e2e_now_ms) - t0))ms" >>"$tlog"
  fi
  "$E2E_LIB/cluster-down.sh" "$BASE" >>"$tlog" 2>&1 || true
  e2e_log "down in $(( ($(e2e_now_ms) - t0) / 1000 ))s"
  if [ -z "${TIDAL_DEMO_BASE:-}" ]; then
    rm -rf "${BASE:?}"; [ -z "$SBASE" ] || rm -rf "${SBASE:?}"
  else
    e2e_log "logs kept in $BASE/log${SBASE:+ and $SBASE/log (Slurm)}"
  fi
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
nodes_tsv=$BASE/nodes.tsv
k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.metadata.labels.topology\.tidal\.dev/block}{"\t"}{.metadata.labels.topology\.tidal\.dev/leaf}{"\t"}{.metadata.labels.topology\.tidal\.dev/nvlink}{"\n"}{end}' >"$nodes_tsv"

# --- 3: Slurm on the same nodes, tidal-slurm ---------------------------------------------------------------
if [ "${TIDAL_DEMO_SLURM:-1}" = 1 ]; then
  if why=$(demo_slurm_check); then
    SBASE=$(mktemp -d /tmp/tidal-demo-slurm.XXXXXX)
    demo_slurm_up "$BASE" "$SBASE" "$nodes_tsv" || e2e_die "Slurm did not come up (logs: $SBASE/log, $BASE/log/tidal-slurm.log; TIDAL_DEMO_SLURM=0 runs without it)"
    SLURM_ON=1
  else
    e2e_log "running without Slurm: $why (TIDAL_DEMO_SLURM=0 skips it quietly)"
  fi
fi
T_SLURM=$(e2e_now_ms)

# --- 4: the sample ---------------------------------------------------------------------------------------
if [ "$SLURM_ON" = 1 ]; then
  # Slurm's half first: the gate holds each job, tidal-slurm hands it to the engine, the engine pins
  # it to nodes (ReqNodeList) and releases it, or writes why it waits into its AdminComment.
  demo_slurm_submit
  for ((i = 0; i < 150; i++)); do demo_slurm_admitted && break; sleep 0.2; done
  e2e_log "submitted $(squeue -h -r -o %i | wc -l) Slurm jobs (array tasks counted) as $DEMO_SLURM_USER: $(squeue -h -r -t R,CF -o %i | wc -l) running, $(squeue -h -r -t PD -o %i | wc -l) waiting"
fi
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
  now=$({ k get pods -n $NS -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}/{.status.phase}{"\n"}{end}' | sort
          [ "$SLURM_ON" = 0 ] || demo_slurm_state; } | md5sum)
  if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; last=$now; fi
  [ "$same" -lt 10 ] || break
  sleep 0.5
done
T_SETTLED=$(e2e_now_ms)

# --- 5: report ---------------------------------------------------------------------------------------------
pods_tsv=$BASE/pods.tsv
k get pods -n $NS -o jsonpath='{range .items[*]}{.metadata.labels.demo\.tidal\.dev/workload}{"\t"}{.metadata.name}{"\t"}{.status.phase}{"\t"}{.spec.nodeName}{"\t"}{.spec.schedulerName}{"\t"}{.metadata.labels.tidal\.dev/gang}{"\n"}{end}' >"$pods_tsv"
events_tsv=$BASE/events.tsv
k get events -n $NS --sort-by=.lastTimestamp \
  -o jsonpath='{range .items[*]}{.involvedObject.name}{"\t"}{.reason}{"\t"}{.message}{"\n"}{end}' >"$events_tsv" 2>/dev/null || true
slurm_tsv=$BASE/slurm.tsv jobs_tsv=$BASE/slurm-jobs.tsv
: >"$slurm_tsv"; : >"$jobs_tsv"
if [ "$SLURM_ON" = 1 ]; then
  demo_slurm_tsv >"$slurm_tsv"
  demo_slurm_jobs "$BASE/tidal-slurm.yaml" >"$jobs_tsv"
fi
ENGINE_HTTP=http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT
engine_metrics=$(curl -sf "$ENGINE_HTTP/metrics" || true)
m() { awk -v m="$1" '$1 == m {v = $2} END {print v + 0}' <<<"$engine_metrics"; }

echo
echo "=================================================================================================="
echo " Tidal demo: $(wc -l <"$nodes_tsv") nodes ($*: blocks x leaves x NVLink domains x nodes, 8 GPUs each)"
[ "$SLURM_ON" = 0 ] || echo "            $(wc -w <<<"$(demo_slurm_pick_nodes "$nodes_tsv")") of them also slurmd nodes of a real Slurm: one engine, two front doors"
echo "=================================================================================================="
echo
echo "--- kubectl get pods -n $NS -o wide (first 20 of $(wc -l <"$pods_tsv")) ---"
{ k get pods -n $NS -o wide --sort-by=.metadata.name || true; } | head -n 21 || true
if [ "$SLURM_ON" = 1 ]; then
  echo
  echo "--- Slurm jobs (sbatch as $DEMO_SLURM_USER; scontrol show job): where each runs, or why it waits ---"
  awk -F'\t' -v nodes="$nodes_tsv" '
    BEGIN {
      while ((getline l < nodes) > 0) { split(l, f, "\t"); leaf[f[1]] = f[3] }
      printf "%-6s %-13s %-8s %-11s %-8s %5s %4s  %-19s %-13s %s\n", "JOBID", "NAME", "ACCOUNT", "QUEUE", "STATE", "NODES", "GPUS", "NODELIST", "LEAVES", "ADMINCOMMENT (written by Tidal)"
    }
    {
      # $8: the node names (NodeList, else ReqNodeList), expanded and comma-separated
      ls = ""; split("", seen); n = split($8, h, ",")
      for (i = 1; i <= n; i++) if (h[i] != "" && !(leaf[h[i]] in seen)) { seen[leaf[h[i]]] = 1; ls = ls (ls ? "," : "") leaf[h[i]] }
      c = $10; if (length(c) > 96) c = substr(c, 1, 93) "..."   # in full below, for the waiting ones
      printf "%-6s %-13s %-8s %-11s %-8s %5s %4s  %-19s %-13s %s\n", $1, $2, $3, $4, $5, $6, $7, ($9 == "" ? "-" : $9), (ls == "" ? "-" : ls), c
    }' "$jobs_tsv"
fi
echo
echo "--- where each workload landed (pods and Slurm jobs, one fabric) ---"
cat "$pods_tsv" "$slurm_tsv" | awk -F'\t' -v nodes="$nodes_tsv" '
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
  }' | { read -r hdr; echo "$hdr"; sort -b -k2,2 -k1,1; } || true
echo
echo "--- pending, and why (pods: the latest event; Slurm jobs: the AdminComment Tidal wrote) ---"
pending_wl=$(awk -F'\t' '$4 == "" {print $1}' "$pods_tsv" | sort -u)
if [ -z "$pending_wl" ] && ! awk -F'\t' '$5 == "PENDING" {f = 1} END {exit !f}' "$jobs_tsv"; then echo "nothing is pending"; fi
for wl in $pending_wl; do
  n=$(awk -F'\t' -v w="$wl" '$1 == w && $4 == ""' "$pods_tsv" | wc -l)
  pod=$(awk -F'\t' -v w="$wl" '$1 == w && $4 == "" {print $2; exit}' "$pods_tsv")
  ev=$(awk -F'\t' -v p="$pod" '$1 == p && $2 != "Scheduled" {r = $2 ": " $3} END {print r}' "$events_tsv")
  printf '%-18s %3d pod(s)  %s\n' "$wl" "$n" "${ev:-(no event yet)}"
done
awk -F'\t' '$5 == "PENDING" { printf "%-18s slurm %-5s %s\n", $2, $1, $10 }' "$jobs_tsv"
echo
echo "--- tidal-explain (the engine's own account of each gang) ---"
explain() { "$TIDAL_E2E_BIN/tidal-explain" --engine "unix://$BASE/run/engine.sock" "$1" 2>&1 | sed 's/^/  /'; }
gangs=$(awk -F'\t' '$6 != "" {print $6}' "$pods_tsv" | sort -u)
for g in $gangs; do explain "$NS/$g"; done
for p in $(awk -F'\t' '$6 == "" && $4 == "" && $5 == "tidal-scheduler" {print $2}' "$pods_tsv" | head -n 2); do explain "$NS/$p"; done
for j in $(awk -F'\t' '$5 == "PENDING" {print $1}' "$jobs_tsv"); do explain "slurm/$j"; done
echo
echo "--- one ledger: the GPUs each queue holds, by front door (tidal-engine /queues, /metrics) ---"
queues=$(curl -sf "$ENGINE_HTTP/queues" || true)
if [ -z "$queues" ]; then echo "  (engine HTTP not reachable)"; else
  awk '
    BEGIN { printf "%-12s %13s %11s %6s\n", "QUEUE", "GPUS/NOMINAL", "KUBERNETES", "SLURM" }
    /^queue / {
      k = $0; sub(/.*gpus by door: kubernetes /, "", k); s = k; sub(/,.*/, "", k); sub(/.*slurm /, "", s)
      printf "%-12s %13s %11s %6s\n", $2, $4, k, s; tk += k; ts += s
    }
    END { printf "%-12s %13s %11s %6s\n", "(all)", "", tk, ts }' <<<"$queues"
  echo
  printf '%-11s %6s %11s %14s %16s\n' DOOR NODES "GPUS BOUND" "MEMBERS BOUND" "MEMBERS PENDING"
  for d in kubernetes slurm; do
    printf '%-11s %6s %11s %14s %16s\n' "$d" "$(m "tidal_door_nodes{door=\"$d\"}")" "$(m "tidal_door_gpus{door=\"$d\"}")" \
      "$(m "tidal_door_members{door=\"$d\",state=\"bound\"}")" "$(m "tidal_door_members{door=\"$d\",state=\"pending\"}")"
  done
  if [ "$SLURM_ON" = 1 ]; then
    # a node both doors use at once: its GPUs split between pods and Slurm jobs, booked in one ledger
    shared=$(awk -F'\t' '
      FNR == NR { if ($4 != "" && $5 == "tidal-scheduler" && !(($4, $1) in sp)) { sp[$4, $1] = 1; p[$4] = p[$4] (p[$4] ? "," : "") $1 }; next }
      $4 in p { j[$4] = j[$4] (j[$4] ? "," : "") $2 }
      END { for (n in j) printf "  %s: pods of %s; Slurm jobs %s\n", n, p[n], j[n] }' "$pods_tsv" "$slurm_tsv" | sort -V)
    echo "nodes whose GPUs pods and Slurm jobs share right now:"; echo "${shared:-  none}"
    am=$(curl -sf "http://127.0.0.1:$TIDAL_DEMO_SLURM_METRICS_PORT/metrics" || true)
    a() { awk -v m="$1" '$1 == m {v = $2} END {print v + 0}' <<<"$am"; }
    echo "tidal-slurm: $(a tidal_slurm_passes_total) passes (last $(awk -v s="$(a tidal_slurm_poll_seconds)" 'BEGIN {printf "%.1f", s * 1000}') ms)," \
      "released $(a tidal_slurm_released_total), held again $(a tidal_slurm_held_total), AdminComment updates $(a tidal_slurm_comments_total)," \
      "apply errors $(a tidal_slurm_apply_errors_total); jobs running $(a tidal_slurm_jobs_running) ($(a tidal_slurm_gpus_running) GPUs), pending $(a tidal_slurm_jobs_pending)"
  fi
  echo
  echo "--- tidal-engine /queues ---"
  sed 's/^/  /' <<<"$queues"
fi
echo
if [ "$SLURM_ON" = 1 ]; then
  echo "--- capacity that moves: a Slurm node lent to Kubernetes, and taken back (docs/capacity.md) ---"
  demo_slurm_lend "$NS" "$pods_tsv"
  echo
fi
BOUND=$(awk -F'\t' '$4 != ""' "$pods_tsv" | wc -l)
e2e_log "timings: cluster + Tidal up $(( (T_UP - T0) / 1000 ))s${SBASE:+, Slurm + tidal-slurm $(( (T_SLURM - T_UP) / 1000 ))s}, sample placed (settled) $(( (T_SETTLED - T_SUB) / 1000 ))s after submission;" \
  "$BOUND of $(wc -l <"$pods_tsv") pods bound${SBASE:+, $(awk -F'\t' '$5 == "RUNNING"' "$jobs_tsv" | wc -l) of $(wc -l <"$jobs_tsv") Slurm jobs running}"

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
if [ "$SLURM_ON" = 1 ]; then cat <<EOF
Slurm runs on the same nodes (every job is held until Tidal releases it):
  export SLURM_CONF=$SLURM_CONF
  squeue -o '%.7i %.14j %.9a %.8T %.5D %R'; scontrol show job JOBID | grep -E 'AdminComment|NodeList'
  runuser -u $DEMO_SLURM_USER -- env SLURM_CONF=\$SLURM_CONF sbatch -D $SBASE/jobs -o /dev/null -A team-llm -N 2 \\
      --gres=gpu:8 --comment=tidal.dev/topology-required=leaf --wrap 'sleep 600'
  curl -s 127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/queues; curl -s 127.0.0.1:$TIDAL_DEMO_SLURM_METRICS_PORT/metrics | grep ^tidal_slurm
  logs: $SBASE/log/ (slurmctld, slurmd-*), $BASE/log/tidal-slurm.log
EOF
fi
while true; do sleep 3600; done
