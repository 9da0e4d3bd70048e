# shellcheck shell=bash
# Case of test/slurm/adapter_test.sh: Slurm's side of the engine's one disruption path.

# 10. Two running jobs that checkpoint on notice (sbatch --signal=B:USR1@30, copied into their
#     comment by deploy/slurm/cli_filter.lua; --time=10 so neither ends before the drain's
#     deadline), a full node each; `tidalctl drain --by +60s` of both nodes. Each gets SIGUSR1 in its
#     batch shell (its trap logs it) and the AdminComment "tidal: notice (drain): ...". Job A reports
#     its checkpoint (scontrol update comment=tidal.dev/last-checkpoint=<now>) and is requeued at
#     once; job B does not and is requeued at the notice's deadline (30 s). Both are held, placed
#     anew off the drained nodes (Tidal's old pin and Slurm's 120 s requeue BeginTime cleared) and
#     run again at once (two start lines, Restarts=1); the adapter counts 2 notices and 2 requeues,
#     no apply errors. (Slurm resets a requeued job's SubmitTime; the engine keeps getting the
#     first one: shim/slurm/disruptions_test.cc.)
case_disruption() {
  local a b na nb t_drain t_sig t_a t_b notices0 requeues0 out
  [ -x "$BIN/tidalctl" ] || fail "$BIN/tidalctl not built (the drain needs it)"
  ensure_adapter
  notices0=$(metric tidal_slurm_notices_total) requeues0=$(metric tidal_slurm_disruption_requeues_total)
  _ckpt_script
  a=$(slurm_submit_as "$USER_" -A team-a -o /dev/null --gres=gpu:4 --time=10 --signal=B:USR1@30 "$BASE/jobs/ckpt.sh" report) ||
    fail "sbatch job A"
  b=$(slurm_submit_as "$USER_" -A team-a -o /dev/null --gres=gpu:4 --time=10 --signal=B:USR1@30 "$BASE/jobs/ckpt.sh" quiet) ||
    fail "sbatch job B"
  wait_for 20 "jobs $a and $b RUNNING" _both_running "$a" "$b"
  for j in "$a" "$b"; do
    case $(slurm_job_field "$j" Comment) in *"tidal.dev/signal=B:USR1@30"*) ;;
      *) fail "job $j: the cli_filter did not copy --signal into its comment: '$(slurm_job_field "$j" Comment)'" ;; esac
  done
  na=$(slurm_job_field "$a" NodeList) nb=$(slurm_job_field "$b" NodeList)
  check "jobs $a on $na and $b on $nb RUNNING, comment names tidal.dev/signal=B:USR1@30 (cli_filter)"
  # The engine must see them running (and checkpointing on notice) before the drain.
  wait_for 10 "the adapter synced the running jobs" metric_above tidal_slurm_jobs_running 1
  t_drain=$SECONDS
  out=$("$BIN/tidalctl" drain --engine "127.0.0.1:$ENGINE_PORT" --by +60s "$na" "$nb" 2>&1) || fail "tidalctl drain: $out"
  note "$(echo "$out" | head -3 | paste -sd'|' -)"
  wait_for 15 "both batch shells got SIGUSR1 (their trap logs it)" _signalled "$a" "$b"
  t_sig=$((SECONDS - t_drain))
  for j in "$a" "$b"; do
    comment_has "$j" "tidal: notice (drain):" || fail "job $j AdminComment: $(slurm_job_field "$j" AdminComment)"
  done
  check "drain --by +60s of $na $nb: both jobs got SIGUSR1 in their batch shell ${t_sig}s later, AdminComment 'tidal: notice (drain): ...'"
  # A reported its checkpoint: requeued before its deadline; B waits for the deadline.
  wait_for 20 "job $a requeued after its checkpoint report" _requeued "$a"
  t_a=$((SECONDS - t_drain))
  [ $((t_a - t_sig)) -lt 20 ] || fail "job $a requeued $((t_a - t_sig))s after its notice: its checkpoint report did not end the notice"
  is_state "$b" RUNNING || fail "job $b (no checkpoint report) left RUNNING $((SECONDS - t_drain))s after the drain, before its deadline: $(state_of "$b")"
  check "job $a reported its checkpoint: requeued $((t_a - t_sig))s after the notice; job $b still RUNNING"
  wait_for 45 "job $b requeued at its notice's deadline" _requeued "$b"
  t_b=$((SECONDS - t_drain))
  [ $((t_b - t_sig)) -ge 20 ] || fail "job $b requeued only $((t_b - t_sig))s after its notice (deadline 30s)"
  check "job $b requeued $((t_b - t_sig))s after the notice (its 30s deadline)"
  for j in "$a" "$b"; do
    wait_for 20 "job $j runs again (not after Slurm's 120 s requeue delay)" _ran_twice "$j"
    wait_for 10 "job $j RUNNING again" is_state "$j" RUNNING
    case ",$(hosts "$na,$nb")," in *",$(slurm_job_field "$j" NodeList),"*) fail "job $j runs again on a drained node ($(slurm_job_field "$j" NodeList))" ;; esac
    [ "$(slurm_job_field "$j" Restarts)" = 1 ] || fail "job $j Restarts=$(slurm_job_field "$j" Restarts), want 1"
  done
  ran_where_pinned "$a" && ran_where_pinned "$b" || fail "a requeued job runs off its new pin"
  [ "$(metric tidal_slurm_notices_total)" = $((notices0 + 2)) ] || fail "tidal_slurm_notices_total $(metric tidal_slurm_notices_total), want $((notices0 + 2))"
  [ "$(metric tidal_slurm_disruption_requeues_total)" = $((requeues0 + 2)) ] ||
    fail "tidal_slurm_disruption_requeues_total $(metric tidal_slurm_disruption_requeues_total), want $((requeues0 + 2))"
  metric_is tidal_slurm_apply_errors_total 0 || fail "tidal_slurm_apply_errors_total $(metric tidal_slurm_apply_errors_total)"
  check "both requeued jobs run again on $(slurm_job_field "$a" NodeList) and $(slurm_job_field "$b" NodeList) (Restarts=1, on their new pins); notices +2, requeues +2, apply errors 0"
  out=$("$BIN/tidalctl" drain --engine "127.0.0.1:$ENGINE_PORT" --cancel "$na" "$nb" 2>&1) || fail "tidalctl drain --cancel: $out"
  scancel "$a" "$b"
  wait_for 30 "the disrupted jobs gone" _queue_empty
}

# The job: logs its start (RUNLOG) and, on SIGUSR1 in its batch shell, "JOBID RESTARTS" in
# usr1.log; with "report" it then reports the checkpoint it took in its comment.
_ckpt_script() {
  cat >"$BASE/jobs/ckpt.sh" <<EOF
#!/bin/bash
echo "\$SLURM_JOB_ID \$SLURMD_NODENAME" >>$RUNLOG
got=0
trap 'got=1' USR1
for i in \$(seq 3000); do
  if [ "\$got" = 1 ]; then
    got=2
    echo "\$SLURM_JOB_ID \${SLURM_RESTART_COUNT:-0}" >>$BASE/jobs/usr1.log
    [ "\$1" = report ] && scontrol update jobid=\$SLURM_JOB_ID comment="tidal.dev/last-checkpoint=\$(date +%s)"
  fi
  sleep 0.2
done
EOF
  chmod 755 "$BASE/jobs/ckpt.sh"
  : >"$BASE/jobs/usr1.log"
  chmod 666 "$BASE/jobs/usr1.log"
}
_both_running() { is_state "$1" RUNNING && is_state "$2" RUNNING; }
_signalled() { grep -q "^$1 0\$" "$BASE/jobs/usr1.log" && grep -q "^$2 0\$" "$BASE/jobs/usr1.log"; }
# requeued: no longer RUNNING, restarted once (PENDING held, or already running again)
_requeued() { [ "$(slurm_job_field "$1" Restarts)" = 1 ]; }
_ran_twice() { [ "$(grep -c "^$1 " "$RUNLOG")" = 2 ]; }
