# shellcheck shell=bash
# Cases of test/slurm/adapter_test.sh: holds by a job's owner and by an admin. The gate holds every
# job itself, so before the hold key Tidal could not tell `sbatch --hold` from its own hold: it
# placed and released the job like any other, undid an admin's `scontrol hold` of a waiting job,
# and the gate refused the owner's `scontrol hold` / `release`. Now a hold is the comment word
# tidal.dev/hold=true (deploy/slurm/job_submit.lua writes it; shim/slurm/waiting.h), which Tidal
# honours until it goes.

user_comment() { slurm_job_field "$1" Comment; }
has_hold_key() { case " $(user_comment "$1") " in *" tidal.dev/hold=true "*) true ;; *) false ;; esac; }
# held by its key: held for Tidal, never released, the key in its comment, the reason in its AdminComment
held_by_key() { held "$1" && has_hold_key "$1" && comment_has "$1" "tidal: held: tidal.dev/hold=true in its comment"; }
_all_held_by_key() { local j; for j in "$@"; do held_by_key "$j" || return 1; done; }

# 11. sbatch --hold stays pending and unreleased (AdminComment says why and how to undo it) while
#     a job beside it runs; its owner's `scontrol release` hands it to Tidal and it runs. Waiting
#     jobs (queue capped full): the owner's `scontrol hold`, an admin's Comment key and an admin's
#     plain `scontrol hold` each keep one held once capacity frees, and they hold no quota (a job
#     of the queue's whole 16 GPUs runs past them); the owner's release, the admin removing the
#     key and the admin's `scontrol release` each hand theirs back, and they run where Tidal pinned them.
case_hold() {
  local h o b w1 w2 w3 c j
  ensure_adapter
  h=$(submit team-a --hold --comment="mine tidal.dev/class=batch" --gres=gpu:1 -- 5)
  o=$(submit team-a --gres=gpu:1 -- 5)
  wait_for 10 "job $h (sbatch --hold) says it is held by its key" held_by_key "$h"
  wait_for 20 "job $o beside the held one runs" is_state "$o" RUNNING
  holds_for 4 "job $h (sbatch --hold) left its hold" held_by_key "$h"
  case $(user_comment "$h") in "mine tidal.dev/class=batch tidal.dev/hold=true"*) ;; *) fail "job $h Comment: '$(user_comment "$h")'" ;; esac
  check "sbatch --hold: job $h held for 4s, Comment '$(user_comment "$h")', '$(slurm_job_field "$h" AdminComment)'"
  slurm_as "$USER_" scontrol release "$h" || fail "$USER_'s scontrol release of its held job $h failed"
  wait_for 20 "job $h RUNNING after its owner's release" is_state "$h" RUNNING
  ran_where_pinned "$h" || fail "job $h off its pin"
  has_hold_key "$h" && fail "job $h still has the key: '$(user_comment "$h")'"
  check "owner's scontrol release: key removed (Comment '$(user_comment "$h")'), job $h RUNNING on its pin"
  cancel_all

  # queue capped (16 GPUs, no borrowing) full: jobs of capped wait for quota
  b=$(submit capped -N 4 --gres=gpu:4 -- 300)
  wait_for 20 "job $b (capped, 16 GPUs) RUNNING" is_state "$b" RUNNING
  w1=$(submit capped --gres=gpu:1 -- 2)
  w2=$(submit capped --gres=gpu:1 -- 2)
  w3=$(submit capped --gres=gpu:1 -- 2)
  for j in $w1 $w2 $w3; do wait_for 10 "job $j waits for capped's quota" comment_has "$j" "queue capped"; done
  slurm_as "$USER_" scontrol hold "$w1" || fail "$USER_'s scontrol hold of its waiting job $w1 failed"
  scontrol update JobId="$w2" Comment="tidal.dev/hold=true" || fail "admin's Comment key on $w2"
  scontrol hold "$w3" || fail "admin's scontrol hold of $w3"
  wait_for 10 "jobs $w1 $w2 $w3 held by their key" _all_held_by_key "$w1" "$w2" "$w3"
  check "owner's scontrol hold ($w1), admin's Comment key ($w2), admin's scontrol hold ($w3): each held, '$(slurm_job_field "$w1" AdminComment)'"
  scancel "$b"
  c=$(submit capped -N 4 --gres=gpu:4 -- 4)
  wait_for 20 "job $c (capped's whole 16 GPUs) RUNNING past the held ones" is_state "$c" RUNNING
  holds_for 3 "a held job left its hold once capacity freed" _all_held_by_key "$w1" "$w2" "$w3"
  check "capacity freed: job $c (16 GPUs, capped's whole quota) runs; $w1 $w2 $w3 stay held, holding no quota"
  wait_for 20 "job $c completes" eval "[ -z \"\$(squeue -h -j $c 2>/dev/null)\" ]"
  slurm_as "$USER_" scontrol release "$w1" || fail "$USER_'s release of $w1"
  scontrol update JobId="$w2" Comment="" || fail "admin's key removal on $w2"
  scontrol release "$w3" || fail "admin's scontrol release of $w3"
  for j in $w1 $w2 $w3; do
    wait_for 20 "job $j runs once its hold is gone" eval "is_state $j RUNNING || is_state $j COMPLETED"
    ran_where_pinned "$j" || fail "job $j did not run where Tidal pinned it"
  done
  # the admin's own release was kept from Slurm (the gate): only Tidal's reached slurmctld
  [ "$(grep -c "release hold on JobId=$w3 by uid 0\$" "$BASE/log/slurmctld.log")" = 1 ] || fail "job $w3 released $(grep -c "release hold on JobId=$w3 by uid 0\$" "$BASE/log/slurmctld.log") time(s) (want 1: Tidal's)"
  check "owner's release ($w1), admin's key removal ($w2), admin's scontrol release ($w3): each ran where Tidal pinned it"
  cancel_all

  # An array released by hand: an admin's plain `scontrol release` of a job without the key passes
  # the gate, and the array's pending record escapes the hold (the cluster is full: Slurm cannot
  # start a task). Tidal holds it again in place, by the tasks it holds (JobId=A_[0-3]: by the
  # array's id the hold would reach every task split off from it, those Tidal released too).
  local a errs held_before
  b=$(submit team-a -N 8 --gres=gpu:4 -- 300)
  wait_for 20 "job $b (the whole cluster) RUNNING" is_state "$b" RUNNING
  a=$(submit team-a --array=0-3 --gres=gpu:1 -- 5)
  wait_for 10 "array $a waits for Tidal" comment_has "$a" "tidal: "
  errs=$(metric tidal_slurm_apply_errors_total) held_before=$(metric tidal_slurm_held_total)
  scontrol release "$a" || fail "admin's plain release of array $a"
  wait_for 15 "array $a held again" eval "held $a && metric_above tidal_slurm_held_total $held_before"
  [ "$(metric tidal_slurm_apply_errors_total)" = "$errs" ] || fail "apply errors $errs -> $(metric tidal_slurm_apply_errors_total)"
  [ "$(squeue -h -j "$a" -o %i | wc -l)" = 1 ] || fail "array $a split by the hold: $(squeue -h -j "$a" -o %i | paste -sd' ')"
  check "array $a released by hand: held again as one record ($(squeue -h -j "$a" -o %i)), no apply error"
  cancel_all
}
