#!/usr/bin/env bash
# tidalctl against a REAL tidal-engine started without --config (loopback), the admin
# exploration's regressions:
#  - config diff against the built-in defaults (version "builtin"): a file with no field set is the
#    same config (exit 0; before: "differs ... 0 field(s)", exit 1); a field set is drift, by document;
#  - drain and waves given the HTTP URL say they talk to the gRPC API (before: "not a loopback
#    address"), and the plaintext flag is spelled "--insecure true" (before: "--insecure: true");
#  - the HTTP client says what happened: connection refused, not an HTTP server (the gRPC port),
#    an unsupported scheme (before: "Connection", "Read", and ftp:// became http://ftp://);
#  - drain --cancel of a node with no drain says not-drained (exit 0), of an unknown node
#    unknown-node (exit 1); before: silence and exit 0 for both.
#   tidalctl_engine_errors_test.sh BUILD_DIR
set -euo pipefail
BUILD=${1:?usage: tidalctl_engine_errors_test.sh BUILD_DIR}
WORK=$(mktemp -d)
GRPC_PORT=${TIDAL_CTL_ERRORS_GRPC_PORT:-18561}
HTTP_PORT=${TIDAL_CTL_ERRORS_HTTP_PORT:-18562}
CLOSED_PORT=${TIDAL_CTL_ERRORS_CLOSED_PORT:-18563}
ENGINE=http://127.0.0.1:$HTTP_PORT
CTL=$BUILD/bin/tidalctl
pid=""
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- engine log"; tail -20 "$WORK/engine.log" || true; exit 1; }
run() { set +e; "$CTL" "$@" >"$WORK/out" 2>&1; RC=$?; set -e; OUT=$(cat "$WORK/out"); }
expect() {  # expect RC PATTERN ARGS...: the exit code and a fixed string in stdout + stderr
  local want=$1 pattern=$2; shift 2
  run "$@"
  [ "$RC" = "$want" ] || fail "tidalctl $*: exit $RC, want $want: $OUT"
  grep -qF -- "$pattern" <<<"$OUT" || fail "tidalctl $*: no '$pattern' in: $OUT"
}
refute() {  # refute PATTERN: not in the last command's output
  ! grep -qF -- "$1" <<<"$OUT" || fail "unexpected '$1' in: $OUT"
}

"$BUILD/bin/tidal-engine" --listen "127.0.0.1:$GRPC_PORT" --http-addr "127.0.0.1:$HTTP_PORT" \
  --decision-log none >"$WORK/engine.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "$ENGINE/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "$ENGINE/healthz" >/dev/null || fail "engine did not start"
"$BUILD/tests/engine_driver" "127.0.0.1:$GRPC_PORT" >"$WORK/driver.out" || fail "driver failed"

# Finding 6: config diff against the built-in defaults.
printf '{}\n' >"$WORK/empty.yaml"
expect 0 "the engine runs this config (version builtin)" config diff "$WORK/empty.yaml" --engine "$ENGINE"
refute "0 field(s)"
printf '# only a comment\n{}\n' >"$WORK/comment.yaml"
expect 0 "the engine runs this config" config diff "$WORK/comment.yaml" --engine "$ENGINE"
run config diff "$WORK/empty.yaml" --engine "$ENGINE" -o json
[ "$RC" = 0 ] || fail "-o json of {}: exit $RC: $OUT"
python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["drift"] is False and j["fields"] == [], j' <<<"$OUT" ||
  fail "-o json of {}: $OUT"
printf 'exclusionTtlSeconds: 120\n' >"$WORK/default.yaml"  # by document: a default spelled out differs
expect 1 "exclusionTtlSeconds: engine (absent), file 120" config diff "$WORK/default.yaml" --engine "$ENGINE"
expect 1 "1 field(s)" config diff "$WORK/default.yaml" --engine "$ENGINE"

# Finding 8: drain and waves given the HTTP URL, and the plaintext flag's spelling.
for cmd in "drain" "waves --max-nodes 1"; do
  # shellcheck disable=SC2086
  expect 2 "--engine: expected unix:///PATH or HOST:PORT for the gRPC API (got an http:// URL)" $cmd --engine "http://127.0.0.1:$GRPC_PORT"
  refute "not a loopback address"
done
expect 2 "or --insecure true to send plaintext" drain --engine 10.1.2.3:1
refute "--insecure: true"

# Finding 9: the HTTP client's errors; exit codes as documented (queues, explain 1; config diff 2).
expect 1 "cannot reach tidal-engine at http://127.0.0.1:$CLOSED_PORT: connection refused" queues --engine "http://127.0.0.1:$CLOSED_PORT"
expect 1 "not an HTTP server (is this the gRPC port?" queues --engine "http://127.0.0.1:$GRPC_PORT"
expect 1 "not an HTTP server (is this the gRPC port?" explain team/g1 --engine "127.0.0.1:$GRPC_PORT"
expect 1 "--engine: unsupported scheme ftp" queues --engine "ftp://127.0.0.1:$HTTP_PORT"
refute "http://ftp"
expect 2 "connection refused" config diff "$WORK/empty.yaml" --engine "http://127.0.0.1:$CLOSED_PORT"
expect 2 "unsupported scheme ftp" snapshot -o "$WORK/snap.json" --engine "ftp://127.0.0.1:$HTTP_PORT"
expect 0 "QUEUE" queues --engine "$ENGINE/"   # a trailing slash still works

# Finding 14: drain --cancel of a node with no drain, and of an unknown node.
expect 0 "not-drained" drain --cancel node-5 --engine "127.0.0.1:$GRPC_PORT"
grep -qF "no drain to cancel" <<<"$OUT" || fail "no note for node-5: $OUT"
expect 1 "unknown-node" drain --cancel node-99 --engine "127.0.0.1:$GRPC_PORT"
grep -qF "no front door reports this node; nothing to cancel" <<<"$OUT" || fail "no note for node-99: $OUT"
expect 0 "node-6" drain node-6 --by +1h --engine "127.0.0.1:$GRPC_PORT"
expect 0 "NODE" drain --cancel node-6 --engine "127.0.0.1:$GRPC_PORT"   # a real cancel: no note
refute "not-drained"
refute "node-6"
echo "ok: tidalctl errors against a live tidal-engine"
