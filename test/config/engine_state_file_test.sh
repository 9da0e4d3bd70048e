#!/usr/bin/env bash
# tidal-engine --state-file in a directory it cannot write is refused at start (exit 1, naming the
# flag and the path), before it binds any address; before, the engine started and only warned at
# each save (the first 30 s later) while the usage history and drains were never kept. A writable
# one starts: the engine serves, and writes the file at shutdown.
#   engine_state_file_test.sh BUILD_DIR
set -euo pipefail
BUILD=${1:?usage: engine_state_file_test.sh BUILD_DIR}
WORK=$(mktemp -d)
GRPC_PORT=${TIDAL_STATE_TEST_GRPC_PORT:-29293}
HTTP_PORT=${TIDAL_STATE_TEST_HTTP_PORT:-29294}
pid=""
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ENGINE=("$BUILD/bin/tidal-engine" --listen "127.0.0.1:$GRPC_PORT" --http-addr "127.0.0.1:$HTTP_PORT" --decision-log none)

set +e
timeout 10 "${ENGINE[@]}" --state-file "$WORK/missing/ledger.json" >"$WORK/out" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || fail "a state file in a missing directory: exit $rc: $(cat "$WORK/out")"
grep -q -- "--state-file: cannot write $WORK/missing/ledger.json.tmp" "$WORK/out" || fail "no --state-file error: $(cat "$WORK/out")"
grep -q "serving gRPC" "$WORK/out" && fail "it served before refusing: $(cat "$WORK/out")"

"${ENGINE[@]}" --state-file "$WORK/ledger.json" >"$WORK/engine.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$HTTP_PORT/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$HTTP_PORT/healthz" >/dev/null || fail "a writable state file: the engine did not start: $(cat "$WORK/engine.log")"
ls "$WORK" | grep -q "ledger.json.tmp" && fail "the start's probe file was left behind: $(ls "$WORK")"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
[ -s "$WORK/ledger.json" ] || fail "no state file written at shutdown: $(cat "$WORK/engine.log")"
echo PASS
