#!/usr/bin/env bash
# Starts Tidal on a cluster made by cluster-up.sh: build/bin/tidal-engine (gRPC on a unix socket in
# BASE/run, HTTP on 127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT) and build/bin/tidal-scheduler (profiles
# default-scheduler + tidal-scheduler, see config/scheduler-config.yaml), and waits until both are
# ready (engine /healthz, scheduler /readyz, and the engine's /readyz reporting synced: true).
# Both are registered in BASE/run, so cluster-down.sh stops them.
#
# Usage: tidal-up.sh BASE [engine|scheduler|all]   (default all; "engine" alone restarts the engine)
# Env:   TIDAL_E2E_ENGINE_CONFIG (default test/e2e/config/engine.yaml),
#        TIDAL_E2E_ENGINE_STATE_FILE (the engine's --state-file: ledger usage and the nodes each door
#        reported, kept across its restarts; default none),
#        TIDAL_E2E_SCHED_CONFIG  (default test/e2e/config/scheduler-config.yaml; @KUBECONFIG@, @ENGINE@ filled in),
#        TIDAL_E2E_SCHED_V (scheduler --v, default 2), TIDAL_E2E_SCHED_ARGS (extra scheduler flags, e.g.
#        --feature-gates=...), plus lib/common.sh's.
# Leaves: BASE/run/engine.sock, BASE/engine.yaml, BASE/scheduler-config.yaml, BASE/log/tidal-{engine,scheduler}.log
set -euo pipefail
# shellcheck source=test/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

BASE=${1:?usage: tidal-up.sh BASE [engine|scheduler|all]}
WHAT=${2:-all}
BASE=$(cd "$BASE" && pwd)
ENGINE_BIN=$TIDAL_E2E_BIN/tidal-engine
SCHED_BIN=$TIDAL_E2E_BIN/tidal-scheduler
ENGINE_ADDR=unix://$BASE/run/engine.sock
ENGINE_HTTP=http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT
: "${TIDAL_E2E_ENGINE_CONFIG:=$E2E_ROOT/test/e2e/config/engine.yaml}"
: "${TIDAL_E2E_SCHED_CONFIG:=$E2E_ROOT/test/e2e/config/scheduler-config.yaml}"

start_engine() {
  [ -x "$ENGINE_BIN" ] || e2e_die "$ENGINE_BIN missing: run make build"
  e2e_alive "$BASE" tidal-engine && e2e_die "tidal-engine already runs (BASE/run/tidal-engine.pid)"
  e2e_port_free "$TIDAL_E2E_ENGINE_HTTP_PORT" || e2e_die "port 127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT is in use (set TIDAL_E2E_ENGINE_HTTP_PORT)"
  cp "$TIDAL_E2E_ENGINE_CONFIG" "$BASE/engine.yaml"
  local t0; t0=$(e2e_now_ms)
  # The engine log is appended to across restarts (kill -9 tests keep the history).
  [ -f "$BASE/log/tidal-engine.log" ] && mv -f "$BASE/log/tidal-engine.log" "$BASE/log/tidal-engine.$(date +%s%N).log"
  local state=()
  [ -z "${TIDAL_E2E_ENGINE_STATE_FILE:-}" ] || state=(--state-file="$TIDAL_E2E_ENGINE_STATE_FILE")
  e2e_start "$BASE" tidal-engine "$ENGINE_BIN" --listen="$ENGINE_ADDR" \
    --http-addr="127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT" --config="$BASE/engine.yaml" "${state[@]}"
  e2e_wait "$BASE" tidal-engine "tidal-engine /healthz" curl -sf "$ENGINE_HTTP/healthz"
  e2e_log "tidal-engine ready after $(($(e2e_now_ms) - t0))ms ($ENGINE_ADDR, $ENGINE_HTTP)"
}

start_scheduler() {
  [ -x "$SCHED_BIN" ] || e2e_die "$SCHED_BIN missing: run hack/build-shim.sh"
  e2e_alive "$BASE" tidal-scheduler && e2e_die "tidal-scheduler already runs"
  e2e_port_free "$TIDAL_E2E_SCHED_PORT" || e2e_die "port 127.0.0.1:$TIDAL_E2E_SCHED_PORT is in use (set TIDAL_E2E_SCHED_PORT)"
  sed -e "s|@KUBECONFIG@|$BASE/kubeconfig|" -e "s|@ENGINE@|$ENGINE_ADDR|" "$TIDAL_E2E_SCHED_CONFIG" >"$BASE/scheduler-config.yaml"
  local t0; t0=$(e2e_now_ms)
  e2e_start "$BASE" tidal-scheduler "$SCHED_BIN" --config="$BASE/scheduler-config.yaml" \
    --authentication-kubeconfig="$BASE/kubeconfig" --authorization-kubeconfig="$BASE/kubeconfig" \
    --authentication-skip-lookup \
    --bind-address=127.0.0.1 --secure-port="$TIDAL_E2E_SCHED_PORT" --v="${TIDAL_E2E_SCHED_V:-2}" ${TIDAL_E2E_SCHED_ARGS:-}
  e2e_wait "$BASE" tidal-scheduler "tidal-scheduler /readyz" curl -skf "https://127.0.0.1:$TIDAL_E2E_SCHED_PORT/readyz"
  e2e_log "tidal-scheduler ready after $(($(e2e_now_ms) - t0))ms"
}

engine_synced() { curl -sf "$ENGINE_HTTP/readyz" | grep -q '^synced: true'; }

case $WHAT in
  engine) start_engine ;;
  scheduler) start_scheduler ;;
  all) start_engine; start_scheduler ;;
  *) e2e_die "tidal-up.sh: unknown component $WHAT (engine|scheduler|all)" ;;
esac
if e2e_alive "$BASE" tidal-scheduler; then
  t0=$(e2e_now_ms)
  e2e_wait "$BASE" tidal-engine "tidal-engine synced from tidal-scheduler" engine_synced
  e2e_log "engine synced by the scheduler's Sync stream after $(($(e2e_now_ms) - t0))ms: $(curl -sf "$ENGINE_HTTP/readyz" | tr '\n' ' ')"
fi
