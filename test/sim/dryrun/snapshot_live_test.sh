#!/usr/bin/env bash
# Snapshot round trip on a REAL tidal-engine (loopback): test/metrics/engine_driver syncs 16 nodes
# and binds three 4-pod gangs (a fourth, too large for any NVLink domain, stays pending);
# `tidalctl snapshot` captures it (the format, the nodes, the running gangs where they run, the
# pending one, the config and its version; no pod labels or annotations), `--anonymise=queues`
# hides the names; `tidalctl sim --snapshot` reads it back and a zero-horizon replay keeps every
# placement; the anonymised file replays too.
#   snapshot_live_test.sh BUILD_DIR
set -euo pipefail
BUILD=${1:?usage: snapshot_live_test.sh BUILD_DIR}
WORK=$(mktemp -d)
GRPC_PORT=${TIDAL_SNAPSHOT_TEST_GRPC_PORT:-29291}
HTTP_PORT=${TIDAL_SNAPSHOT_TEST_HTTP_PORT:-29292}
ENGINE=http://127.0.0.1:$HTTP_PORT
CTL=$BUILD/bin/tidalctl
pid=""
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- engine log"; tail -20 "$WORK/engine.log" || true; exit 1; }

cat >"$WORK/tidal.yaml" <<'YAML'
queues:
  - {name: team-llm, weight: 2, nominal: {gpus: 128}}
  - {name: team-vision, weight: 1, nominal: {gpus: 0}, borrowingLimit: {gpus: 64}}
YAML
"$BUILD/bin/tidal-engine" --listen "127.0.0.1:$GRPC_PORT" --http-addr "127.0.0.1:$HTTP_PORT" \
  --config "$WORK/tidal.yaml" --decision-log none >"$WORK/engine.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "$ENGINE/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "$ENGINE/healthz" >/dev/null || fail "engine did not start"
"$BUILD/tests/engine_driver" "127.0.0.1:$GRPC_PORT" >"$WORK/driver.out" || fail "driver failed"
grep -q "bound_gpus=96" "$WORK/driver.out" || fail "driver: $(cat "$WORK/driver.out")"

"$CTL" snapshot --engine "$ENGINE" -o "$WORK/snap.json" 2>"$WORK/ctl.err" || fail "tidalctl snapshot: $(cat "$WORK/ctl.err")"
grep -q "16 nodes (128 GPUs), 3 running, 1 pending" "$WORK/ctl.err" || fail "summary: $(cat "$WORK/ctl.err")"
version=$(curl -sf "$ENGINE/config?format=json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
python3 - "$WORK/snap.json" "$version" <<'PY' || fail "snapshot content"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["format"] == "tidal.dev/snapshot" and s["version"] == 1, (s["format"], s["version"])
assert s["config"]["version"] == sys.argv[2] and s["config"]["document"]["queues"][0]["name"] == "team-llm", s["config"]
assert [l["name"] for l in s["topology"]] == ["block", "leaf", "nvlink"], s["topology"]
assert len(s["nodes"]) == 16 and all(n["capacity"]["gpus"] == 8 and n["health"] == "ready" for n in s["nodes"])
assert set(s["nodes"][0]["labels"]) == {"topology.tidal.dev/block", "topology.tidal.dev/leaf", "topology.tidal.dev/nvlink"}
run = {r["id"]: r for r in s["running"]}
assert sorted(run) == ["team/g1", "team/g2", "team/g3"], sorted(run)
for r in run.values():
    assert r["queue"] == "team-llm" and r["tidal"] and r["members"] == 4 and r["per_member"]["gpus"] == 8, r
    assert sum(p["members"] for p in r["placement"]) == 4 and r["start"] > 0, r
nvlink = {n["name"]: n["labels"]["topology.tidal.dev/nvlink"] for n in s["nodes"]}
for g in ("team/g1", "team/g2"):  # topology-required nvlink: one domain
    assert len({nvlink[p["node"]] for p in run[g]["placement"]}) == 1, run[g]
assert [p["id"] for p in s["pending"]] == ["team/too-big"] and s["pending"][0]["members"] == 5, s["pending"]
assert s["pending"][0]["required_level"] == "nvlink", s["pending"][0]
assert "team-llm" in s["usage"]["usage"], s["usage"]
text = open(sys.argv[1]).read()
for secret in ("annotations", "tidal.dev/gang", "uid-", "scheduler_name"):
    assert secret not in text, secret
PY
# Read back and replayed with a zero horizon: every running gang where the engine placed it.
"$CTL" sim --snapshot "$WORK/snap.json" --horizon 0 -o json >"$WORK/zero.json" 2>"$WORK/sim.err" || fail "zero horizon: $(cat "$WORK/sim.err")"
python3 - "$WORK/zero.json" <<'PY' || fail "zero-horizon replay: $(cat "$WORK/zero.json")"
import json, sys
r = json.load(open(sys.argv[1]))
for side in ("current", "new"):
    p = r[side]["placements"]
    assert p["match"] is True and p["running"] == 3 and p["problems"] == [], p
assert r["flags"] == [] and r["snapshot"]["running"] == 3 and r["snapshot"]["pending"] == 1
PY
# A day forward under a config giving team-llm no quota: the gangs keep running (no other queue
# waits to reclaim it; their undeclared runtimes run the default 24 h).
sed 's/nominal: {gpus: 128}/nominal: {gpus: 0}/' "$WORK/tidal.yaml" >"$WORK/cut.yaml"
"$CTL" sim --snapshot "$WORK/snap.json" --config "$WORK/cut.yaml" --horizon 24h >"$WORK/day.txt" 2>"$WORK/sim.err" ||
  fail "a day forward: $(cat "$WORK/sim.err")"
grep -q "| team-llm | 96.0 |" "$WORK/day.txt" || fail "a day forward: $(cat "$WORK/day.txt")"
# Anonymised: no names left, and it still replays with its placements.
"$CTL" snapshot --engine "$ENGINE" -o "$WORK/anon.json" --anonymise=queues 2>/dev/null || fail "--anonymise=queues"
for name in team-llm team-vision team/g1 node-0 nvlink-0; do
  ! grep -q "\"$name" "$WORK/anon.json" || fail "anonymised snapshot still holds $name"
done
"$CTL" sim --snapshot "$WORK/anon.json" --horizon 0 -o json 2>/dev/null |
  python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["current"]["placements"]["match"] is True, r["current"]["placements"]' ||
  fail "anonymised snapshot does not replay"
echo "ok: snapshot of a live tidal-engine, read back, zero-horizon replay keeps its placements"
