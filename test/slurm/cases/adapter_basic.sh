# shellcheck shell=bash
# Cases of test/slurm/adapter_test.sh: the gate with and without the adapter, the door lease
# against a second adapter, bad input.

ensure_adapter() { _alive adapter || adapter_start; }

# 1. A job stays held while no adapter runs (and its owner cannot release it); the adapter, once
#    running, pins and releases it, and it runs where it was pinned.
case_gate() {
  local j t
  adapter_start
  adapter_stop TERM
  grep -q "tidal-slurm shutting down" "$RUN/adapter.log" || fail "adapter did not shut down cleanly on SIGTERM"
  j=$(submit team-a --gres=gpu:2 -- 2)
  held "$j" || fail "job $j is not held at submit"
  # without the gate slurmctld starts such a job within ~2.5 s (backfill)
  holds_for 4 "job $j left the hold while no adapter ran" held "$j"
  comment_has "$j" "tidal: waiting for Tidal" || fail "job $j AdminComment: $(slurm_job_field "$j" AdminComment)"
  check "adapter stopped: job $j stays held for 4s (PENDING, Priority=0, $(slurm_job_field "$j" Reason))"
  if slurm_as "$USER_" scontrol release "$j" 2>/dev/null; then fail "$USER_ could release its job $j"; fi
  holds_for 1 "job $j left the hold after its owner's refused release" held "$j"
  check "its owner's scontrol release fails; still held"
  t=$SECONDS
  adapter_start
  wait_for 20 "job $j RUNNING once the adapter runs" is_state "$j" RUNNING
  ran_where_pinned "$j" || fail "job $j runs on $(slurm_job_field "$j" NodeList), pinned $(slurm_job_field "$j" ReqNodeList)"
  check "adapter running: job $j RUNNING in $((SECONDS - t))s on its pin ($(slurm_job_field "$j" AdminComment))"
  wait_for 20 "job $j completes" _queue_empty
}

# 7. A second adapter (another --holder) is refused by the engine while the first holds the door,
#    and writes nothing to Slurm: a job submitted while the first is frozen (SIGSTOP: its stream
#    stays open, so it keeps the lease) stays held with the gate's comment; the first, resumed,
#    releases it.
case_door() {
  local j rc=0 a1
  ensure_adapter
  a1=$(cat "$RUN/adapter.pid")
  "$BIN/tidal-slurm" --engine "127.0.0.1:$ENGINE_PORT" --config "$RUN/adapter.yaml" --metrics off \
    --holder intruder --once 1 >"$RUN/adapter2-once.log" 2>&1 || rc=$?
  [ "$rc" != 0 ] || fail "a second adapter (--holder intruder --once 1) exited 0"
  grep -q 'held by holder "tidal-slurm@test"' "$RUN/adapter2-once.log" || fail "second adapter's log does not say the door is held: $(cat "$RUN/adapter2-once.log")"
  check "second adapter --once: exit $rc, $(grep -o 'front door slurm is held by holder "[^"]*"' "$RUN/adapter2-once.log")"

  kill -STOP "$a1"
  "$BIN/tidal-slurm" --engine "127.0.0.1:$ENGINE_PORT" --config "$RUN/adapter.yaml" \
    --metrics "127.0.0.1:$AD2_METRICS" --holder intruder </dev/null >>"$RUN/adapter2.log" 2>&1 &
  echo $! >"$RUN/adapter2.pid"
  j=$(submit team-a --gres=gpu:1 -- 2)
  wait_for 10 "second adapter logs that the door is held" grep -q 'is held by holder "tidal-slurm@test"' "$RUN/adapter2.log"
  wait_for 10 "second adapter polls" metric_above tidal_slurm_passes_total 5 "$AD2_METRICS"
  holds_for 3 "job $j changed while only the refused adapter ran" _untouched "$j"
  _alive adapter2 || fail "second adapter exited instead of retrying"
  for m in tidal_slurm_up tidal_slurm_released_total tidal_slurm_held_total tidal_slurm_comments_total tidal_slurm_apply_errors_total; do
    metric_is "$m" 0 "$AD2_METRICS" || fail "second adapter: $m = $(metric "$m" "$AD2_METRICS"), want 0"
  done
  check "second adapter (loop, $(metric tidal_slurm_passes_total "$AD2_METRICS") passes) refused, up 0, released/held/comments 0; job $j untouched for 3s"
  kill -CONT "$a1"
  wait_for 20 "job $j RUNNING after the first adapter resumed" is_state "$j" RUNNING
  ran_where_pinned "$j" || fail "job $j off its pin"
  metric_is tidal_slurm_up 1 || fail "first adapter not up after SIGCONT"
  _stop adapter2
  check "first adapter resumed: job $j released and RUNNING; it never lost the door"
  wait_for 20 "job $j completes" _queue_empty
}
_untouched() { held "$1" && [ "$(slurm_job_field "$1" AdminComment)" = "tidal: waiting for Tidal" ]; }

# 8. Bad input is held with a reason its owner can read; the adapter keeps running.
case_badinput() {
  local u o k g
  ensure_adapter
  u=$(submit nosuch --gres=gpu:1 -- 2)
  o=$(submit team-a --gres=gpu:1 --constraint='tidal-leaf-l0|tidal-leaf-l1' -- 2)
  # A --comment value the engine refuses (before Dec 2026: held with no reason at all).
  k=$(submit team-a --gres=gpu:1 --comment='mine tidal.dev/preemptible=True' -- 2)
  wait_for 10 "job $u (unknown account) gets an AdminComment naming its queue" comment_has "$u" 'queue "nosuch" is not configured'
  wait_for 10 "job $o (--constraint a|b) gets an AdminComment naming the constraint" comment_has "$o" "--constraint 'tidal-leaf-l0|tidal-leaf-l1'"
  wait_for 10 "job $k (preemptible=True) gets an AdminComment naming the key and the accepted values" \
    comment_has "$k" 'tidal.dev/preemptible: invalid value "True" (accepted: true, false)'
  held "$u" || fail "job $u not held"
  held "$o" || fail "job $o not held"
  held "$k" || fail "job $k not held"
  check "unknown account: job $u held, '$(slurm_job_field "$u" AdminComment)'"
  check "--constraint a|b: job $o held, '$(slurm_job_field "$o" AdminComment)'"
  check "--comment tidal.dev/preemptible=True: job $k held, '$(slurm_job_field "$k" AdminComment)'"
  # A comment key Slurm's option replaces (the queue is the account's): it runs, and says so.
  g=$(submit team-a --gres=gpu:1 --comment='tidal.dev/queue=capped' -- 1)
  wait_for 20 "a good job $g next to the bad ones runs" is_state "$g" RUNNING
  comment_has "$g" "tidal.dev/queue=capped (the queue of its account/partition/QOS is team-a)" ||
    fail "job $g: the AdminComment does not name the replaced comment key: '$(slurm_job_field "$g" AdminComment)'"
  holds_for 2 "a bad job left the hold" eval "held $u && held $o && held $k"
  _alive adapter || fail "adapter exited"
  metric_is tidal_slurm_up 1 || fail "tidal_slurm_up is $(metric tidal_slurm_up)"
  check "adapter alive, /metrics answers tidal_slurm_up 1, a good job $g runs beside them: '$(slurm_job_field "$g" AdminComment)'"
  scancel "$u" "$o" "$k"
  wait_for 20 "queue empty" _queue_empty
}
