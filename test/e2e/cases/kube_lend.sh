# shellcheck shell=bash
# e2e case kube-lend (sourced by run.sh; it uses cases/slurm.sh's Slurm setup and helpers, sl_*,
# and shares the running Slurm with the other slurm-* cases): the Kubernetes pool lends idle nodes
# to Slurm and takes them back, on the real slurmctld and the real control plane; while Slurm has
# a node it carries the taint tidal.dev/lent-to=slurm:NoSchedule, so no other scheduler's pods
# land there.
#
#   slurm-kube-lend  the 16 shared nodes are labelled tidal.dev/pool=kubernetes (Kubernetes owns
#       them; the engine of the slurm cases runs with pools: {kubernetes: {idleSeconds: 5,
#       graceCapSeconds: 20, to: any}}), so Slurm has no node of its own.
#       (1) Kubernetes idle, Slurm backlogged: a 2-node sbatch job runs on two lent nodes;
#           tidal_pool_lent_gpus{from="kubernetes",to="slurm"} is 16, exactly those two nodes
#           carry the taint in the API server, and a lent node has a TidalNodeLent event.
#       (2) A Kubernetes gang of 15 pods x 8 GPUs (pinned to the 16 nodes): 14 are free, so the
#           engine reclaims one loan; the Slurm job gets its notice and is requeued (Restarts 1),
#           the gang runs within the grace cap + 5 s, the reclaimed node's taint is gone and
#           tidal_pool_reclaims_total{from="kubernetes",to="slurm"} grew by 1.
#       (3) Everything ends: the last loan goes back after idleSeconds and no node keeps the taint.
#       Alone: test/e2e/run.sh slurm-kube-lend
[ -n "${SL_SOURCED:-}" ] || source "$E2E_DIR/cases/slurm.sh"
sl_register slurm-kube-lend

skl_tainted() {  # the nodes with the lent taint, sorted, space-separated
  k get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.taints[?(@.key=="tidal.dev/lent-to")].value}{"\n"}{end}' 2>/dev/null |
    awk '$2 == "slurm" {print $1}' | sort | tr '\n' ' '
}

case_slurm-kube-lend() {
  local ns=e2e-kube-lend t0 j job_nodes lent r0 ms cap=20 gone n
  new_ns $ns
  sl_up || { fail "slurm + tidal-slurm did not come up"; return; }
  # shellcheck disable=SC2068
  k label nodes ${SL_NODES[@]} tidal.dev/pool=kubernetes --overwrite >/dev/null
  r0=$(sl_engine_metric 'tidal_pool_reclaims_total{from="kubernetes",to="slurm"}')

  # (1) Kubernetes idle, Slurm backlogged: two nodes move to Slurm, tainted.
  sleep 6  # the nodes' idleSeconds (5) since they became Kubernetes'
  t0=$(e2e_now_ms)
  j=$(sl_sbatch team-a borrow 8 600 -N 2 2>"$BASE/sbatch.err") || { fail "sbatch refused: $(cat "$BASE/sbatch.err")"; sl_clean $ns; return; }
  check "the 2-node Slurm job runs on nodes Kubernetes lends" until_true 40 sl_state_is "$j" RUNNING
  timings+=("kube-lend-job-running=$(ms_since "$t0")ms")
  job_nodes=$(sl_hosts "$(sl_field "$j" NodeList)" | sort | tr '\n' ' ')
  check "tidal_pool_lent_gpus{from=\"kubernetes\",to=\"slurm\"} is 16" \
    until_true 10 eval "[ \"\$(sl_engine_metric 'tidal_pool_lent_gpus{from=\"kubernetes\",to=\"slurm\"}')\" = 16 ]"
  check "exactly the job's nodes ($job_nodes) carry tidal.dev/lent-to=slurm:NoSchedule ($(skl_tainted))" \
    until_true 10 eval "[ \"\$(skl_tainted)\" = \"$job_nodes\" ]"
  n=$(echo $job_nodes | cut -d' ' -f1)
  check "node $n has a TidalNodeLent event" until_true 10 eval \
    "k get events -A --field-selector involvedObject.kind=Node,involvedObject.name=$n -o jsonpath='{.items[*].reason}' | grep -q TidalNodeLent"

  # (2) Kubernetes' demand returns: one loan comes back with notice, the Slurm job is requeued.
  t0=$(e2e_now_ms)
  pods $ns g 15 8 tidal-scheduler '{"tidal.dev/gang": "g", "tidal.dev/queue": "ta"}' '{"tidal.dev/gang-size": "15"}' "$SL_SEL" |
    k create -f - >/dev/null
  check "the 15-pod gang runs" until_true $((cap + 20)) all_running $ns 15
  ms=$(ms_since "$t0")
  timings+=("kube-lend-reclaim-to-running=${ms}ms")
  e2e_log "  gang -> running on a reclaimed node: ${ms} ms (grace cap ${cap} s)"
  check "within the grace cap + 5 s (${ms} ms)" test "$ms" -le $(((cap + 5) * 1000))
  check "the Slurm job was requeued (Restarts $(sl_field "$j" Restarts))" until_true 10 eval "[ \"\$(sl_field $j Restarts)\" -ge 1 ]"
  check "tidal_pool_reclaims_total{from=\"kubernetes\",to=\"slurm\"} grew by 1 ($r0 -> $(sl_engine_metric 'tidal_pool_reclaims_total{from="kubernetes",to="slurm"}'))" \
    eval "[ \"\$(sl_engine_metric 'tidal_pool_reclaims_total{from=\"kubernetes\",to=\"slurm\"}')\" = $((r0 + 1)) ]"
  gone=""
  for n in $job_nodes; do case " $(skl_tainted)" in *" $n "*) ;; *) gone+="$n " ;; esac; done
  check "the reclaimed node's taint is gone (tainted now: $(skl_tainted))" test "$(echo $gone | wc -w)" -ge 1
  lent=$(sl_pod_nodes $ns | sort | tr '\n' ' ')
  local clash=""
  for n in $(skl_tainted); do case " $lent" in *" $n "*) clash+="$n " ;; esac; done
  check "no pod runs on a node that still carries the taint${clash:+ ($clash)}" test -z "$clash"

  # (3) The end: the last loan goes back, no taint stays.
  sl_clean $ns
  check "afterwards no node keeps the lent taint ($(skl_tainted))" until_true 30 eval '[ -z "$(skl_tainted)" ]'
  # shellcheck disable=SC2068
  k label nodes ${SL_NODES[@]} tidal.dev/pool- >/dev/null 2>&1 || true
}
