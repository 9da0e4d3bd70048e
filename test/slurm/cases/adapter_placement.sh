# shellcheck shell=bash
# Cases of test/slurm/adapter_test.sh: topology (required leaf, --switches=1) and quota.

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
