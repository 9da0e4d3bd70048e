# shellcheck shell=bash
# e2e case snapshot (sourced by run.sh, which provides k, check, fail, until_true, new_ns,
# cleanup_ns, gang, pods, all_running, has_event, $BASE, $TIDAL_E2E_BIN): `tidalctl snapshot` of the
# engine beside the real control plane, read back by the policy dry-run (docs/simulator.md).
#
# A Tidal leaf gang of 8 runs, two default-scheduler pods run, and a 64-node gang waits (it needs
# every node) with a backfill reservation. Asserted on the snapshot: 64 nodes; the running gang
# under its key with its members on the nodes Kubernetes shows; the other scheduler's pods as
# pod:<ns>/<name>, tidal false, no queue; the waiting gang pending with 64 members and reserved;
# the config version the engine's /config reports; no pod labels or annotations in the file. Then
# `tidalctl sim --snapshot` reads it back: a zero horizon keeps every placement (placements.match),
# and a 24 h replay of the engine's own config against itself flags nothing. About 10 s.
MORE_CASES+=(snapshot)

case_snapshot() {
  local ns=e2e-snapshot snap=$BASE/snapshot.json version
  new_ns $ns
  gang $ns run 8 leaf | k create -f - >/dev/null
  pods $ns other 2 8 default-scheduler '{"team": "other", "secret-label": "hush"}' '{"secret-annotation": "s3cr3t"}' |
    k create -f - >/dev/null
  check "the 8-node gang and the two default-scheduler pods run" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 10
  gang $ns big 64 | k create -f - >/dev/null
  check "the 64-node gang waits (FailedScheduling)" until_true "$TIDAL_E2E_TIMEOUT" has_event $ns FailedScheduling "big-"
  sleep 0.5  # the engine hears of the bindings through the Sync stream (50 ms batches)
  if ! "$TIDAL_E2E_BIN/tidalctl" snapshot --engine "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT" -o "$snap" 2>"$BASE/snapshot.err"; then
    fail "tidalctl snapshot: $(cat "$BASE/snapshot.err")"
    cleanup_ns $ns
    return
  fi
  sed 's/^/    /' "$BASE/snapshot.err" >&2
  version=$(curl -sf "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/config?format=json" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
  k get pods -n $ns -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}' >"$BASE/snapshot.pods"
  check "the snapshot holds what Kubernetes shows" python3 - "$snap" "$BASE/snapshot.pods" "$ns" "$version" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
node_of = dict(l.split() for l in open(sys.argv[2]) if len(l.split()) == 2)
ns, version = sys.argv[3], sys.argv[4]
assert s["format"] == "tidal.dev/snapshot" and s["version"] == 1
assert len(s["nodes"]) == 64, len(s["nodes"])
assert s["config"]["version"] == version, (s["config"]["version"], version)
run = {r["id"]: r for r in s["running"]}
g = run[ns + "/run"]
assert g["tidal"] and g["members"] == 8, g
assert sorted(p["node"] for p in g["placement"]) == sorted(n for p, n in node_of.items() if p.startswith("run-")), g
for i in (0, 1):
    o = run["pod:%s/other-%d" % (ns, i)]
    assert not o["tidal"] and o["queue"] == "" and o["placement"] == [{"node": node_of["other-%d" % i], "members": 1}], o
pend = {p["id"]: p for p in s["pending"]}
assert pend[ns + "/big"]["members"] == 64, pend.keys()
assert ns + "/big" in [r["id"] for r in s["reservations"]], s["reservations"]
text = open(sys.argv[1]).read()
assert "s3cr3t" not in text and "secret-label" not in text and "fake.invalid" not in text
PY
  check "read back, a zero horizon keeps every placement" eval "\"$TIDAL_E2E_BIN/tidalctl\" sim --snapshot \"$snap\" --horizon 0 -o json 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin); p=r[\"current\"][\"placements\"]; assert p[\"match\"] and p[\"running\"] >= 3, p'"
  check "24 h of the engine's own config against itself: no flag, exit 0" eval "\"$TIDAL_E2E_BIN/tidalctl\" sim --snapshot \"$snap\" \
    --horizon 24h --fail-on preempt-nonpreemptible,reserved-later,rejects-work >\"$BASE/snapshot-24h.txt\" 2>&1"
  cleanup_ns $ns
}
