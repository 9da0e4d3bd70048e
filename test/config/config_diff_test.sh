#!/usr/bin/env bash
# GitOps drift on a REAL tidal-engine (loopback): `tidalctl config diff` against the engine's
# /config for an identical file (exit 0), the same config reformatted as JSON (exit 0: same version),
# a changed file (exit 1, the field named), an invalid file (exit 2); then an out-of-band edit of
# the engine's watched file that it refuses: tidal_config_drift 1 and /config says so while the
# version it runs stays; a valid edit is reloaded: drift 0 and a new tidal_config_info version.
#   config_diff_test.sh BUILD_DIR
set -euo pipefail
BUILD=${1:?usage: config_diff_test.sh BUILD_DIR}
WORK=$(mktemp -d)
GRPC_PORT=${TIDAL_CONFIG_TEST_GRPC_PORT:-29281}
HTTP_PORT=${TIDAL_CONFIG_TEST_HTTP_PORT:-29282}
ENGINE=http://127.0.0.1:$HTTP_PORT
CTL=$BUILD/bin/tidalctl
pid=""
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- engine log"; tail -20 "$WORK/engine.log" || true; exit 1; }
metric() { curl -sf "$ENGINE/metrics" | awk -v m="$1" 'index($0, m) == 1 {print $2; exit}'; }
diff_rc() { set +e; "$CTL" config diff "$1" --engine "$ENGINE" >"$WORK/out" 2>&1; echo $?; set -e; }

cat >"$WORK/live.yaml" <<'YAML'
# the engine's file
queues:
  - {name: team-a, weight: 2}
  - {name: team-b, weight: 1}
YAML
"$BUILD/bin/tidal-engine" --listen "127.0.0.1:$GRPC_PORT" --http-addr "127.0.0.1:$HTTP_PORT" \
  --config "$WORK/live.yaml" --decision-log "$WORK/decisions.jsonl" >"$WORK/engine.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "$ENGINE/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "$ENGINE/healthz" >/dev/null || fail "engine did not start"

# Identical, and the same config in another shape: no drift.
cp "$WORK/live.yaml" "$WORK/git.yaml"
[ "$(diff_rc "$WORK/git.yaml")" = 0 ] || fail "identical file: $(cat "$WORK/out")"
grep -q "the engine runs this config" "$WORK/out" || fail "identical file: $(cat "$WORK/out")"
echo '{"queues": [{"weight": 2, "name": "team-a"}, {"name": "team-b", "weight": 1}]}' >"$WORK/git.json"
[ "$(diff_rc "$WORK/git.json")" = 0 ] || fail "the same config as JSON: $(cat "$WORK/out")"
# A changed weight: exit 1, the field and both values named.
sed 's/weight: 2/weight: 5/' "$WORK/live.yaml" >"$WORK/changed.yaml"
[ "$(diff_rc "$WORK/changed.yaml")" = 1 ] || fail "changed file: $(cat "$WORK/out")"
grep -q "queues\[0\].weight: engine 2, file 5" "$WORK/out" || fail "changed file, field not named: $(cat "$WORK/out")"
{ "$CTL" config diff "$WORK/changed.yaml" --engine "$ENGINE" -o json || true; } | python3 -c '
import json, sys; j = json.load(sys.stdin)
assert j["drift"] is True and j["fields"] == [{"path": "queues[0].weight", "engine": 2, "file": 5}], j' ||
  fail "changed file, -o json"
# An invalid file: exit 2, the engine would refuse it.
sed 's/weight: 2/weight: -1/' "$WORK/live.yaml" >"$WORK/bad.yaml"
[ "$(diff_rc "$WORK/bad.yaml")" = 2 ] || fail "invalid file: $(cat "$WORK/out")"
grep -q "not a valid engine config" "$WORK/out" || fail "invalid file: $(cat "$WORK/out")"
# The engine unreachable: exit 2.
set +e; "$CTL" config diff "$WORK/git.yaml" --engine http://127.0.0.1:1 >/dev/null 2>&1; rc=$?; set -e
[ "$rc" = 2 ] || fail "unreachable engine: exit $rc"

# Out of band: the watched file gets an edit the engine refuses.
v0=$(curl -sf "$ENGINE/config?format=json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
[ "$(metric tidal_config_drift)" = 0 ] || fail "drift before any edit"
[ "$(metric "tidal_config_info{version=\"$v0\"}")" = 1 ] || fail "tidal_config_info{version=$v0} missing"
cp "$WORK/bad.yaml" "$WORK/live.yaml"
for _ in $(seq 50); do [ "$(metric tidal_config_drift)" = 1 ] && break; sleep 0.2; done
[ "$(metric tidal_config_drift)" = 1 ] || fail "tidal_config_drift not 1 after a refused edit"
curl -sf "$ENGINE/config" | grep -q "drift" || fail "/config does not say drift"
[ "$(metric "tidal_config_info{version=\"$v0\"}")" = 1 ] || fail "the running version changed on a refused edit"
[ "$(diff_rc "$WORK/git.yaml")" = 0 ] || fail "git's file is still what runs: $(cat "$WORK/out")"
grep -q "note: the engine's own file" "$WORK/out" || fail "diff does not report the engine's file drift: $(cat "$WORK/out")"
# A valid edit: reloaded, no drift, a new version.
sleep 1.1  # a new modification time
cp "$WORK/changed.yaml" "$WORK/live.yaml"
for _ in $(seq 50); do [ "$(metric tidal_config_drift)" = 0 ] && break; sleep 0.2; done
[ "$(metric tidal_config_drift)" = 0 ] || fail "tidal_config_drift not 0 after a good reload"
[ -z "$(metric "tidal_config_info{version=\"$v0\"}")" ] || fail "the old version is still reported"
[ "$(diff_rc "$WORK/changed.yaml")" = 0 ] || fail "after the reload the engine runs changed.yaml: $(cat "$WORK/out")"
# Both reloads are in the decision log with both versions.
v1=$(curl -sf "$ENGINE/config?format=json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
python3 - "$WORK/decisions.jsonl" "$v0" "$v1" <<'PY' || fail "decision log: $(grep config- "$WORK/decisions.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"config-' in l]
v0, v1 = sys.argv[2], sys.argv[3]
assert [l["outcome"] for l in lines] == ["config-refused", "config-activated"], lines
assert lines[0]["previous"] == v0 and lines[0]["version"] != v0 and lines[0]["reason"], lines[0]
assert lines[1]["previous"] == v0 and lines[1]["version"] == v1 != v0, lines[1]
PY
echo "ok: config diff and drift on a live tidal-engine"
