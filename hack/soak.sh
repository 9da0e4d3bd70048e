#!/usr/bin/env bash
# `make soak` (a benchmark, not in CI; the short version is the e2e case soak): a warm-standby pair
# of Tidal replicas (test/e2e/lib/ha.sh) on SOAK_NODES KWOK nodes under steady arrivals and
# completions of gangs for SOAK_DURATION seconds, with random kill -9 of the leader's or the
# standby's tidal-engine or tidal-scheduler and one kube-apiserver restart (test/e2e/lib/soak.sh
# says exactly what runs and what is checked). Exit status 1 when an invariant broke (a partial
# gang, a pod bound twice, an over-committed node, a lost pod); the summary (resync time after
# each engine kill, failover after each leader kill, engine RSS first/last/slope) is printed and
# written to SOAK_OUT. tidal-slurm is not part of it (see docs/benchmarks-resilience.md, "Soak and chaos").
#
# Usage: hack/soak.sh   Env: SOAK_DURATION (600 s), SOAK_NODES (1024; rounded up to whole blocks of
#        256 = 4 leaves x 8 NVLink domains x 8 nodes), SOAK_KILL_MEAN_S (20), SOAK_GAP_S (0.5),
#        SOAK_SEED, SOAK_APISERVER_RESTART (1), SOAK_OUT (build/bench/soak.txt), TIDAL_SOAK_BASE
#        (keep the scratch dir and its logs there), plus test/e2e/lib/common.sh's and ha.sh's.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/e2e/lib/common.sh
source "$ROOT/test/e2e/lib/common.sh"
# shellcheck source=test/e2e/lib/pods.sh
source "$ROOT/test/e2e/lib/pods.sh"
# shellcheck source=test/e2e/lib/ha.sh
source "$ROOT/test/e2e/lib/ha.sh"
# shellcheck source=test/e2e/lib/soak.sh
source "$ROOT/test/e2e/lib/soak.sh"

DUR=${SOAK_DURATION:-600}
NODES=${SOAK_NODES:-1024}
OUT=${SOAK_OUT:-$ROOT/build/bench/soak.txt}
[[ "$DUR" =~ ^[0-9]+$ ]] && [ "$DUR" -ge 10 ] || e2e_die "SOAK_DURATION: seconds, at least 10 (got '$DUR')"
[[ "$NODES" =~ ^[0-9]+$ ]] && [ "$NODES" -ge 1 ] || e2e_die "SOAK_NODES: a node count (got '$NODES')"
BLOCKS=$(( (NODES + 255) / 256 ))
export TIDAL_E2E_TIMEOUT=${TIDAL_E2E_TIMEOUT:-120}
if [ -n "${TIDAL_SOAK_BASE:-}" ]; then BASE=$TIDAL_SOAK_BASE; mkdir -p "$BASE"; else BASE=$(mktemp -d /tmp/tidal-soak.XXXXXX); fi
BASE=$(cd "$BASE" && pwd)
finish() {
  local rc=$?
  trap - EXIT INT TERM
  soak_stop_background
  "$E2E_LIB/cluster-down.sh" "$BASE" >/dev/null 2>&1 || true
  [ -n "${TIDAL_SOAK_BASE:-}" ] || rm -rf "${BASE:?}"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

"$E2E_LIB/cluster-up.sh" "$BASE"
"$E2E_LIB/make-nodes.sh" "$BASE" "$BLOCKS" 4 8 8
e2e_kubectl "$BASE" create namespace soak >/dev/null
e2e_log "soak: $((BLOCKS * 256)) nodes, ${DUR} s, a kill every ~${SOAK_KILL_MEAN_S:-20} s"
rc=0 why=""
soak_run "$BASE" soak "$DUR" "$BASE/soak" || { e2e_log "soak: the chaos loop stopped early (a process did not come back)"; rc=1; why="the chaos loop stopped early; "; }
soak_report "$BASE" soak "$BASE/soak" || { rc=1; why+="AN INVARIANT BROKE"; }
mkdir -p "$(dirname "$OUT")"
{ echo "# hack/soak.sh $(date -u +%FT%TZ) SOAK_DURATION=$DUR SOAK_NODES=$NODES SOAK_KILL_MEAN_S=${SOAK_KILL_MEAN_S:-20}"
  cat "$BASE/soak/summary"; echo "# kills (kind replica role t_kill t_back t_synced, ms)"; cat "$BASE/soak/chaos"; } >"$OUT"
e2e_log "soak: wrote $OUT; ${why:-every invariant held, every kill recovered}"
exit "$rc"
