# shellcheck shell=bash
# Cases of test/slurm/adapter_test.sh: jobs Slurm holds back even once released (an array's %K
# task limit, --begin, the 120 s after its owner's `scontrol requeue`), and GPUs Slurm spreads
# unevenly over a job's nodes (--gpus=N). Released early, such a job kept its pinned GPUs idle and
# counted as Slurm's; read as N/nodes per node, the engine's ledger disagreed with Slurm's.

# busy_tasks ARRAY: its tasks RUNNING, or PENDING and released by Tidal
busy_tasks() {
  scontrol -o show job "$1" 2>/dev/null | awk '/ JobState=RUNNING / || (/ JobState=PENDING / && /AdminComment=tidal: released/) {c++} END {print c + 0}'
}
_busy_at_most() { [ "$(busy_tasks "$1")" -le "$2" ]; }
# slurmctld logged the adapter's hold of a requeued job J (its AdminComment "tidal: requeued; ...")
_requeue_held_logged() { grep -q "setting admin_comment to tidal: requeued; held to be placed anew for JobId=$1\$" "$BASE/log/slurmctld.log"; }
# job records of array A in slurmctld (its pending record and the tasks split off it), all / PENDING
array_records() { scontrol -o show job "$1" 2>/dev/null | grep -c '^JobId='; }
_array_pending_at_most() { [ "$(scontrol -o show job "$1" 2>/dev/null | grep -c ' JobState=PENDING ')" -le "$2" ]; }
# the AdminComment of array A's pending record (the one whose ArrayTaskId is a range), as its owner sees it
array_comment() { slurm_as "$USER_" squeue -h -j "$1" -t PD -O 'JobArrayID:40,admin_comment:250' 2>/dev/null | awk '$1 ~ /\[/ {sub(/^[^ ]+ +/, ""); sub(/ +$/, ""); print; exit}'; }
_array_says() { case $(array_comment "$1") in *"$2"*) true ;; *) false ;; esac; }

# 10. --array=0-3%1 of 4-GPU tasks: one task at a time is released, the others wait held with the
#     limit in their AdminComment, and a 4-GPU job beside it runs at once. --begin=now+15: held
#     with its begin time in its AdminComment, released once it passes. The owner's `scontrol
#     requeue` of a running job: held again at once (Tidal's pin and Slurm's 120 s BeginTime
#     cleared), placed anew and run a second time. `-N 2 --gpus=3`: the adapter reports the 3 GPUs
#     Slurm allocated (2 + 1), not 2 per node. --array=0-49%2 on a full cluster: its waiting reason
#     goes on the array's pending record in place (squeue shows it), never task by task: each
#     update of one task id split it off into a job record of its own (50 records after one pass,
#     thousands for a big array, until MaxJobCount refused every sbatch).
case_waiting() {
  local a b q g t start
  ensure_adapter
  a=$(submit team-a --array=0-3%1 --gres=gpu:4 -- 3)
  wait_for 20 "task ${a}_0 of the %1 array RUNNING" is_state "${a}_0" RUNNING
  holds_for 3 "more than one task of array $a released at once (%1)" _busy_at_most "$a" 1
  wait_for 10 "a throttled task of array $a says why it waits" eval "scontrol -o show job $a | grep -q 'runs at most 1 task(s) at once'"
  b=$(submit team-a --gres=gpu:4 -- 1)
  wait_for 20 "job $b beside the throttled array runs" is_state "$b" RUNNING
  check "array $a (%1): one task released at a time, the others held ('$(scontrol -o show job "$a" | grep -o 'runs at most 1 task[^;]*' | head -1)'); job $b runs beside it"

  t=$(date +%s)
  q=$(submit team-a --begin=now+15 --gres=gpu:4 -- 1)
  wait_for 10 "job $q (--begin=now+15) says it waits for its begin time" comment_has "$q" "not before its begin time"
  held "$q" || fail "job $q (--begin) is not held"
  wait_for 40 "job $q RUNNING after its begin time" is_state "$q" RUNNING
  start=$(date -d "$(slurm_job_field "$q" StartTime)" +%s)
  [ "$start" -ge $((t + 14)) ] || fail "job $q started at $(slurm_job_field "$q" StartTime), before its begin time"
  ran_where_pinned "$q" || fail "job $q off its pin"
  check "--begin=now+15: job $q held until then ('not before its begin time ...'), started after $((start - t))s"

  g=$(submit team-a --gres=gpu:1 -- 120)
  wait_for 20 "job $g RUNNING" is_state "$g" RUNNING
  slurm_as "$USER_" scontrol requeue "$g" || fail "$USER_ cannot requeue its job $g"
  # the adapter may hold it and place it anew within one poll (~0.2 s): slurmctld's log has the hold
  wait_for 10 "job $g held again after its owner's requeue" eval "(held $g && comment_has $g requeued) || _requeue_held_logged $g"
  wait_for 30 "job $g RUNNING again after the requeue" is_state "$g" RUNNING
  [ "$(slurm_job_field "$g" Restarts)" = 1 ] || fail "job $g Restarts=$(slurm_job_field "$g" Restarts)"
  ran_where_pinned "$g" || fail "job $g off its pin after the requeue"
  check "owner's scontrol requeue: job $g held again at once, placed anew, running again (Restarts=1)"
  wait_for 30 "array $a done" eval "[ -z \"\$(squeue -h -j $a 2>/dev/null)\" ]"
  cancel_all

  g=$(submit team-a -N 2 --gpus=3 -- 60)
  wait_for 20 "job $g (-N 2 --gpus=3) RUNNING" is_state "$g" RUNNING
  wait_for 10 "the adapter counts the 3 GPUs Slurm allocated to job $g" metric_is tidal_slurm_gpus_running 3
  check "-N 2 --gpus=3: $(scontrol -o show job -d "$g" | grep -o 'GRES=[^ ]*' | paste -sd' ' -); tidal_slurm_gpus_running 3"
  invariants || fail "after waiting"
  cancel_all

  g=$(submit team-a -N 8 --gres=gpu:4 -- 120)
  wait_for 20 "job $g (every GPU) RUNNING" is_state "$g" RUNNING
  a=$(submit team-a --array=0-49%2 --gres=gpu:1 -- 1)
  wait_for 10 "a pass of the adapter over array $a" eval "_array_says $a 'tidal: ' && ! _array_says $a 'waiting for Tidal' || [ \$(array_records $a) -gt 1 ]"
  holds_for 2 "array $a split into more than 1 job record while it waits" eval "[ \$(array_records $a) = 1 ]"
  _array_says "$a" 'tidal: ' || fail "array $a's pending record says '$(array_comment "$a")'"
  check "--array=0-49%2 on a full cluster: 1 job record; its owner's squeue says '$(array_comment "$a" | cut -c1-100)'"
  scancel "$g"
  wait_for 20 "task ${a}_0 RUNNING once job $g is gone" eval "is_state ${a}_0 RUNNING || is_state ${a}_0 COMPLETED"
  holds_for 3 "array $a: more pending job records than its record and 2 released tasks" _array_pending_at_most "$a" 3
  wait_for 10 "array $a's pending record names its task limit" _array_says "$a" "runs at most 2 task(s) at once"
  check "array $a running 2 at a time: $(array_records "$a") job records (tasks run or done, and its record), reason on its record"
  cancel_all
}
