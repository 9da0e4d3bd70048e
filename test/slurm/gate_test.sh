#!/usr/bin/env bash
# The Tidal submit gate (deploy/slurm/job_submit.lua) on a REAL Slurm 22.05: munged, slurmctld and
# two slurmd on loopback (test/slurm/lib.sh). Checks that every job is held at submit, that the
# job's owner cannot release it, that holds (sbatch --hold, scontrol hold/release by the owner or
# root) become the comment key tidal.dev/hold=true, that root (the tidal-slurm adapter) can release
# it, that pinning a held job with ReqNodeList= and releasing it runs it on that node, and that
# the owner cannot reshape a job Tidal released before Slurm starts it.
# Exit 77 (skipped) without Slurm.
# Ports: TIDAL_SLURM_GATE_CTLD_PORT (16837), TIDAL_SLURM_GATE_NODE_PORT0 (17301, 17302).
# TIDAL_SLURM_KEEP=1 keeps BASE (logs, slurm.conf) after a passing run; a failing run always keeps it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
for c in slurmctld slurmd munged mungekey sbatch scontrol; do
  command -v "$c" >/dev/null || { echo "SKIP: $c not installed (apt-get install slurm-wlm munge)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (starts slurmctld/slurmd, creates user tidaltest)"; exit 77; }
# shellcheck source=lib.sh
source "$HERE/lib.sh"

TMP=${TMPDIR:-/tmp}
runuser -u nobody -- test -x "$TMP" 2>/dev/null || TMP=/tmp   # tidaltest must reach BASE (munge socket, slurm.conf)
BASE=$TMP/tidal-slurm-gate
export SLURM_CTLD_PORT=${TIDAL_SLURM_GATE_CTLD_PORT:-16837} SLURM_NODE_PORT0=${TIDAL_SLURM_GATE_NODE_PORT0:-17301}
unset SLURM_NODE_NAMES SLURM_NODE_FEATURES SLURM_TOPOLOGY_CONF SLURM_GATE SLURM_EXTRA_CONF SLURM_WITH_RESTD
USER_=tidaltest
ok=0
cleanup() {
  local rc=$?
  slurm_down "$BASE" || true
  if [ "$ok" = 1 ] && [ "${TIDAL_SLURM_KEEP:-0}" != 1 ]; then rm -rf "$BASE"; else echo "logs kept in $BASE/log"; fi
  exit $rc
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  squeue -o '%i %u %T %r %Q %N %k' 2>/dev/null || true
  echo "--- slurmctld.log (tail)"; tail -n 25 "$BASE/log/slurmctld.log" 2>/dev/null || true
  exit 1
}
check() { echo "ok: $*"; }

# held_for_tidal JOB: PENDING, priority 0, reason JobHeldUser/JobHeldAdmin
held_for_tidal() {
  local j=$1 s p r
  s=$(slurm_job_field "$j" JobState); p=$(slurm_job_field "$j" Priority); r=$(slurm_job_field "$j" Reason)
  [ "$s" = PENDING ] && [ "$p" = 0 ] && case $r in JobHeld*) true ;; *) false ;; esac ||
    { echo "job $j: JobState=$s Priority=$p Reason=$r"; return 1; }
}

t0=$SECONDS
slurm_up "$BASE" 2 4 || fail "slurm_up"
check "slurm up (2 nodes x 4 a100, gate installed) in $((SECONDS - t0))s"
slurm_ensure_user "$USER_" || fail "cannot create user $USER_"

# 1. a user's GPU job is held at submit, and stays held
j1=$(slurm_submit_as "$USER_" --job-name=gate-user --gres=gpu:a100:1 -o /dev/null --wrap 'sleep 300') || fail "sbatch as $USER_"
held_for_tidal "$j1" || fail "job $j1 of $USER_ is not held at submit"
[ "$(slurm_job_field "$j1" AdminComment)" = "tidal: waiting for Tidal" ] || fail "job $j1 AdminComment is '$(slurm_job_field "$j1" AdminComment)'"
# without the gate Slurm starts such a job within ~2.5 s (backfill); watch it for 4 s
end=$((SECONDS + 4))
while [ $SECONDS -lt $end ]; do held_for_tidal "$j1" >/dev/null || fail "job $j1 left the hold by itself"; sleep 0.25; done
check "job $j1 by $USER_ is PENDING, Priority=0, Reason=$(slurm_job_field "$j1" Reason), AdminComment='tidal: waiting for Tidal', for 4s"

# 2. its owner cannot release it, reprioritise it or forge a tidal: comment
if slurm_as "$USER_" scontrol release "$j1" 2>/dev/null; then fail "$USER_ could release job $j1"; fi
held_for_tidal "$j1" || fail "job $j1 not held after $USER_'s refused release"
check "scontrol release $j1 by $USER_ fails; still held"
if slurm_as "$USER_" scontrol update JobId="$j1" Priority=1000 2>/dev/null; then fail "$USER_ could set Priority of $j1"; fi
if slurm_as "$USER_" scontrol update JobId="$j1" Comment="tidal: released" 2>/dev/null; then fail "$USER_ could set a tidal: comment"; fi
held_for_tidal "$j1" || fail "job $j1 not held"
[ "$(slurm_job_field "$j1" AdminComment)" = "tidal: waiting for Tidal" ] || fail "job $j1 AdminComment changed to '$(slurm_job_field "$j1" AdminComment)'"
check "$USER_ cannot set Priority= or a 'tidal:' Comment on $j1"

# 2b. holds become the comment key tidal.dev/hold=true (the update succeeds; the job stays held):
#     sbatch --hold adds it (the user's comment kept), the owner's scontrol release removes it, the
#     owner's scontrol hold adds it, root's plain scontrol hold adds it and root's release removes it
#     (Tidal's own holds carry a "tidal:" AdminComment: they pass untouched)
comment_of() { scontrol show job "$1" | sed -n 's/^   Comment=//p' | sed 's/ *$//'; }
jh=$(slurm_submit_as "$USER_" --hold --comment="mine tidal.dev/class=x" -o /dev/null --wrap 'sleep 300') || fail "sbatch --hold as $USER_"
held_for_tidal "$jh" || fail "job $jh (--hold) not held"
[ "$(comment_of "$jh")" = "mine tidal.dev/class=x tidal.dev/hold=true" ] || fail "job $jh (--hold) Comment is '$(comment_of "$jh")'"
slurm_as "$USER_" scontrol release "$jh" || fail "$USER_'s release of its --hold job $jh refused"
held_for_tidal "$jh" || fail "job $jh left the hold after its owner's release (Slurm must not start it by itself)"
[ "$(comment_of "$jh")" = "mine tidal.dev/class=x" ] || fail "job $jh Comment after the release is '$(comment_of "$jh")'"
slurm_as "$USER_" scontrol hold "$jh" || fail "$USER_'s scontrol hold of its pending job $jh refused"
[ "$(comment_of "$jh")" = "mine tidal.dev/class=x tidal.dev/hold=true" ] || fail "job $jh Comment after the hold is '$(comment_of "$jh")'"
if slurm_as "$USER_" scontrol update JobId="$jh" Priority=5 2>/dev/null; then fail "$USER_ could set Priority= of $jh"; fi
scontrol release "$jh" || fail "root's plain release of $jh"
held_for_tidal "$jh" || fail "job $jh left the hold after root's plain release of a held-by-key job"
[ "$(comment_of "$jh")" = "mine tidal.dev/class=x" ] || fail "job $jh Comment after root's release is '$(comment_of "$jh")'"
scontrol hold "$jh" || fail "root's plain hold of $jh"
[ "$(comment_of "$jh")" = "mine tidal.dev/class=x tidal.dev/hold=true" ] || fail "job $jh Comment after root's hold is '$(comment_of "$jh")'"
scontrol update JobId="$jh" AdminComment="tidal: held again" Priority=0 || fail "Tidal-like hold of $jh"
[ "$(comment_of "$jh")" = "mine tidal.dev/class=x tidal.dev/hold=true" ] || fail "a Tidal-like hold changed the Comment of $jh"
held_for_tidal "$jh" || fail "job $jh not held"
scancel "$jh"
check "holds as the key: sbatch --hold, owner's release/hold, root's plain release/hold on $jh (the job stays held throughout)"

# 3. root (the adapter) releases it: it runs
t1=$SECONDS
scontrol release "$j1" || fail "root's scontrol release $j1"
slurm_wait_job "$j1" RUNNING 20 || fail "job $j1 not RUNNING after root's release"
check "scontrol release $j1 by root: RUNNING on $(slurm_job_field "$j1" NodeList) after $((SECONDS - t1))s"

# 4. root's own jobs are held too
j2=$(sbatch --parsable --job-name=gate-root --gres=gpu:a100:1 -o /dev/null --wrap 'sleep 300') || fail "sbatch as root"
j2=${j2%%;*}
held_for_tidal "$j2" || fail "root's job $j2 is not held"
check "job $j2 by root is held too (Reason=$(slurm_job_field "$j2" Reason))"

# 5. pin + release (how the adapter places a job): ReqNodeList=gpu02, then release -> runs on gpu02
scontrol update JobId="$j2" ReqNodeList=gpu02 || fail "ReqNodeList update of $j2"
held_for_tidal "$j2" || fail "job $j2 not held after the pin"
[ "$(slurm_job_field "$j2" ReqNodeList)" = gpu02 ] || fail "job $j2 ReqNodeList is '$(slurm_job_field "$j2" ReqNodeList)'"
scontrol release "$j2" || fail "root's release of $j2"
slurm_wait_job "$j2" RUNNING 20 || fail "pinned job $j2 not RUNNING"
[ "$(slurm_job_field "$j2" NodeList)" = gpu02 ] || fail "pinned job $j2 runs on '$(slurm_job_field "$j2" NodeList)', not gpu02"
check "job $j2 pinned with ReqNodeList=gpu02 and released: RUNNING on gpu02"

# 5b. a job Tidal released but Slurm has not started (pinned to gpu02, whose 4 GPUs j2 still
#     shares) keeps its shape: its owner's change of node count, nodes or GRES is refused (Slurm
#     would start a job Tidal did not place); a comment goes through; held first, it may change
j4=$(slurm_submit_as "$USER_" --job-name=gate-released --gres=gpu:a100:4 -o /dev/null --wrap 'sleep 300') || fail "sbatch as $USER_"
scontrol update JobId="$j4" ReqNodeList=gpu02 AdminComment="tidal: released to gpu02" || fail "pin of $j4"
scontrol release "$j4" || fail "root's release of $j4"
sleep 1
[ "$(slurm_job_field "$j4" JobState)" = PENDING ] && [ "$(slurm_job_field "$j4" Priority)" != 0 ] ||
  fail "released job $j4 is $(slurm_job_field "$j4" JobState) at priority $(slurm_job_field "$j4" Priority), want PENDING above 0"
for change in NumNodes=2 ReqNodeList=gpu01 Gres=gpu:a100:3 ExcNodeList=gpu02 Partition=nonexistent; do
  if slurm_as "$USER_" scontrol update JobId="$j4" "$change" 2>/dev/null; then fail "$USER_ could change $change of released job $j4"; fi
done
[ "$(slurm_job_field "$j4" ReqNodeList)" = gpu02 ] && [ "$(slurm_job_field "$j4" NumNodes)" = 1 ] ||
  fail "released job $j4 changed: ReqNodeList=$(slurm_job_field "$j4" ReqNodeList) NumNodes=$(slurm_job_field "$j4" NumNodes)"
grep -q "tidal gate: refused a change of min_nodes of job $j4" "$BASE/log/slurmctld.log" || fail "no refusal naming min_nodes in slurmctld.log"
slurm_as "$USER_" scontrol update JobId="$j4" Comment="still mine" || fail "$USER_'s comment on released job $j4 refused"
slurm_as "$USER_" scontrol hold "$j4" || fail "$USER_'s hold of released job $j4 refused"
held_for_tidal "$j4" || fail "job $j4 not held after its owner's hold"
slurm_as "$USER_" scontrol update JobId="$j4" Gres=gpu:a100:2 || fail "$USER_ could not change its held job $j4"
scancel "$j4"
check "released job $j4: its owner's NumNodes/ReqNodeList/Gres/ExcNodeList/Partition changes refused, a Comment taken; held, it changes"

# 6. the owner may still cancel their own held job (the gate touches nothing else)
j3=$(slurm_submit_as "$USER_" --job-name=gate-cancel -o /dev/null --wrap 'sleep 300') || fail "sbatch as $USER_"
held_for_tidal "$j3" || fail "job $j3 not held"
slurm_as "$USER_" scancel "$j3" || fail "$USER_ could not scancel $j3"
slurm_wait_job "$j3" CANCELLED 20 || fail "job $j3 not CANCELLED"
check "$USER_ can scancel its held job $j3"

# 7. jobcomp/filetxt records finished jobs (what closes accounting gaps)
scancel "$j1" "$j2"
for j in "$j1" "$j2"; do slurm_wait_job "$j" CANCELLED 20 || fail "job $j not cancelled"; done
for _ in $(seq 50); do
  [ "$(grep -cE "^JobId=($j1|$j2|$j3) " "$BASE/log/jobcomp.txt" 2>/dev/null)" = 3 ] && break; sleep 0.1
done
[ "$(grep -cE "^JobId=($j1|$j2|$j3) " "$BASE/log/jobcomp.txt" 2>/dev/null)" = 3 ] || fail "jobcomp.txt lacks jobs $j1 $j2 $j3"
check "jobcomp.txt has a line for each finished job ($j1 $j2 $j3)"

ok=1
echo "PASS: slurm gate ($((SECONDS - t0))s)"
