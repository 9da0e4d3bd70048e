# shellcheck shell=bash
# Cases of test/slurm/adapter_test.sh: topology (required leaf, --switches=1), quota, --exclusive
# and partition limits.

# one_leaf JOB: every node of the job's NodeList carries the same tidal-leaf-* feature; prints it
one_leaf() {
  local n l leaves=""
  for n in $(scontrol show hostnames "$(slurm_job_field "$1" NodeList)"); do
    l=$(leaf_of "$n"); leaves="$leaves $l"
  done
  leaves=$(tr ' ' '\n' <<<"$leaves" | sed '/^$/d' | sort -u)
  [ "$(wc -l <<<"$leaves")" = 1 ] && [ -n "$leaves" ] || { echo "job $1 on $(slurm_job_field "$1" NodeList) spans leaves: $(paste -sd' ' - <<<"$leaves")"; return 1; }
  echo "$leaves"
}

# 2. Leaf l0 has 2 of its 4 nodes busy; a 4-node job that requires one leaf (comment key, then
#    --switches=1) lands inside leaf l1, though 6 nodes across both leaves have room.
case_topology() {
  local b t s l
  ensure_adapter
  b=$(submit team-a -N 2 -w gpu01,gpu02 --gres=gpu:4 -- 300)
  wait_for 20 "busy job $b RUNNING on gpu01,gpu02" is_state "$b" RUNNING
  [ "$(hosts "$(slurm_job_field "$b" NodeList)")" = gpu01,gpu02 ] || fail "job $b (--nodelist gpu01,gpu02) runs on $(slurm_job_field "$b" NodeList)"
  check "job $b fills gpu01,gpu02 (leaf l0): l0 has 2 free nodes, l1 has 4"
  t=$(submit team-a -N 4 --gres=gpu:2 --comment=tidal.dev/topology-required=leaf -- 300)
  wait_for 20 "4-node topology-required=leaf job $t RUNNING" is_state "$t" RUNNING
  l=$(one_leaf "$t") || fail "$l"
  [ "$l" = l1 ] || fail "job $t in leaf $l, want l1"
  ran_where_pinned "$t" || fail "job $t off its pin"
  check "--comment=tidal.dev/topology-required=leaf: job $t on $(slurm_job_field "$t" NodeList), all leaf $l"
  # l1 now has 2 free GPUs per node, l0 two nodes with 4: only l1 holds 4 members of 2 GPUs
  s=$(submit team-a -N 4 --gres=gpu:2 --switches=1 -- 300)
  wait_for 20 "4-node --switches=1 job $s RUNNING" is_state "$s" RUNNING
  l=$(one_leaf "$s") || fail "$l"
  [ "$l" = l1 ] || fail "job $s in leaf $l, want l1"
  ran_where_pinned "$s" || fail "job $s off its pin"
  check "--switches=1: job $s on $(slurm_job_field "$s" NodeList), all leaf $l"
  invariants || fail "after topology"
  cancel_all
}

# 3. Queue capped: nominal 16 GPUs, no borrowing. Three 8-GPU jobs on an otherwise idle 32-GPU
#    cluster: two run, the third waits with an AdminComment naming the quota, and runs once one
#    of the two ends.
case_quota() {
  local q1 q2 q3 running waiting="" j
  ensure_adapter
  q1=$(submit capped -N 2 --gres=gpu:4 -- 300)
  q2=$(submit capped -N 2 --gres=gpu:4 -- 300)
  q3=$(submit capped -N 2 --gres=gpu:4 -- 300)
  wait_for 20 "two of $q1 $q2 $q3 RUNNING" _n_running 2 "$q1 $q2 $q3"
  for j in $q1 $q2 $q3; do is_state "$j" RUNNING || waiting=$j; done
  [ -n "$waiting" ] || fail "all three capped jobs run: 24 GPUs over a 16-GPU quota"
  wait_for 10 "job $waiting's AdminComment names the quota" comment_has "$waiting" "queue capped would use 24 gpus, over nominal 16 + borrowing limit 0"
  holds_for 3 "third capped job $waiting left the hold with 16 GPUs free in the cluster" held "$waiting"
  _n_running 2 "$q1 $q2 $q3" || fail "not exactly two capped jobs running"
  check "2 of 3 capped jobs run; $waiting held: '$(slurm_job_field "$waiting" AdminComment)'"
  for j in $q1 $q2 $q3; do [ "$j" = "$waiting" ] || { running=$j; break; }; done
  scancel "$running"
  wait_for 20 "job $waiting RUNNING after $running ended" is_state "$waiting" RUNNING
  ran_where_pinned "$waiting" || fail "job $waiting off its pin"
  check "job $running cancelled: $waiting runs (quota freed)"
  cancel_all
}
_n_running() {
  local want=$1 n=0 j
  for j in $2; do is_state "$j" RUNNING && n=$((n + 1)); done
  [ "$n" = "$want" ]
}

# 11. --exclusive and partition limits. Three 1-GPU jobs fill gpu01-03 a little; an --exclusive job
#     (no --gres) must go to an empty node, hold every GPU there (tidal_slurm_gpus_running counts
#     them), and never be pinned to a busy node (it stayed pending there, Reason Resources, while the
#     engine counted that node's GPUs free). A partition "short" (MaxTime=10 min) and one "down"
#     (State=DOWN): --time=20 and a job to "down" are held with the reason, never released (they
#     stayed released for ever, Reason PartitionTimeLimit / PartitionDown, their GPUs idle and
#     charged); the owner's TimeLimit=5 and the partition back UP release them.
case_partitions() {
  local b1 b2 b3 x t d
  ensure_adapter
  b1=$(submit team-a -w gpu01 --gres=gpu:1 -- 300) b2=$(submit team-a -w gpu02 --gres=gpu:1 -- 300)
  b3=$(submit team-a -w gpu03 --gres=gpu:1 -- 300)
  for x in $b1 $b2 $b3; do wait_for 20 "job $x RUNNING" is_state "$x" RUNNING; done
  x=$(submit team-a --exclusive -- 300)
  wait_for 20 "--exclusive job $x RUNNING" is_state "$x" RUNNING
  case $(slurm_job_field "$x" NodeList) in gpu0[123]) fail "--exclusive job $x on busy node $(slurm_job_field "$x" NodeList)" ;; esac
  ran_where_pinned "$x" || fail "job $x off its pin"
  wait_for 10 "the adapter counts the exclusive job's 4 GPUs (3 + 4)" metric_is tidal_slurm_gpus_running 7
  check "--exclusive job $x on empty node $(slurm_job_field "$x" NodeList) ($(scontrol -o show job -d "$x" | grep -o 'GRES=[^ ]*' | head -1)); gpus_running 7"
  cancel_all
  scontrol create PartitionName=short Nodes=gpu05,gpu06 MaxTime=10 State=UP || fail "scontrol create partition short"
  scontrol create PartitionName=down Nodes=gpu07,gpu08 State=DOWN || fail "scontrol create partition down"
  t=$(submit team-a -p short --time=20 --gres=gpu:1 -- 300)
  d=$(submit team-a -p down --gres=gpu:1 -- 300)
  wait_for 10 "job $t says its partition's MaxTime" comment_has "$t" "partition short's MaxTime is 10m, below its --time 20m"
  wait_for 10 "job $d says its partition is DOWN" comment_has "$d" "partition down is DOWN"
  holds_for 3 "a job its partition does not start was released" eval "held $t && held $d"
  check "held with the reason: '$(slurm_job_field "$t" AdminComment)'"
  slurm_as "$USER_" scontrol update JobId="$t" TimeLimit=5 || fail "$USER_ cannot shorten job $t"
  scontrol update PartitionName=down State=UP
  wait_for 20 "job $t RUNNING once its --time fits" is_state "$t" RUNNING
  wait_for 20 "job $d RUNNING once its partition is UP" is_state "$d" RUNNING
  ran_where_pinned "$t" && ran_where_pinned "$d" || fail "jobs $t $d off their pins"
  invariants || fail "after partitions"
  cancel_all
  scontrol delete PartitionName=short; scontrol delete PartitionName=down
}
