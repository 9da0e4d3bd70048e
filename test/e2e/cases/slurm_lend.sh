# shellcheck shell=bash
# e2e case slurm-lend (sourced by run.sh; it uses cases/slurm.sh's Slurm setup and helpers, sl_*,
# and shares the running Slurm with the other slurm-* cases): Slurm's pool lends idle nodes to
# Kubernetes and takes them back, on the real slurmctld and the real control plane.
#
#   slurm-lend  the 16 shared nodes are labelled tidal.dev/pool=slurm (Slurm owns them; the engine
#       of the slurm cases runs with pools: {slurm: {idleSeconds: 5, graceCapSeconds: 20}}).
#       (1) Slurm idle, Kubernetes backlogged: two preemptible 8-GPU pods (queue ta, checkpoint on
#           10 s notice) run on two lent nodes; 10 s later two more on two more. The engine's
#           tidal_pool_lent_gpus{from="slurm",to="kubernetes"} is 32, tidal_pool_lends_total 4,
#           and slurmctld shows exactly those 4 nodes drained "tidal: lent to kubernetes" (no
#           Slurm job can land there) while the 12 others stay idle; a lent node has a
#           TidalNodeLent event.
#       (2) An sbatch job for 14 nodes (account team-a): 12 are free, so the engine reclaims 2
#           loans, those whose borrowers lose the least (the two younger pods): they get their
#           notice (the DisruptionTarget condition), are evicted, the nodes are undrained and
#           the job runs on 14 nodes. The time from sbatch to RUNNING is printed and must be at
#           most the grace cap + 5 s; the two older pods keep running, on nodes not in the job's
#           NodeList; tidal_pool_reclaims_total and tidal_disruptions_total{cause="reclaim"} grow
#           by 2, tidal_pool_reclaim_seconds counts 2, the lent GPUs are 16; a reclaimed node has
#           TidalNodeReclaimed and TidalNodeReturned events.
#       (3) Everything ends (pods, job) and the label goes: no node is left drained by Tidal.
#       Alone: test/e2e/run.sh slurm-lend
[ -n "${SL_SOURCED:-}" ] || source "$E2E_DIR/cases/slurm.sh"
sl_register slurm-lend

sll_metric() { sl_engine_metric "$1"; }
sll_lent_nodes() {  # the nodes slurmctld shows drained "tidal: lent to kubernetes", one per line
  scontrol -o show node 2>/dev/null | awk '/Reason=tidal: lent to kubernetes/ {sub(/^NodeName=/, "", $1); print $1}' | sort
}
sll_lent_count() { sll_lent_nodes | grep -c . || true; }
sll_pod_node() { k get pod -n "$1" "$2" -o jsonpath='{.spec.nodeName}' 2>/dev/null; }
sll_gone() { ! k get pod -n "$1" "$2" >/dev/null 2>&1; }
sll_node_events() {  # the reasons of the events on node $1
  k get events -A --field-selector "involvedObject.kind=Node,involvedObject.name=$1" -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' 2>/dev/null
}

case_slurm-lend() {
  local ns=e2e-slurm-lend t0 j p n labels ann old_nodes new_nodes job_nodes l0 r0 d0 ms cap=20
  new_ns $ns
  sl_up || { fail "slurm + tidal-slurm did not come up"; return; }
  # shellcheck disable=SC2068
  k label nodes ${SL_NODES[@]} tidal.dev/pool=slurm --overwrite >/dev/null
  l0=$(sll_metric 'tidal_pool_lends_total{from="slurm",to="kubernetes"}')
  r0=$(sll_metric 'tidal_pool_reclaims_total{from="slurm",to="kubernetes"}')
  d0=$(sll_metric 'tidal_disruptions_total{cause="reclaim"}')
  labels='{"tidal.dev/queue": "ta", "tidal.dev/preemptible": "true"}'
  ann='{"tidal.dev/checkpoint-on-notice": "10s"}'

  # (1) Slurm idle, Kubernetes backlogged: nodes move to Kubernetes.
  sleep 6  # the nodes' idleSeconds (5) since they became Slurm's
  t0=$(e2e_now_ms)
  pods $ns old 2 8 tidal-scheduler "$labels" "$ann" "{\"$SL_LABEL\": \"true\"}" | k create -f - >/dev/null
  check "two preemptible pods run on nodes Slurm lends" until_true 40 all_running $ns 2
  timings+=("slurm-lend-pods-running=$(ms_since "$t0")ms")
  sleep 10
  pods $ns new 2 8 tidal-scheduler "$labels" "$ann" "{\"$SL_LABEL\": \"true\"}" | k create -f - >/dev/null
  check "two more run on two more lent nodes" until_true 40 all_running $ns 4
  old_nodes=$(for p in old-0 old-1; do sll_pod_node $ns $p; echo; done | grep . | sort | tr '\n' ' ')
  new_nodes=$(for p in new-0 new-1; do sll_pod_node $ns $p; echo; done | grep . | sort | tr '\n' ' ')
  check "tidal_pool_lent_gpus{from=\"slurm\",to=\"kubernetes\"} is 32" \
    until_true 10 eval "[ \"\$(sll_metric 'tidal_pool_lent_gpus{from=\"slurm\",to=\"kubernetes\"}')\" = 32 ]"
  check "tidal_pool_lends_total grew by 4" \
    eval "[ \"\$(sll_metric 'tidal_pool_lends_total{from=\"slurm\",to=\"kubernetes\"}')\" = $((l0 + 4)) ]"
  check "slurmctld shows the 4 lent nodes drained 'tidal: lent to kubernetes' ($(sll_lent_nodes | tr '\n' ' '), pods on $old_nodes$new_nodes)" \
    until_true 10 eval "[ \"\$(sll_lent_nodes | tr '\n' ' ')\" = \"\$(echo $old_nodes $new_nodes | tr ' ' '\n' | sort | tr '\n' ' ')\" ]"

  n=$(echo $old_nodes | cut -d' ' -f1)
  check "node $n has a TidalNodeLent event ($(sll_node_events "$n" | tr '\n' ' '))" until_true 10 eval "sll_node_events $n | grep -q TidalNodeLent"

  # (2) sbatch arrives: two loans come back with notice, the job starts.
  t0=$(e2e_now_ms)
  j=$(sl_sbatch team-a wide 8 600 -N 14 2>"$BASE/sbatch.err") || { fail "sbatch refused: $(cat "$BASE/sbatch.err")"; sl_clean $ns; return; }
  check "the younger borrowers get their notice (DisruptionTarget)" until_true 20 eval \
    "k get pod -n $ns new-0 -o jsonpath='{.status.conditions[?(@.type==\"DisruptionTarget\")].status}' | grep -q True"
  check "the 14-node Slurm job runs" until_true $((cap + 20)) sl_state_is "$j" RUNNING
  ms=$(ms_since "$t0")
  timings+=("slurm-lend-reclaim-to-running=${ms}ms")
  e2e_log "  sbatch -> RUNNING on reclaimed nodes: ${ms} ms (grace cap ${cap} s)"
  check "within the grace cap + 5 s (${ms} ms)" test "$ms" -le $(((cap + 5) * 1000))
  check "the younger borrowers were evicted" eval "sll_gone $ns new-0 && sll_gone $ns new-1"
  check "the older borrowers keep running (least work lost first)" all_running $ns 2
  job_nodes=$(sl_hosts "$(sl_field "$j" NodeList)" | tr '\n' ' ')
  local clash=""
  for n in $old_nodes; do case " $job_nodes" in *" $n "*) clash+="$n " ;; esac; done
  check "the job's nodes ($job_nodes) are not the borrowers' ($old_nodes)" test -z "$clash"
  n=$(echo $new_nodes | cut -d' ' -f1)
  check "node $n has TidalNodeReclaimed and TidalNodeReturned events ($(sll_node_events "$n" | tr '\n' ' '))" \
    until_true 10 eval "sll_node_events $n | grep -q TidalNodeReclaimed && sll_node_events $n | grep -q TidalNodeReturned"
  check "tidal_pool_reclaims_total grew by 2" \
    eval "[ \"\$(sll_metric 'tidal_pool_reclaims_total{from=\"slurm\",to=\"kubernetes\"}')\" = $((r0 + 2)) ]"
  check "tidal_disruptions_total{cause=\"reclaim\"} grew by 2" \
    eval "[ \"\$(sll_metric 'tidal_disruptions_total{cause=\"reclaim\"}')\" = $((d0 + 2)) ]"
  check "tidal_pool_lent_gpus is 16, two nodes still drained for the loans ($(sll_lent_nodes | tr '\n' ' '))" \
    eval "[ \"\$(sll_metric 'tidal_pool_lent_gpus{from=\"slurm\",to=\"kubernetes\"}')\" = 16 ] && [ \"\$(sll_lent_count)\" = 2 ]"
  e2e_log "  reclaim seconds: $(curl -sf "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/metrics" | grep '^tidal_pool_reclaim_seconds_\(sum\|count\)' | tr '\n' ' ')"

  # (3) The end: nothing of the loans is left in Slurm.
  sl_clean $ns
  # shellcheck disable=SC2068
  k label nodes ${SL_NODES[@]} tidal.dev/pool- >/dev/null 2>&1 || true
  check "afterwards no node is left drained by Tidal ($(sll_lent_nodes | tr '\n' ' '))" until_true 20 eval '[ "$(sll_lent_count)" = 0 ]'
}
