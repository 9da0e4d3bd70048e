#!/usr/bin/env bash
# LibslurmApi against a real Slurm 22.05 (test/slurm/lib.sh: munged, slurmctld, 2 slurmd x 4 fake
# GPUs, Tidal's job_submit gate), through the slurm_api_live tool:
#   1. a held GPU job reads as pending, priority 0, its gpus_per_node / model / node_count
#   2. Release with a node pins it there and slurmctld starts it there (polled)
#   3. Release / Hold of a running job fail ("no longer pending") and leave it running
#   4. Hold of a pending job: priority 0 and its pin cleared
#   5. Drain sets "tidal: ..."; Undrain clears it; an admin's drain is left alone
#   6. Requeue of a running batch job: pending, held, restart_cnt 1; HoldRequeued clears the 120 s
#      BeginTime Slurm gives a requeued job
#   9. Signal: batch only reaches the batch shell's trap; to the steps, not the batch shell (a shell
#      that does not trap SIGUSR1 keeps running); a finished job is an error
#   7. an unchanged state is answered SLURM_NO_CHANGE_IN_DATA (cheap reads)
#   8. slurmctld stopped: Load fails with an error and prints no records
# Usage: api_live_test.sh PATH/TO/slurm_api_live. Exit 77 (skipped) without Slurm's daemons.
# Ports: SLURM_CTLD_PORT (default 16947) and SLURM_NODE_PORT0 (default 17161), away from the
# defaults other tests use. Threading: one shell, one cluster, stopped on exit.
set -uo pipefail
BIN=${1:?usage: api_live_test.sh SLURM_API_LIVE}
for d in slurmctld slurmd munged sbatch scontrol python3; do
  command -v "$d" >/dev/null || { echo "SKIP: $d not installed"; exit 77; }
done
[ -x "$BIN" ] || { echo "FAIL: $BIN is not executable"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")   # we cd below
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test/slurm/lib.sh
source "$HERE/lib.sh"
export SLURM_CTLD_PORT=${SLURM_CTLD_PORT:-16947} SLURM_NODE_PORT0=${SLURM_NODE_PORT0:-17161}
BASE=$(mktemp -d /tmp/tidal-slurm-api-live.XXXXXX)
chmod 755 "$BASE"
trap 'slurm_down "$BASE" >/dev/null 2>&1; rm -rf "$BASE"' EXIT

fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

# rec FILE KIND ID KEY: one field of one record of a `slurm_api_live load` dump ("" if unset).
rec() {
  python3 - "$@" <<'EOF'
import json, sys
path, kind, ident, key = sys.argv[1:5]
try:
    doc = json.load(open(path))
except Exception as e:
    print("<unreadable %s: %s>" % (path, e))
    sys.exit(0)
defaults = {"nice": 0, "priority": 0, "restart_cnt": 0, "drain": False, "gpus_used": 0, "node_count": 1, "reason": "",
            "nodes": [], "required_nodes": [], "gpus_per_node": 0, "gpu_model": ""}
for r in doc[kind]:
    if r.get("id", r.get("name")) == ident:
        v = r.get(key, defaults.get(key, ""))
        print(json.dumps(v) if isinstance(v, (list, bool)) else v)
        sys.exit(0)
print("<no record>")
EOF
}
load() { "$BIN" load >"$OUT/$1.json" 2>"$OUT/$1.err"; }
wait_state() {  # JOB STATE: poll up to 20 s
  local i s
  for i in $(seq 100); do
    s=$(slurm_job_field "$1" JobState 2>/dev/null)
    [ "$s" = "$2" ] && return 0
    sleep 0.2
  done
  echo "  job $1 is $s, not $2"; return 1
}

slurm_up "$BASE" 2 4 || { echo "FAIL: slurm_up"; exit 1; }
OUT=$BASE/out; mkdir -p "$OUT"   # after slurm_up: it wipes BASE
cd "$BASE/jobs" || exit 1

# 1. a held GPU job, as the gate leaves it
JOB=$(sbatch --parsable -J live-gpu --gres=gpu:a100:2 -N1 -t 10 --nice=7 --wrap 'sleep 300')
JOB2=$(sbatch --parsable -J live-untyped --gpus-per-node=1 -t 10 --wrap 'sleep 300')
check "load works" load l1
check "held job pending" test "$(rec "$OUT/l1.json" jobs "$JOB" state)" = pending
check "held job priority 0" test "$(rec "$OUT/l1.json" jobs "$JOB" priority)" = 0
check "held job gpus_per_node 2" test "$(rec "$OUT/l1.json" jobs "$JOB" gpus_per_node)" = 2
check "held job gpu_model a100" test "$(rec "$OUT/l1.json" jobs "$JOB" gpu_model)" = a100
check "held job node_count 1" test "$(rec "$OUT/l1.json" jobs "$JOB" node_count)" = 1
check "held job nice 7" test "$(rec "$OUT/l1.json" jobs "$JOB" nice)" = 7
check "untyped job any model" test "$(rec "$OUT/l1.json" jobs "$JOB2" gpu_model)" = ""
check "node gpus 4" test "$(rec "$OUT/l1.json" nodes gpu02 gpus)" = 4

# 2. Release with a pin
check "release $JOB on gpu02" "$BIN" release "$JOB" gpu02 "tidal: placed on gpu02"
check "job starts" wait_state "$JOB" RUNNING
check "on gpu02" test "$(slurm_job_field "$JOB" NodeList)" = gpu02
check "admin comment set" test "$(slurm_job_field "$JOB" AdminComment)" = "tidal: placed on gpu02"
load l2
check "read as running on gpu02" test "$(rec "$OUT/l2.json" jobs "$JOB" nodes)" = '["gpu02"]'
check "node gpus_used 2" test "$(rec "$OUT/l2.json" nodes gpu02 gpus_used)" = 2

# 3. writes meant for pending jobs refuse a running one (req_nodes would shrink it)
check "release of a running job fails" bash -c "! '$BIN' release $JOB gpu01 x 2>'$OUT/rel.err'"
check "  ... saying why" grep -q "no longer pending" "$OUT/rel.err"
check "hold of a running job fails" bash -c "! '$BIN' hold $JOB x 2>/dev/null"
check "  ... and it still runs on gpu02" test "$(slurm_job_field "$JOB" NodeList)/$(slurm_job_field "$JOB" JobState)" = gpu02/RUNNING

# 4. Hold of a pending, pinned job
scontrol update JobId="$JOB2" ReqNodeList=gpu01   # a pin on a held job, as a Release leaves one
check "  pinned" test "$(slurm_job_field "$JOB2" ReqNodeList)" = gpu01
check "hold $JOB2" "$BIN" hold "$JOB2" "tidal: not now"
check "  priority 0" test "$(slurm_job_field "$JOB2" Priority)" = 0
check "  pin cleared" test "$(slurm_job_field "$JOB2" ReqNodeList)" = "(null)"
check "  admin comment" test "$(slurm_job_field "$JOB2" AdminComment)" = "tidal: not now"
check "set comment" "$BIN" comment "$JOB2" "tidal: queued behind 3 jobs"
check "  admin comment" test "$(slurm_job_field "$JOB2" AdminComment)" = "tidal: queued behind 3 jobs"

# 5. Drain / Undrain
check "drain gpu01" "$BIN" drain gpu01 "kubernetes owns it"
check "  reason tidal: ..." bash -c "scontrol show node gpu01 | grep -q 'Reason=tidal: kubernetes owns it'"
load l3
check "  read as drained" test "$(rec "$OUT/l3.json" nodes gpu01 drain)" = true
check "  reason read" test "$(rec "$OUT/l3.json" nodes gpu01 reason)" = "tidal: kubernetes owns it"
check "undrain gpu01" "$BIN" undrain gpu01
load l4
check "  read as not drained" test "$(rec "$OUT/l4.json" nodes gpu01 drain)" = false
check "  reason cleared" test "$(rec "$OUT/l4.json" nodes gpu01 reason)" = ""
scontrol update NodeName=gpu01 State=DRAIN Reason="admin: bad fan"
check "undrain of an admin's drain fails" bash -c "! '$BIN' undrain gpu01 2>/dev/null"
check "drain over an admin's drain keeps theirs" "$BIN" drain gpu01 "mine"
check "  still the admin's reason" bash -c "scontrol show node gpu01 | grep -q 'Reason=admin: bad fan'"
scontrol update NodeName=gpu01 State=RESUME

# 6. Requeue (preemption): requeue-held
check "requeue $JOB" "$BIN" requeue "$JOB"
check "  pending again" wait_state "$JOB" PENDING
load l5
check "  held" test "$(rec "$OUT/l5.json" jobs "$JOB" priority)" = 0
check "  restart_cnt 1" test "$(rec "$OUT/l5.json" jobs "$JOB" restart_cnt)" = 1
eligible() { date -d "$(slurm_job_field "$1" EligibleTime)" +%s 2>/dev/null || echo 0; }
check "  Slurm delays its start (BeginTime ~120 s ahead)" test "$(eligible "$JOB")" -gt $(($(date +%s) + 60))
check "hold_requeued $JOB" "$BIN" hold_requeued "$JOB" "tidal: requeued"
check "  BeginTime now" test "$(eligible "$JOB")" -le $(($(date +%s) + 2))
check "  still held" test "$(slurm_job_field "$JOB" Priority)" = 0
check "  admin comment" test "$(slurm_job_field "$JOB" AdminComment)" = "tidal: requeued"

# 7. cheap reads of an unchanged state. The requeued run ends asynchronously (its nodes go from
# completing to idle over a few seconds): wait for the nodes to settle first, and allow three
# tries, since slurmctld may still touch a record between two reads (this was flaky in Dec 2026:
# one read in five saw a node or job change).
slurm_wait_nodes_idle 20 || true
cheap() {
  local try
  for try in 1 2 3; do
    sleep 1.1   # slurmctld compares at one-second granularity
    "$BIN" bench 5 >"$OUT/bench.json" 2>&1
    echo "     bench: $(cat "$OUT/bench.json")"
    python3 -c "import json; b=json.load(open('$OUT/bench.json')); assert b['jobs_unchanged'] >= 3 and b['nodes_unchanged'] >= 3, b" && return 0
  done
  return 1
}
check "unchanged answered cheaply" cheap

# 9. Signal
cat >"$BASE/jobs/trap.sh" <<EOF
#!/bin/bash
trap 'echo usr1 >>$BASE/jobs/trap.\$SLURM_JOB_ID' USR1
for i in \$(seq 1500); do sleep 0.2; done
EOF
cat >"$BASE/jobs/notrap.sh" <<'EOF'
#!/bin/bash
for i in $(seq 1500); do sleep 0.2; done
EOF
chmod 755 "$BASE/jobs/trap.sh" "$BASE/jobs/notrap.sh"
TJ=$(sbatch --parsable -o /dev/null "$BASE/jobs/trap.sh") NJ=$(sbatch --parsable -o /dev/null "$BASE/jobs/notrap.sh")
"$BIN" release "$TJ" gpu01 "tidal: released to gpu01" && "$BIN" release "$NJ" gpu01 "tidal: released to gpu01"
check "a job that traps SIGUSR1 starts" wait_state "$TJ" RUNNING
check "a job that does not starts" wait_state "$NJ" RUNNING
sleep 2   # their shells are past `trap`
check "signal $TJ USR1 to its batch shell" "$BIN" signal "$TJ" 10 batch
check "  its trap got it" bash -c "for i in \$(seq 25); do [ -s '$BASE/jobs/trap.$TJ' ] && exit 0; sleep 0.2; done; exit 1"
check "signal $NJ USR1 to its steps" "$BIN" signal "$NJ" 10 steps
sleep 1
check "  its batch shell (no trap) keeps running" test "$(slurm_job_field "$NJ" JobState)" = RUNNING
check "  the trapped job too" test "$(slurm_job_field "$TJ" JobState)" = RUNNING
scancel "$TJ" "$NJ"
check "  cancelled" wait_state "$NJ" CANCELLED
check "signal of a finished job fails" bash -c "! '$BIN' signal $NJ 10 batch 2>/dev/null"

# 8. slurmctld down: an error, never empty records
_slurm_stop_pid "$(cat "$BASE/run/slurmctld.bgpid")" slurmctld
rm -f "$BASE/run/slurmctld.bgpid"
t0=$SECONDS
"$BIN" load >"$OUT/down.json" 2>"$OUT/down.err"; rc=$?
echo "     failed read took $((SECONDS - t0)) s: $(cat "$OUT/down.err")"
check "load fails with slurmctld down" test "$rc" = 1
check "  with slurm_load_jobs' error" grep -q "slurm_load_jobs" "$OUT/down.err"
check "  and prints no records" test ! -s "$OUT/down.json"

[ "$fails" = 0 ] && { echo "PASS"; exit 0; }
echo "$fails check(s) failed; logs in $BASE/log (kept: set KEEP=1)"
[ "${KEEP:-0}" = 1 ] && trap - EXIT
exit 1
