#!/usr/bin/env bash
# End to end: a REAL Prometheus (Debian's prometheus package) scrapes a REAL tidal-engine on
# loopback while a gRPC driver schedules gangs; the values Prometheus stores must equal what the
# driver did, and promtool must accept the live /metrics. Everything is cleaned up on exit.
#   prometheus_e2e_test.sh BUILD_DIR
set -euo pipefail
BUILD=${1:?usage: prometheus_e2e_test.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
command -v prometheus >/dev/null && command -v promtool >/dev/null || { echo "SKIP: prometheus/promtool not installed"; exit 77; }
WORK=$(mktemp -d)
GRPC_PORT=${TIDAL_E2E_GRPC_PORT:-29181}
HTTP_PORT=${TIDAL_E2E_HTTP_PORT:-29182}
PROM_PORT=${TIDAL_E2E_PROM_PORT:-29190}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- engine log"; tail -20 "$WORK/engine.log" || true; echo "--- prometheus log"; tail -20 "$WORK/prom.log" || true; exit 1; }

"$BUILD/bin/tidal-engine" --listen "127.0.0.1:$GRPC_PORT" --http-addr "127.0.0.1:$HTTP_PORT" \
  --config "$ROOT/deploy/config/tidal.yaml" --decision-log "$WORK/decisions.jsonl" >"$WORK/engine.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$HTTP_PORT/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$HTTP_PORT/healthz" >/dev/null || fail "engine did not start"

cat >"$WORK/prometheus.yml" <<CFG
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$ROOT/deploy/prometheus/tidal-rules.yaml"]
scrape_configs:
  - job_name: tidal-engine
    static_configs: [{targets: ["127.0.0.1:$HTTP_PORT"]}]
CFG
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prom.log" 2>&1 &
pids+=($!)

query() {  # prints the first value of an instant query, or "none"
  curl -sf --get "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")'
}
for _ in $(seq 120); do [ "$(query 'up{job="tidal-engine"}' 2>/dev/null || echo none)" = "1" ] && break; sleep 0.5; done
[ "$(query 'up{job="tidal-engine"}')" = "1" ] || fail "prometheus never scraped the engine"

out=$("$BUILD/tests/engine_driver" "127.0.0.1:$GRPC_PORT") || fail "driver failed"
echo "$out"
plan_calls=$(sed -n 's/^plan_calls=//p' <<<"$out")
bound_gpus=$(sed -n 's/^bound_gpus=//p' <<<"$out")

# Live exposition must lint clean.
curl -sf "http://127.0.0.1:$HTTP_PORT/metrics" >"$WORK/metrics.txt"
promtool check metrics <"$WORK/metrics.txt" || fail "promtool check metrics found problems"

# Wait until Prometheus has scraped the final values, then compare.
want_ok() {  # $1 query, $2 expected number
  local got=none
  for _ in $(seq 60); do
    got=$(query "$1")
    [ "$got" != none ] && python3 -c "import sys; sys.exit(0 if abs(float('$got')-float('$2'))<1e-9 else 1)" && return 0
    sleep 0.5
  done
  fail "$1 = $got, want $2"
}
want_ok 'sum(tidal_grpc_requests_total{method="PlanPod",code="OK"})' "$plan_calls"
want_ok 'sum(tidal_gpus{state="allocated"})' "$bound_gpus"
want_ok 'sum(tidal_queue_usage{queue="team-llm",resource="gpus"})' "$bound_gpus"
want_ok 'sum(tidal_decisions_total{outcome="Rejected"})' 1
# Three 4 x 8-GPU gangs started: three time-to-start observations in the 9-64 GPU bucket.
want_ok 'sum(tidal_time_to_start_seconds_count{size_bucket="9-64"})' 3
# Recording rules from deploy/prometheus evaluate against the live series.
[ "$(query 'count(tidal_gpus)')" != none ] || fail "no tidal_gpus series"
grep -q '"outcome":"rejected"' "$WORK/decisions.jsonl" || fail "decision log has no rejected line"
grep -q '"outcome":"placed"' "$WORK/decisions.jsonl" || fail "decision log has no placed line"
echo "PASS: prometheus scraped plan_calls=$plan_calls bound_gpus=$bound_gpus"
