# shellcheck shell=bash
# Cases of test/slurm/adapter_test.sh: load with the invariants sampled throughout (cases 4, 5,
# 9, 6), and convergence after an adapter kill -9, an engine restart and a slurmctld restart.
# Every load must end with each job run exactly once and released by Tidal exactly once
# (load_done in adapter_common.sh).

# 4. Mixed shapes, ~2.5x the cluster: never a GPU committed twice, every job on its pin.
case_load() {
  local held0
  ensure_adapter
  held0=$(metric tidal_slurm_held_total)   # earlier cases may hold jobs again (disruption: requeued)
  SAMPLES=0
  submit_load 16
  note "load: jobs $LOAD"
  load_done 90 "mixed load"
  metric_is tidal_slurm_held_total "$held0" || fail "adapter re-held $(($(metric tidal_slurm_held_total) - held0)) job(s) under plain load"
}

# 5. kill -9 of the adapter while some jobs are released but not yet started and others are held:
#    while it is down no held job is released; the restarted adapter (same holder) converges.
case_adapter_kill() {
  local held_before rp
  ensure_adapter
  SAMPLES=0
  submit_load 14
  wait_for 20 "some jobs released and not yet started, others held" mid_load
  rp=$(released_pending)
  adapter_stop KILL
  held_before=$(still_held)
  check "adapter killed (-9) with $rp job(s) released-not-started and $held_before held"
  holds_for 3 "a held job was released while no adapter ran" _held_at_least "$held_before"
  invariants || fail "while the adapter was down"
  check "adapter down 3s: still $held_before held (Slurm started only what Tidal had released)"
  adapter_start
  grep -q "pass: .* sent .*" "$RUN/adapter.log" || fail "restarted adapter logged no pass"
  load_done 90 "after adapter kill -9 + restart"
}
_held_at_least() { [ "$(still_held)" -ge "$1" ]; }

# 9. The engine restarts mid-load (kill -9, same address, no state file): the adapter's Sync
#    breaks, it applies nothing while the engine is gone, then resyncs the new engine from Slurm
#    (running and released-pending jobs as bound members) and converges.
case_engine_restart() {
  local errs rel apply
  ensure_adapter
  SAMPLES=0
  submit_load 14
  wait_for 20 "some jobs released and not yet started, others held" mid_load
  errs=$(metric tidal_slurm_engine_errors_total)
  engine_stop KILL
  wait_for 15 "adapter counts engine errors" metric_above tidal_slurm_engine_errors_total "$errs"
  wait_for 5 "tidal_slurm_up 0 while the engine is down" metric_is tidal_slurm_up 0
  rel=$(metric tidal_slurm_released_total) apply=$(metric tidal_slurm_apply_errors_total)
  holds_for 2 "adapter applied something with no engine" eval '[ "$(metric tidal_slurm_released_total)" = "$rel" ]'
  invariants || fail "while the engine was down"
  check "engine killed: adapter up 0, engine errors $(metric tidal_slurm_engine_errors_total) (log: $(grep -o 'engine Sync: [^:]*' "$RUN/adapter.log" | tail -1)), nothing released"
  engine_start
  wait_for 20 "adapter up again on the new engine" metric_is tidal_slurm_up 1
  [ "$(metric tidal_slurm_apply_errors_total)" = "$apply" ] || fail "apply errors after the engine restart: $(metric tidal_slurm_apply_errors_total)"
  check "engine restarted: adapter resynced (up 1)"
  load_done 90 "after engine restart"
  metric_is tidal_slurm_held_total 0 || fail "adapter re-held $(metric tidal_slurm_held_total) job(s) across the engine restart"
}

# 6. slurmctld restarts mid-load (state kept): the adapter reads errors while it is down and
#    applies nothing (no release, no hold, no write attempted), then converges.
case_ctld_restart() {
  local rerr rel held apply t
  ensure_adapter
  SAMPLES=0
  submit_load 12
  wait_for 20 "some jobs released and not yet started, others held" mid_load
  rerr=$(metric tidal_slurm_read_errors_total)
  _slurm_stop_pid "$(cat "$BASE/run/slurmctld.bgpid")" slurmctld
  t=$SECONDS
  # libslurm retries the connection before a read fails: a few seconds on a quiet host, 33 s once
  # on a loaded 2-core one (2026-12-06), so the wait allows 60 s
  wait_for 60 "adapter counts a failed slurmctld read" metric_above tidal_slurm_read_errors_total "$rerr"
  rel=$(metric tidal_slurm_released_total) held=$(metric tidal_slurm_held_total) apply=$(metric tidal_slurm_apply_errors_total)
  metric_is tidal_slurm_up 0 || fail "tidal_slurm_up is $(metric tidal_slurm_up) while slurmctld is down"
  # The pass reads jobs, nodes and partitions: whichever read meets the dead slurmctld first is
  # the one logged (slurm_load_node once on 2026-12-06, slurm_load_jobs before), and the line is
  # written just after the pass counted the error.
  wait_for 5 "adapter log lacks the read error" grep -qE "slurm_load_[a-z_]+[^:]*: Unable to contact slurm controller" "$RUN/adapter.log"
  check "slurmctld down: read error after $((SECONDS - t))s ('$(grep -oE 'slurm_load_[a-z_]+[^:]*: Unable.*' "$RUN/adapter.log" | tail -1)'), up 0"
  holds_for 2 "the adapter wrote to Slurm while slurmctld was down" _unchanged "$rel" "$held" "$apply"
  slurm_restart_ctld "$BASE" || fail "slurmctld restart"
  wait_for 30 "adapter up again after the slurmctld restart" metric_is tidal_slurm_up 1
  grep -q "reconciling again" "$RUN/adapter.log" || fail "adapter did not log its recovery"
  check "slurmctld back after $((SECONDS - t))s: nothing released, held or written while down; adapter up 1"
  load_done 90 "after slurmctld restart"
  metric_is tidal_slurm_held_total 0 || fail "adapter re-held $(metric tidal_slurm_held_total) job(s) across the slurmctld restart"
}
_unchanged() {
  [ "$(metric tidal_slurm_released_total)" = "$1" ] && [ "$(metric tidal_slurm_held_total)" = "$2" ] &&
    [ "$(metric tidal_slurm_apply_errors_total)" = "$3" ]
}
