# shellcheck shell=bash
# Case of test/slurm/adapter_test.sh: elastic Slurm jobs (sbatch --nodes=MIN-MAX).

# 11. With 5 of the 8 nodes taken, a --nodes=2-4 job starts at once on the 3 left (NumNodes=3, its
#     range in Tidal's AdminComment note) instead of waiting for 4. A drain of one of its nodes
#     that is not its batch host shrinks it (scontrol NodeList): the same run goes on on 2 nodes
#     (Restarts=0) and the drained node is free. A drain of its batch host (which Slurm never
#     takes from a running job) requeues it whole; held below its minimum while only one node is
#     left, it starts again on 4 once the other job ends: its range outlived the requeue (Slurm 22.05
#     reads a requeued job as the count it last ran with and no MAX).
case_elastic() {
  local big e nodes batch other shrinks0 requeues0 out t
  [ -x "$BIN/tidalctl" ] || fail "$BIN/tidalctl not built (the drain needs it)"
  ensure_adapter
  shrinks0=$(metric tidal_slurm_disruption_shrinks_total) requeues0=$(metric tidal_slurm_disruption_requeues_total)
  big=$(submit team-a -N 5 --gres=gpu:4 -- 600)
  wait_for 20 "job $big (5 nodes) RUNNING" is_state "$big" RUNNING
  t=$SECONDS
  e=$(submit team-a -N 2-4 --gres=gpu:4 -- 600)
  wait_for 20 "elastic job $e RUNNING on what is left" is_state "$e" RUNNING
  nodes=$(hosts "$(slurm_job_field "$e" NodeList)")
  [ "$(slurm_job_field "$e" NumNodes)" = 3 ] || fail "job $e NumNodes=$(slurm_job_field "$e" NumNodes) on $nodes, want 3"
  comment_has "$e" "[nodes: 2-4]" || fail "job $e AdminComment without its range: $(slurm_job_field "$e" AdminComment)"
  ran_where_pinned "$e" || fail "job $e runs off its pin"
  check "--nodes=2-4 with 3 nodes free: job $e RUNNING in $((SECONDS - t))s on $nodes (NumNodes=3, '$(slurm_job_field "$e" AdminComment)')"

  batch=$(slurm_job_field "$e" BatchHost)
  other=$(echo "$nodes" | tr , '\n' | grep -vx "$batch" | head -1)
  wait_for 10 "the adapter synced the elastic job" metric_above tidal_slurm_jobs_running 1
  t=$SECONDS
  out=$("$BIN/tidalctl" drain --engine "127.0.0.1:$ENGINE_PORT" --by now "$other" 2>&1) || fail "tidalctl drain $other: $out"
  wait_for 20 "job $e shrunk off $other" _shrunk_off "$e" "$other"
  is_state "$e" RUNNING || fail "job $e $(state_of "$e") after its shrink"
  [ "$(slurm_job_field "$e" Restarts)" = 0 ] || fail "job $e Restarts=$(slurm_job_field "$e" Restarts): requeued, not shrunk"
  [ "$(slurm_job_field "$e" NumNodes)" = 2 ] || fail "job $e NumNodes=$(slurm_job_field "$e" NumNodes) after the shrink"
  [ "$(metric tidal_slurm_disruption_shrinks_total)" = $((shrinks0 + 1)) ] ||
    fail "tidal_slurm_disruption_shrinks_total $(metric tidal_slurm_disruption_shrinks_total), want $((shrinks0 + 1))"
  wait_for 20 "the engine reports $other drained" _drained "$other"
  check "drain of $other (not its batch host $batch): job $e shrunk in $((SECONDS - t))s to $(hosts "$(slurm_job_field "$e" NodeList)"), the same run (Restarts=0); $other drained"

  t=$SECONDS
  out=$("$BIN/tidalctl" drain --engine "127.0.0.1:$ENGINE_PORT" --by now "$batch" 2>&1) || fail "tidalctl drain $batch: $out"
  wait_for 20 "job $e requeued for its batch host's drain" _requeued "$e"
  holds_for 3 "job $e started below its minimum (one node left)" _not_running "$e"
  comment_has "$e" "[nodes: 2-4]" || fail "job $e lost its range in the requeue: $(slurm_job_field "$e" AdminComment)"
  check "drain of its batch host $batch: job $e requeued whole in $((SECONDS - t))s, held while 1 node is left ('$(slurm_job_field "$e" AdminComment)')"
  scancel "$big"
  wait_for 30 "job $e RUNNING again once job $big ended" is_state "$e" RUNNING
  [ "$(slurm_job_field "$e" NumNodes)" = 4 ] || fail "job $e NumNodes=$(slurm_job_field "$e" NumNodes) after its requeue, want 4 (its range)"
  case ",$(hosts "$(slurm_job_field "$e" NodeList)")," in *",$other,"* | *",$batch,"*) fail "job $e runs again on a drained node" ;; esac
  [ "$(metric tidal_slurm_disruption_requeues_total)" = $((requeues0 + 1)) ] ||
    fail "tidal_slurm_disruption_requeues_total $(metric tidal_slurm_disruption_requeues_total), want $((requeues0 + 1))"
  metric_is tidal_slurm_apply_errors_total 0 || fail "tidal_slurm_apply_errors_total $(metric tidal_slurm_apply_errors_total)"
  check "job $big ended: job $e RUNNING again on 4 nodes ($(hosts "$(slurm_job_field "$e" NodeList)")), its 2-4 range kept; shrinks +1, requeues +1, apply errors 0"
  out=$("$BIN/tidalctl" drain --engine "127.0.0.1:$ENGINE_PORT" --cancel "$other" "$batch" 2>&1) || fail "tidalctl drain --cancel: $out"
  scancel "$e"
  wait_for 30 "the elastic jobs gone" _queue_empty
}
_shrunk_off() { case ",$(hosts "$(slurm_job_field "$1" NodeList)")," in *",$2,"*) false ;; *) true ;; esac; }
_drained() { "$BIN/tidalctl" drain --engine "127.0.0.1:$ENGINE_PORT" 2>/dev/null | grep -E "^$1 " | grep -q drained; }
_not_running() { ! is_state "$1" RUNNING; }
