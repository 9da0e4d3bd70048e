#!/usr/bin/env bash
# `tidalctl sim --snapshot` as a CI gate, on the crafted snapshots (no engine): --fail-on exit codes
# (0 nothing breached, 1 breached, 2 bad input), bad snapshots (truncated, a future version, a bad
# field) and bad flags named, the JSON report's shape.
#   dryrun_cli_test.sh TIDALCTL SOURCE_DIR
set -uo pipefail
CTL=${1:?usage: dryrun_cli_test.sh TIDALCTL SOURCE_DIR}
D=${2:?}/test/sim/dryrun
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; echo "--- output"; cat "$WORK/out" 2>/dev/null; exit 1; }
run() { "$CTL" sim "$@" >"$WORK/out" 2>&1; echo $?; }

# A quota cut preempting non-preemptible work: the gate trips (1); without the check it passes (0).
[ "$(run --snapshot "$D/quota.json" --config "$D/quota_cut.yaml" --horizon 4h --fail-on preempt-nonpreemptible)" = 1 ] ||
  fail "quota cut with --fail-on preempt-nonpreemptible: expected exit 1"
grep -q -- "--fail-on preempt-nonpreemptible: preempts non-preemptible work" "$WORK/out" || fail "breach not named"
[ "$(run --snapshot "$D/quota.json" --config "$D/quota_cut.yaml" --horizon 4h --fail-on lost-gpu-hours=20,preemptions=2)" = 0 ] ||
  fail "quota cut under its thresholds: expected exit 0"
[ "$(run --snapshot "$D/quota.json" --config "$D/quota_cut.yaml" --horizon 4h --fail-on lost-gpu-hours=10)" = 1 ] ||
  fail "16 GPU-hours lost over a 10 limit: expected exit 1"
# A weight change: b waits longer (its average grows 13%), nobody is preempted.
[ "$(run --snapshot "$D/weights.json" --config "$D/weights_new.yaml" --horizon 4h --fail-on preempt-nonpreemptible,preemptions=0)" = 0 ] ||
  fail "weight change: expected exit 0"
[ "$(run --snapshot "$D/weights.json" --config "$D/weights_new.yaml" --horizon 4h --fail-on ttst-avg-increase=10%)" = 1 ] ||
  fail "weight change, ttst-avg-increase=10%: expected exit 1"
grep -q "queue b average time to start" "$WORK/out" || fail "the queue whose p99 grew is not named"
# Arrivals from a trace (queue "default"): a config dropping that queue rejects them: flagged, gated.
S=$(dirname "$D")
sed 's/  - {name: a, weight: 3}/  - {name: default, weight: 1}\n  - {name: a, weight: 3}/' "$D/weights_new.yaml" >"$WORK/with_default.yaml"
[ "$(run --snapshot "$D/weights.json" --against "$WORK/with_default.yaml" --config "$D/weights_new.yaml" --horizon 2h \
      --trace "$S/easy_backfill.csv" --fail-on rejects-work)" = 1 ] || fail "dropping a queue with arrivals: expected exit 1"
grep -q "4 arrivals" "$WORK/out" || fail "arrivals not counted"
grep -q 'rejects 4 workload(s) the current config takes (arrival/a: queue "default" is not configured' "$WORK/out" ||
  fail "rejected work not named"
# The JSON report.
"$CTL" sim --snapshot "$D/weights.json" --config "$D/weights_new.yaml" --against "$D/weights_new.yaml" --horizon 2h -o json 2>/dev/null |
  python3 -c '
import json, sys; r = json.load(sys.stdin)
assert r["format"] == "tidal.dev/dryrun" and r["version"] == 1, r.keys()
assert r["horizon_s"] == 7200 and r["flags"] == [] and r["fail_on"]["breaches"] == []
assert r["current"]["version"] == r["new"]["version"]
assert r["queues"]["a"]["change"]["avg_gpus"] == 0 and r["queues"]["a"]["new"]["avg_gpus"] > 20
assert "series" not in r["new"]' || fail "-o json report"
# Bad input: exit 2, the problem named.
[ "$(run --snapshot "$D/quota.json" --fail-on speed=3)" = 2 ] || fail "unknown check: expected exit 2"
grep -q -- '--fail-on: "speed=3": unknown check' "$WORK/out" || fail "unknown check not named"
[ "$(run --snapshot "$D/quota.json" --horizon soon)" = 2 ] || fail "bad --horizon: expected exit 2"
head -c 700 "$D/quota.json" >"$WORK/cut.json"
[ "$(run --snapshot "$WORK/cut.json")" = 2 ] || fail "truncated snapshot: expected exit 2"
grep -q "cut.json: not a complete JSON document (700 bytes read; truncated?)" "$WORK/out" || fail "truncated snapshot not explained"
sed 's/"version": 1,/"version": 2,/' "$D/quota.json" >"$WORK/v2.json"
[ "$(run --snapshot "$WORK/v2.json")" = 2 ] || fail "future version: expected exit 2"
grep -q "snapshot: version 2 is newer than this tidalctl reads (1)" "$WORK/out" || fail "future version not explained"
python3 - "$D/quota.json" "$WORK/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["running"][3]["members"] = 0; json.dump(d, open(sys.argv[2], "w"))
PY
[ "$(run --snapshot "$WORK/bad.json")" = 2 ] || fail "bad field: expected exit 2"
grep -q "snapshot.running\[3\].members: must be >= 1" "$WORK/out" || fail "bad field not named"
sed 's/weight: 3/weight: -3/' "$D/weights_new.yaml" >"$WORK/invalid.yaml"
[ "$(run --snapshot "$D/weights.json" --config "$WORK/invalid.yaml")" = 2 ] || fail "invalid config: expected exit 2"
grep -q "is not a valid engine config" "$WORK/out" || fail "invalid config not named"
echo "ok: tidalctl sim --snapshot gate and bad input"
