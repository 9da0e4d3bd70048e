# shellcheck shell=bash
# The Slurm half of `make demo`, sourced by hack/demo.sh (after test/e2e/lib/common.sh). A real
# Slurm 22.05 (test/slurm/lib.sh: munged, slurmctld, one slurmd per node, the submit gate
# deploy/slurm/job_submit.lua holding every job for Tidal) whose slurmd nodes ARE some of the demo's
# KWOK nodes: same names, node features tidal-<level>-<value> equal to the nodes' topology.tidal.dev/*
# labels. tidal-slurm (deploy/examples/tidal-slurm.yaml) is the engine's second front door: the
# engine merges each node both doors report into one node and charges pods and Slurm jobs to the
# same queues, one ledger.
#
#   demo_slurm_check                      0, or prints why the Slurm half cannot run here and returns 1
#   demo_slurm_pick_nodes NODES_TSV       the node names Slurm gets (see TIDAL_DEMO_SLURM_NODES below)
#   demo_slurm_up BASE SBASE NODES_TSV    Slurm in SBASE (wiped) on those nodes, then tidal-slurm
#                                         (BASE/run/tidal-slurm.pid: cluster-down.sh stops it too)
#   demo_slurm_submit                     the Slurm half of the sample (sbatch as DEMO_SLURM_USER)
#   demo_slurm_admitted                   true once Tidal has answered every job (released or a reason)
#   demo_slurm_state                      one line per job (id, state, nodes, AdminComment): for settling
#   demo_slurm_tsv                        one row per job member: job name, job id, state, node, "slurm", job id
#   demo_slurm_jobs ADAPTER_CONFIG        one row per job: id, name, account, queue, state, nodes, GPUs, where, AdminComment
#   demo_slurm_lend NS PODS_TSV           a Slurm node lent to Kubernetes and taken back (docs/capacity.md)
#   demo_slurm_down BASE SBASE            stop tidal-slurm, cancel the jobs, stop the daemons (by PID)
#
# Env: TIDAL_DEMO_SLURM_NODES (explicit node names; default: the last half of the NVLink domains of
#      every odd leaf, 32 nodes on the 2x4x4x4 fabric: 8 in each of leaf-1, leaf-3, leaf-5, leaf-7),
#      TIDAL_DEMO_SLURM_CTLD_PORT (16917), TIDAL_DEMO_SLURM_NODE_PORT0 (18001: node i on 18001+i),
#      TIDAL_DEMO_SLURM_METRICS_PORT (20412: tidal-slurm /metrics), TIDAL_DEMO_SLURM_USER (tidaldemo:
#      created with useradd if missing; the jobs' owner).

DEMO_SLURM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DEMO_SLURM_ROOT=$(cd "$DEMO_SLURM_DIR/../../.." && pwd)
# shellcheck source=test/slurm/lib.sh
source "$DEMO_SLURM_ROOT/test/slurm/lib.sh"

# Each Slurm daemon in a process group of its own (job control on for the one `&` of lib.sh's
# _slurm_start): Ctrl-C signals the demo's process group, and slurmctld/slurmd stop on SIGINT, but
# they must outlive it until slurm_down has cancelled the jobs. They stay this shell's children
# (reaped at once when slurm_down stops them; a new session would leave that to PID 1).
eval "$(declare -f _slurm_start | sed '1s/^_slurm_start/_demo_lib_slurm_start/')"
_slurm_start() {
  local rc=0
  set -m
  _demo_lib_slurm_start "$@" || rc=$?
  set +m
  return "$rc"
}

: "${TIDAL_DEMO_SLURM_CTLD_PORT:=16917}"
: "${TIDAL_DEMO_SLURM_NODE_PORT0:=18001}"
: "${TIDAL_DEMO_SLURM_METRICS_PORT:=20412}"
: "${TIDAL_DEMO_SLURM_USER:=tidaldemo}"
DEMO_SLURM_USER=$TIDAL_DEMO_SLURM_USER

demo_slurm_check() {
  local c
  for c in slurmctld slurmd munged mungekey sbatch scontrol squeue runuser useradd; do
    command -v "$c" >/dev/null || { echo "$c not installed (make deps installs slurm-wlm munge)"; return 1; }
  done
  [ "$(id -u)" = 0 ] || { echo "not root (slurmctld/slurmd run as root here, and the jobs' user $DEMO_SLURM_USER is created)"; return 1; }
  [ -x "$TIDAL_E2E_BIN/tidal-slurm" ] || { echo "$TIDAL_E2E_BIN/tidal-slurm missing (make build)"; return 1; }
  return 0
}

# demo_slurm_pick_nodes NODES_TSV (name, block, leaf, nvlink per line): default = every node whose
# NVLink domain is in the last half of its leaf's domains, on odd leaves (leaf-1, leaf-3, ...).
demo_slurm_pick_nodes() {
  if [ -n "${TIDAL_DEMO_SLURM_NODES:-}" ]; then echo "$TIDAL_DEMO_SLURM_NODES"; return; fi
  awk -F'\t' '
    { name[NR] = $1; leaf[NR] = $3; nvl[NR] = $4; if (!(($3, $4) in seen)) { seen[$3, $4] = 1; nd[$3]++; pos[$3, $4] = nd[$3] - 1 }
      l = $3; sub(/^leaf-/, "", l); if (l % 2 == 1) odd = 1 }
    END {
      for (i = 1; i <= NR; i++) {
        l = leaf[i]; sub(/^leaf-/, "", l)   # a fabric of one leaf: that leaf
        if ((l % 2 == 1 || !odd) && pos[leaf[i], nvl[i]] >= int(nd[leaf[i]] / 2)) out = out (out ? " " : "") name[i]
      }
      print out
    }' "$1"
}

# _demo_slurm_features NODES_TSV NAME...: "name=tidal-block-B,tidal-leaf-L,tidal-nvlink-D" lines.
_demo_slurm_features() {
  local tsv=$1; shift
  awk -F'\t' -v want=" $* " 'index(want, " " $1 " ") { printf "%s=tidal-block-%s,tidal-leaf-%s,tidal-nvlink-%s\n", $1, $2, $3, $4 }' "$tsv"
}

demo_slurm_up() {
  local base=$1 sbase=$2 tsv=$3 names t0 engine_http=http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT
  names=$(demo_slurm_pick_nodes "$tsv")
  [ -n "$names" ] || { e2e_log "no nodes for Slurm"; return 1; }
  e2e_port_free "$TIDAL_DEMO_SLURM_METRICS_PORT" || { e2e_log "port 127.0.0.1:$TIDAL_DEMO_SLURM_METRICS_PORT (tidal-slurm metrics) is in use: set TIDAL_DEMO_SLURM_METRICS_PORT"; return 1; }
  t0=$(e2e_now_ms)
  # Each node as big as its Kubernetes twin (the engine takes the smaller GPU count of the two
  # doors' records).
  # shellcheck disable=SC2086
  SLURM_NODE_NAMES=$names SLURM_NODE_FEATURES=$(_demo_slurm_features "$tsv" $names) \
    SLURM_CTLD_PORT=$TIDAL_DEMO_SLURM_CTLD_PORT SLURM_NODE_PORT0=$TIDAL_DEMO_SLURM_NODE_PORT0 \
    SLURM_GPU_TYPE=h100 SLURM_NODE_CPUS=64 SLURM_NODE_MEM=524288 SLURM_GATE= SLURM_TOPOLOGY_CONF= \
    SLURM_WITH_RESTD=0 SLURM_EXTRA_CONF= slurm_up "$sbase" 0 8 </dev/null || return 1
  export SLURM_CONF=$sbase/etc/slurm.conf
  slurm_ensure_user "$DEMO_SLURM_USER" || return 1
  e2e_log "Slurm up in $(($(e2e_now_ms) - t0))ms: slurmctld :$TIDAL_DEMO_SLURM_CTLD_PORT, $(wc -w <<<"$names") slurmd ($(scontrol show hostlist "${names// /,}"))"

  # tidal-slurm: deploy/examples/tidal-slurm.yaml with this cluster's addresses
  sed -e "s|^engine: [^ ]*|engine: unix://$base/run/engine.sock|" -e "s|^slurmConf: [^ ]*|slurmConf: $SLURM_CONF|" \
    -e "s|^metricsAddress: [^ ]*|metricsAddress: 127.0.0.1:$TIDAL_DEMO_SLURM_METRICS_PORT|" \
    -e "s|^jobcompFile: [^ ]*|jobcompFile: $sbase/log/jobcomp.txt|" \
    "$DEMO_SLURM_ROOT/deploy/examples/tidal-slurm.yaml" >"$base/tidal-slurm.yaml"
  t0=$(e2e_now_ms)
  e2e_start "$base" tidal-slurm "$TIDAL_E2E_BIN/tidal-slurm" --config "$base/tidal-slurm.yaml"
  e2e_wait "$base" tidal-slurm "tidal-slurm: tidal_slurm_up 1" _demo_slurm_metric_is tidal_slurm_up 1 || return 1
  e2e_wait "$base" tidal-slurm "the engine: tidal_door_nodes{door=\"slurm\"} $(wc -w <<<"$names")" \
    _demo_engine_metric_is 'tidal_door_nodes{door="slurm"}' "$(wc -w <<<"$names")" || return 1
  e2e_log "tidal-slurm up after $(($(e2e_now_ms) - t0))ms: the engine sees $(_demo_metric "$engine_http" 'tidal_door_nodes{door="kubernetes"}') nodes from Kubernetes, $(_demo_metric "$engine_http" 'tidal_door_nodes{door="slurm"}') from Slurm (the same machines)"
}

# _demo_metric URL NAME{labels}: the sample's value ("" when absent).
_demo_metric() { curl -s --max-time 2 "$1/metrics" 2>/dev/null | awk -v m="$2" '$1 == m {print $2; exit}'; }
_demo_slurm_metric_is() { [ "$(_demo_metric "http://127.0.0.1:$TIDAL_DEMO_SLURM_METRICS_PORT" "$1")" = "$2" ]; }
_demo_engine_metric_is() { [ "$(_demo_metric "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT" "$1")" = "$2" ]; }

# _demo_sbatch NAME ACCOUNT SBATCH_ARGS...: a job of DEMO_SLURM_USER that sleeps for an hour (time
# limit 2 h: the engine sees tidal.dev/runtime-limit 120m).
_demo_sbatch() {
  local name=$1 acct=$2; shift 2
  slurm_submit_as "$DEMO_SLURM_USER" --job-name="$name" -A "$acct" -o /dev/null -t 120 "$@" --wrap 'sleep 3600' >/dev/null
}

demo_slurm_submit() {
  # team-llm's Slurm side: 4 whole nodes inside one leaf, 2 half nodes inside one NVLink domain
  _demo_sbatch llm-sft team-llm -N 4 --gres=gpu:8 --comment=tidal.dev/topology-required=leaf
  _demo_sbatch llm-eval team-llm -N 2 --gres=gpu:4 --comment=tidal.dev/topology-required=nvlink
  # team-vision's (Slurm account cv-lab -> queue team-vision): sbatch's own --switches=1 (one leaf),
  # and a job array of four 2-GPU tasks
  _demo_sbatch vision-ddp cv-lab -N 2 --gres=gpu:8 --switches=1
  _demo_sbatch vision-hpo cv-lab --array=0-3 --gres=gpu:2
  # the default queue: quota nominal 0, may borrow up to 64 GPUs, for its pods AND its Slurm jobs
  _demo_sbatch batch-embed default -N 1 --gres=gpu:4
  # cannot run: 4 + 64 GPUs > the default queue's 64; a 12-node job needing one leaf (Slurm has 8
  # nodes per leaf); an account that is no queue
  _demo_sbatch batch-reindex default -N 8 --gres=gpu:8
  _demo_sbatch llm-wide team-llm -N 12 --gres=gpu:8 --comment=tidal.dev/topology-required=leaf
  _demo_sbatch physics-sim physics -N 1 --gres=gpu:1
}

# demo_slurm_lend NS PODS_TSV: capacity that moves. An idle Slurm node becomes Slurm's own
# (tidal.dev/pool=slurm; deploy/config/tidal.yaml lends that pool after 30 s idle), a preemptible pod
# pinned to it waits until the engine lends it, slurmctld shows it drained "tidal: lent to
# kubernetes"; then an sbatch job for that node takes it back: the pod gets its notice (20 s, its
# checkpoint-on-notice), is evicted, and the job runs there. Prints each step with its time.
demo_slurm_lend() {
  local ns=$1 pods_tsv=$2 node="" n t0 job i
  for n in $(scontrol -o show node 2>/dev/null | awk '/State=IDLE / {sub(/^NodeName=/, "", $1); print $1}' | sort -V); do
    awk -F'\t' -v n="$n" '$4 == n {found = 1} END {exit found}' "$pods_tsv" && { node=$n; break; }
  done
  [ -n "$node" ] || { echo "  (no idle Slurm node without pods: skipped)"; return 0; }
  e2e_kubectl "$BASE" label node "$node" tidal.dev/pool=slurm --overwrite >/dev/null
  t0=$(e2e_now_ms)
  e2e_kubectl "$BASE" create -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: borrower
  namespace: $ns
  labels: {tidal.dev/queue: team-llm, tidal.dev/preemptible: "true"}
  annotations: {tidal.dev/checkpoint-on-notice: 20s}
spec:
  schedulerName: tidal-scheduler
  nodeSelector: {kubernetes.io/hostname: $node}
  terminationGracePeriodSeconds: 0
  containers:
    - name: main
      image: fake.invalid/batch:1
      resources: {requests: {nvidia.com/gpu: "8"}, limits: {nvidia.com/gpu: "8"}}
YAML
  echo "  $node is Slurm's (tidal.dev/pool=slurm) and idle; pod borrower (preemptible, 8 GPUs) waits for it"
  for ((i = 0; i < 450; i++)); do
    [ "$(e2e_kubectl "$BASE" get pod -n "$ns" borrower -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ] && break
    sleep 0.2
  done
  if [ "$i" -ge 450 ]; then
    echo "  not lent within 90 s (Slurm's own pending jobs keep its nodes):"
    "$TIDAL_E2E_BIN/tidal-explain" --engine "unix://$BASE/run/engine.sock" "$ns/borrower" 2>&1 | sed 's/^/    /'
  else
    local lent_s=$(( ($(e2e_now_ms) - t0) / 1000 ))
    for ((i = 0; i < 25; i++)); do scontrol -o show node "$node" | grep -q 'Reason=tidal: lent' && break; sleep 0.2; done  # tidal-slurm's next pass
    echo "  +${lent_s}s lent: borrower runs on $node; slurmctld: $(scontrol -o show node "$node" | grep -o 'Reason=[^[]*' | head -n 1)"
    "$TIDAL_E2E_BIN/tidal-explain" --engine "unix://$BASE/run/engine.sock" "$ns/borrower" 2>&1 | grep -i 'window' | sed 's/^/    /'
    t0=$(e2e_now_ms)
    job=$(slurm_submit_as "$DEMO_SLURM_USER" --job-name=reclaim -A team-llm -o /dev/null -t 120 -w "$node" --gres=gpu:8 --wrap 'sleep 3600')
    echo "  sbatch -w $node (job $job): Slurm wants its node back"
    for ((i = 0; i < 600; i++)); do [ "$(slurm_job_field "$job" JobState)" = RUNNING ] && break; sleep 0.2; done
    echo "  +$(( ($(e2e_now_ms) - t0) / 1000 ))s job $job $(slurm_job_field "$job" JobState) on $(slurm_job_field "$job" NodeList);" \
      "pod borrower: $(e2e_kubectl "$BASE" get pod -n "$ns" borrower -o jsonpath='{.status.phase}' 2>/dev/null || echo gone)" \
      "(its notice: $(e2e_kubectl "$BASE" get events -n "$ns" --field-selector involvedObject.name=borrower -o jsonpath='{range .items[*]}{.reason} {end}' 2>/dev/null))"
  fi
  curl -sf "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/metrics" | grep -E '^tidal_pool_(lends|reclaims)_total|^tidal_pool_reclaim_seconds_(sum|count)|^tidal_pool_lent_gpus' | grep -v ' 0$' | sed 's/^/    /'
  e2e_kubectl "$BASE" delete pod -n "$ns" borrower --wait=false >/dev/null 2>&1 || true
  e2e_kubectl "$BASE" label node "$node" tidal.dev/pool- >/dev/null 2>&1 || true
}

# demo_slurm_admitted: Tidal has answered every job and Slurm has acted on it: each one runs, or
# waits with Tidal's reason (not the gate's "waiting for Tidal", nor released but not started yet).
demo_slurm_admitted() {
  local jobs
  jobs=$(scontrol -o show job 2>/dev/null) || return 1
  # one awk, no `grep | grep -q`: under pipefail an early grep -q exit (SIGPIPE) reads as "none"
  awk '/ JobState=PENDING / && /AdminComment=tidal: (waiting for Tidal|released)/ {bad = 1} END {exit bad}' <<<"$jobs"
}

demo_slurm_state() {
  scontrol -o show job 2>/dev/null | awk '{
    id = ""; st = ""; nl = ""; ac = ""
    n = split($0, w, " ")
    for (i = 1; i <= n; i++) {
      if (w[i] ~ /^JobId=/) id = w[i]; else if (w[i] ~ /^JobState=/) st = w[i]; else if (w[i] ~ /^NodeList=/) nl = w[i]
      else if (w[i] ~ /^AdminComment=/) { ac = w[i]; while (i < n && w[i + 1] !~ /^[A-Za-z][A-Za-z0-9_:\/]*=/) ac = ac " " w[++i] }
    }
    print id, st, nl, ac }' | sort
}

# demo_slurm_tsv: rows like pods.tsv (workload, name, phase, node, scheduler, gang): one per node of
# a job holding nodes, node_count rows with no node for a pending one. Array tasks are rows of
# their own (squeue -r).
demo_slurm_tsv() {
  local id name state count nodes n
  squeue -h -r -o '%i|%j|%T|%D|%N' 2>/dev/null | while IFS='|' read -r id name state count nodes; do
    if [ -n "$nodes" ] && [ "$nodes" != "(null)" ]; then
      for n in $(scontrol show hostnames "$nodes" 2>/dev/null); do printf '%s\t%s\t%s\t%s\tslurm\t%s\n' "$name" "$id" "$state" "$n" "$id"; done
    else
      for ((n = 0; n < count; n++)); do printf '%s\t%s\t%s\t\tslurm\t%s\n' "$name" "$id" "$state" "$id"; done
    fi
  done
}

# demo_slurm_jobs ADAPTER_CONFIG: one row per job (array tasks Slurm has split off: their own), by
# job id: id, name, account, queue (the config's account rules, else the account), state, nodes,
# GPUs (per node x nodes), node names (NodeList, else ReqNodeList; expanded, comma-separated), the
# same as a hostlist, AdminComment.
demo_slurm_jobs() {
  local cfg=$1 id name acct queue state nn gpus nodes admin names
  scontrol -o show job 2>/dev/null | awk -v cfg="$cfg" '
    BEGIN {
      while ((getline l < cfg) > 0) {
        if (l !~ /^[ ]*- *\{/ || l !~ /account:/) continue
        a = l; sub(/.*account: */, "", a); sub(/[,}].*/, "", a); q = l; sub(/.*queue: */, "", q); sub(/[,}].*/, "", q)
        if (!(a in rule)) rule[a] = q
      }
    }
    {
      split("", f); n = split($0, w, " "); k = ""
      for (i = 1; i <= n; i++) {
        if (w[i] ~ /^[A-Za-z][A-Za-z0-9_:\/]*=/) { k = substr(w[i], 1, index(w[i], "=") - 1); f[k] = substr(w[i], index(w[i], "=") + 1) }
        else if (k != "") f[k] = f[k] " " w[i]
      }
      id = f["JobId"]
      if (f["ArrayTaskId"] != "") id = f["ArrayJobId"] "_" f["ArrayTaskId"]
      nodes = f["NodeList"]; if (nodes == "" || nodes == "(null)") nodes = f["ReqNodeList"]; if (nodes == "(null)") nodes = ""
      g = f["TresPerNode"]; sub(/.*gpu[^,]*:/, "", g); if (g !~ /^[0-9]+$/) g = 0
      q = (f["Account"] in rule) ? rule[f["Account"]] : f["Account"]
      nn = f["NumNodes"]; sub(/-.*/, "", nn)   # a pending job shows a range (8-8)
      printf "%s\037%s\037%s\037%s\037%s\037%s\037%d\037%s\037%s\n", id, f["JobName"], f["Account"], q, f["JobState"], nn, g * nn, nodes, f["AdminComment"]
    }' | sort -t_ -k1,1n -k2,2n | while IFS=$'\037' read -r id name acct queue state nn gpus nodes admin; do
    names=""
    [ -z "$nodes" ] || names=$(scontrol show hostnames "$nodes" 2>/dev/null | paste -sd, -)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$name" "$acct" "$queue" "$state" "$nn" "$gpus" "$names" "$nodes" "$admin"
  done
}

demo_slurm_down() {
  local base=$1 sbase=$2
  e2e_stop "$base" tidal-slurm 10 || true
  if [ -n "$sbase" ] && [ -d "$sbase/run" ]; then slurm_down "$sbase"; fi
  return 0
}
