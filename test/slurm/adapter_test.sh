#!/usr/bin/env bash
# tidal-slurm end to end on a REAL Slurm 22.05 (test/slurm/lib.sh: munged, slurmctld and 8 slurmd on
# loopback, the submit gate installed) with a real tidal-engine: the gate, topology, quota, GPUs
# never double-booked under load, and convergence after an adapter kill -9, an engine restart and a
# slurmctld restart, the door lease against a second adapter, bad input, and the disruption path
# (a drain: notice with the job's --signal, checkpoint report, requeue, run again), and jobs Slurm
# holds back once released (an array's %K, --begin, a requeue) or spreads unevenly (--gpus=N), and
# holds by a job's owner or an admin (sbatch --hold, scontrol hold/release, the tidal.dev/hold key),
# --exclusive jobs and partition limits (MaxTime, State=DOWN). Cases live in
# test/slurm/cases/adapter_*.sh; helpers in cases/adapter_common.sh. Exit 77 (skipped) without
# Slurm, without root, or without the binaries (BUILD_DIR/bin/tidal-engine and tidal-slurm; the
# disruption case also needs tidalctl; usage: adapter_test.sh [BUILD_DIR], default build/).
#
# Cluster: gpu01..gpu08, 4 fake a100 each; block b0; leaf l0 = gpu01-04, leaf l1 = gpu05-08 (node
# features tidal-block-b0, tidal-leaf-lN). Engine queues: team-a (nominal 32 GPUs), capped (nominal
# 16, borrowingLimit 0). Ports: slurmctld 16877, slurmd 17601-17608, engine 18851 (gRPC) / 18852
# (HTTP), adapter metrics 18853, second adapter 18854 (TIDAL_SLURM_ADAPTER_* env overrides).
# Every port is below Linux's ephemeral range (32768-60999), where any outgoing connection may
# hold one: the engine once failed to listen on 50852, the old default, for that reason.
# TIDAL_SLURM_KEEP=1 keeps BASE (logs) after a passing run; a failing run always keeps it.
# TIDAL_SLURM_CASES="gate door ..." runs a subset (setup is always done).
# TIDAL_SLURM_ADAPTER_BATCH_RUNTIME (10s): the engine's backfill.defaultRuntime.batch; 1h (the
# engine's default) shows reservations that never move earlier (the load cases then time out).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
for c in slurmctld slurmd munged mungekey sbatch scontrol squeue curl; do
  command -v "$c" >/dev/null || { echo "SKIP: $c not installed (apt-get install slurm-wlm munge curl)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (starts slurmctld/slurmd, creates user tidaltest)"; exit 77; }
BIN=${1:-$REPO/build}/bin   # adapter_test.sh [BUILD_DIR]: ctest passes its build directory
for b in tidal-engine tidal-slurm; do
  [ -x "$BIN/$b" ] || { echo "SKIP: $BIN/$b not built"; exit 77; }
done
# shellcheck source=lib.sh
source "$HERE/lib.sh"
# shellcheck source=cases/adapter_common.sh
source "$HERE/cases/adapter_common.sh"
for f in basic placement faults disruption elastic waiting hold; do
  # shellcheck disable=SC1090
  source "$HERE/cases/adapter_$f.sh"
done

TMP=${TMPDIR:-/tmp}
runuser -u nobody -- test -x "$TMP" 2>/dev/null || TMP=/tmp   # tidaltest must reach BASE
BASE=$TMP/tidal-slurm-adapter
RUN=$BASE/tidal
RUNLOG=$BASE/jobs/runs.log
ENGINE_PORT=${TIDAL_SLURM_ADAPTER_ENGINE_PORT:-18851} ENGINE_HTTP=${TIDAL_SLURM_ADAPTER_ENGINE_HTTP:-18852}
AD_METRICS=${TIDAL_SLURM_ADAPTER_METRICS:-18853} AD2_METRICS=${TIDAL_SLURM_ADAPTER_METRICS2:-18854}
export SLURM_CTLD_PORT=${TIDAL_SLURM_ADAPTER_CTLD_PORT:-16877} SLURM_NODE_PORT0=${TIDAL_SLURM_ADAPTER_NODE_PORT0:-17601}
unset SLURM_NODE_NAMES SLURM_TOPOLOGY_CONF SLURM_GATE SLURM_WITH_RESTD
# sbatch --signal reaches the adapter through the job's comment (deploy/slurm/cli_filter.lua)
export SLURM_CLI_FILTER="$REPO/deploy/slurm/cli_filter.lua"
# libslurm retries a refused connection for about MessageTimeout seconds (default 10) before a
# read fails: shorter, so the slurmctld-down case sees its read error sooner
export SLURM_EXTRA_CONF="MessageTimeout=4"
SLURM_NODE_FEATURES=$(for i in 1 2 3 4; do echo "gpu0$i=tidal-block-b0,tidal-leaf-l0"; done
                      for i in 5 6 7 8; do echo "gpu0$i=tidal-block-b0,tidal-leaf-l1"; done)
export SLURM_NODE_FEATURES
USER_=tidaltest
CASES=${TIDAL_SLURM_CASES:-gate door badinput topology quota partitions disruption elastic waiting hold load adapter_kill engine_restart ctld_restart}
ok=0

for p in "$ENGINE_PORT" "$ENGINE_HTTP" "$AD_METRICS" "$AD2_METRICS"; do
  _slurm_port_busy "$p" && { echo "FAIL: port $p is in use (set TIDAL_SLURM_ADAPTER_* ports)"; exit 1; }
done

cleanup() {
  local rc=$?
  _stop adapter2 KILL; _stop adapter; _stop engine
  slurm_down "$BASE" || true
  if [ "$ok" = 1 ] && [ "${TIDAL_SLURM_KEEP:-0}" != 1 ]; then rm -rf "$BASE"; else echo "logs kept in $BASE/log and $RUN"; fi
  exit $rc
}
trap cleanup EXIT

t0=$SECONDS
slurm_up "$BASE" 8 4 || fail "slurm_up"
slurm_ensure_user "$USER_" || fail "cannot create user $USER_"
mkdir -p "$RUN"
touch "$RUNLOG"; chmod 666 "$RUNLOG"
cat >"$RUN/engine.yaml" <<EOF
# topology levels: the defaults (block, leaf, nvlink; labels topology.tidal.dev/<level>)
planTtlSeconds: 60
profile:
  name: default
  plugins: [fairshare, quota, gang, {name: topology, weight: 1}]
  # Jobs here declare no --time: backfill expects a batch job to run defaultRuntime. With the 1h
  # default, reservations made while the cluster is busy never move earlier when work ends early
  # (each kept reservation blocks the others' moves): the cluster idles until the first reserved
  # start. 10s bounds that stall for the 2-4 s jobs of the load cases.
  backfill: {defaultRuntime: {batch: ${TIDAL_SLURM_ADAPTER_BATCH_RUNTIME:-10s}}}
queues:
  - name: team-a
    nominal: {gpus: 32}
  - name: capped
    nominal: {gpus: 16}
    borrowingLimit: {gpus: 0}   # no borrowing: 16 GPUs at most, however idle the cluster
EOF
cat >"$RUN/adapter.yaml" <<'EOF'
pollIntervalMs: 200
EOF
engine_start
check "slurm (8 nodes x 4 a100, 2 leaves, gate) and tidal-engine up in $((SECONDS - t0))s"

declare -A took=()
for c in $CASES; do
  declare -F "case_$c" >/dev/null || fail "no case '$c'"
  echo "=== $c"
  s=$SECONDS
  "case_$c"
  took[$c]=$((SECONDS - s))
done
ok=1
echo "--- timings (s):$(for c in $CASES; do printf ' %s=%s' "$c" "${took[$c]}"; done)"
echo "PASS: tidal-slurm adapter on real Slurm ($((SECONDS - t0))s)"
