# shellcheck shell=bash
# e2e case slurm-preempt (sourced by run.sh; it uses cases/slurm.sh's Slurm setup and helpers, sl_*,
# and shares the running Slurm with the other slurm-* cases): Slurm jobs as preemption victims of a
# Kubernetes gang, on the real slurmctld and the real control plane.
#
#   slurm-preempt  four preemptible 8-GPU sbatch jobs (account team-a: queue ta,
#       --comment=tidal.dev/preemptible=true, sleep 600) run pinned (-w) to node-40..node-43, two of
#       them with --no-requeue (node-42, node-43). Those shared nodes are labelled
#       e2e.tidal.dev/victim=requeue (40, 41) and =norequeue (42, 43).
#       (1) A 2-pod gang of priority 1000 (queue ta) selecting victim=norequeue: the only room is
#           the two jobs Slurm would not requeue (requeueing them would cancel them): they keep
#           running (same JobId, RUNNING, Restarts=0) and the gang stays unbound, its
#           FailedScheduling saying there are no victims.
#       (2) The same gang selecting victim=requeue: the engine chooses the two requeueable jobs,
#           tidal-slurm requeues them (slurmctld: PENDING, Restarts=1, held with a tidal:
#           AdminComment; tidal_slurm_disruption_requeues_total +2), the gang binds to node-40 and
#           node-41 (the time from its creation is printed), its TidalPreempting event names the
#           Slurm jobs, tidal_preemptions_total{reason="priority"} grows by 2 and
#           tidal_disruptions_total{cause="preemption"} by 2.
#           While the gang runs the requeued jobs wait: their own -w node is the gang's.
#       (3) The gang is deleted: both requeued jobs run again (the engine releases them), each on
#           its -w node (a user's --nodelist survives Tidal's pin and the requeue).
#       Alone: test/e2e/run.sh slurm-preempt
[ -n "${SL_SOURCED:-}" ] || source "$E2E_DIR/cases/slurm.sh"
sl_register slurm-preempt

slp_metric() { sl_engine_metric "$1"; }
slp_running() {  # slp_running JOB...: every one RUNNING (slurmctld)
  local j; for j in "$@"; do sl_state_is "$j" RUNNING || return 1; done
}
slp_requeues() { sl_metric "http://127.0.0.1:$TIDAL_E2E_SLURM_METRICS_PORT" tidal_slurm_disruption_requeues_total; }

case_slurm-preempt() {
  local ns=e2e-slurm-preempt t0 j jobs=() norq=() rq=() p0 d0 r0 nodes ev
  new_ns $ns
  sl_up || { fail "slurm + tidal-slurm did not come up"; return; }
  k label nodes node-40 node-41 e2e.tidal.dev/victim=requeue --overwrite >/dev/null
  k label nodes node-42 node-43 e2e.tidal.dev/victim=norequeue --overwrite >/dev/null
  local n
  for n in 40 41; do
    j=$(sl_sbatch team-a victim 8 600 -w node-$n --comment=tidal.dev/preemptible=true 2>"$BASE/sbatch.err") || { j=$(cat "$BASE/sbatch.err"); fail "sbatch refused: $j"; sl_clean $ns; return; }
    rq+=("$j")
  done
  for n in 42 43; do
    j=$(sl_sbatch team-a keep 8 600 -w node-$n --no-requeue --comment=tidal.dev/preemptible=true 2>"$BASE/sbatch.err") ||
      { j=$(cat "$BASE/sbatch.err"); fail "sbatch refused: $j"; sl_clean $ns; return; }
    norq+=("$j")
  done
  jobs=("${rq[@]}" "${norq[@]}")
  check "four preemptible sbatch jobs run on node-40..node-43 (slurmctld)" until_true 30 slp_running "${jobs[@]}"
  sleep 1  # 2 adapter passes: the engine has the running jobs

  # (1) Only jobs Slurm would not requeue are in the way: no victim.
  E2E_POD_PRIORITY=1000 pods $ns hi 2 8 tidal-scheduler '{"tidal.dev/gang": "hi", "tidal.dev/queue": "ta"}' \
    '{"tidal.dev/gang-size": "2"}' '{"e2e.tidal.dev/victim": "norequeue"}' | k create -f - >/dev/null
  check "a priority-1000 gang for the --no-requeue jobs' nodes is refused: no victims" until_true 20 \
    has_event $ns FailedScheduling "hi-0" "no preemption victims"
  sleep 3
  check "the --no-requeue jobs keep running, never requeued (Restarts $(sl_field "${norq[0]}" Restarts), $(sl_field "${norq[1]}" Restarts))" \
    eval "sl_state_is ${norq[0]} RUNNING && sl_state_is ${norq[1]} RUNNING &&
      [ \"\$(sl_field ${norq[0]} Restarts)\" = 0 ] && [ \"\$(sl_field ${norq[1]} Restarts)\" = 0 ]"
  check "and the gang is not bound" test "$(bound $ns)" -eq 0
  k delete pods -n $ns --all --wait=false >/dev/null
  until_true 20 eval "[ -z \"\$(k get pods -n $ns -o name)\" ]" || true

  # (2) Requeueable preemptible jobs: tidal-slurm requeues them for the gang.
  p0=$(slp_metric 'tidal_preemptions_total{reason="priority"}')
  d0=$(slp_metric 'tidal_disruptions_total{cause="preemption"}')
  r0=$(slp_requeues)
  t0=$(e2e_now_ms)
  E2E_POD_PRIORITY=1000 pods $ns hi 2 8 tidal-scheduler '{"tidal.dev/gang": "hi", "tidal.dev/queue": "ta"}' \
    '{"tidal.dev/gang-size": "2"}' '{"e2e.tidal.dev/victim": "requeue"}' | k create -f - >/dev/null
  check "the gang preempts the two requeueable Slurm jobs and runs whole" until_true 60 all_running $ns 2
  timings+=("slurm-preempt-gang-running=$(ms_since "$t0")ms")
  nodes=$(sl_pod_nodes $ns | sort | tr '\n' ' ')
  check "on node-40 and node-41 ($nodes)" test "$nodes" = "node-40 node-41 "
  for j in "${rq[@]}"; do
    check "job $j was requeued and is held for Tidal ($(sl_field "$j" JobState), Restarts $(sl_field "$j" Restarts), $(sl_field "$j" AdminComment | cut -c1-80))" \
      eval "sl_state_is $j PENDING && [ \"\$(sl_field $j Restarts)\" = 1 ] && sl_field $j AdminComment | grep -q '^tidal:'"
  done
  sleep 2
  check "while the gang runs, the requeued jobs wait (their -w node is taken): $(sl_field "${rq[0]}" JobState), $(sl_field "${rq[1]}" JobState)" \
    eval "sl_state_is ${rq[0]} PENDING && sl_state_is ${rq[1]} PENDING"
  check "the --no-requeue jobs still run" eval "sl_state_is ${norq[0]} RUNNING && sl_state_is ${norq[1]} RUNNING"
  ev=$(events $ns TidalPreempting | head -n 1 | cut -f3)
  e2e_log "    event: ${ev:0:200}"
  check "the TidalPreempting event names the Slurm jobs" has_event $ns TidalPreempting "Slurm job(s)" "slurm/${rq[0]}"
  check "tidal-slurm counts the two requeues (tidal_slurm_disruption_requeues_total $r0 -> $(slp_requeues))" \
    until_true 5 eval "[ \"\$(slp_requeues)\" = $((r0 + 2)) ]"
  check "tidal_preemptions_total{reason=\"priority\"} grew by 2 ($p0 -> $(slp_metric 'tidal_preemptions_total{reason="priority"}'))" \
    until_true 5 eval "[ \"\$(slp_metric 'tidal_preemptions_total{reason=\"priority\"}')\" = $((p0 + 2)) ]"
  check "tidal_disruptions_total{cause=\"preemption\"} grew by 2" \
    until_true 5 eval "[ \"\$(slp_metric 'tidal_disruptions_total{cause=\"preemption\"}')\" = $((d0 + 2)) ]"

  # (3) The gang goes: the requeued jobs run again.
  k delete pods -n $ns --all --wait=false >/dev/null
  check "once the gang is gone, both requeued jobs run again" until_true 30 \
    eval "sl_state_is ${rq[0]} RUNNING && sl_state_is ${rq[1]} RUNNING"
  check "each on its own -w node, kept across the requeue ($(sl_field "${rq[0]}" NodeList), $(sl_field "${rq[1]}" NodeList))" \
    eval "[ \"\$(sl_field ${rq[0]} NodeList)\" = node-40 ] && [ \"\$(sl_field ${rq[1]} NodeList)\" = node-41 ]"
  k label nodes node-40 node-41 node-42 node-43 e2e.tidal.dev/victim- >/dev/null 2>&1 || true
  sl_clean $ns
}
