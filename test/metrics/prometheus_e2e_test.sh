#!/usr/bin/env bash
# End to end: a REAL Prometheus (Debian's prometheus package) scrapes a REAL tidal-engine on
# loopback while a gRPC driver schedules gangs; the values Prometheus stores must equal what the
# driver did, and promtool must accept the live /metrics. A second engine driven the same way
# stands for deploy/base's standby replica (both sync every pod, so both report the same cluster):
# the Grafana dashboard's queries (dashboard_check.py) must show the cluster once, not once per
# replica, and read only metrics the engine or tidal-slurm export. Everything is cleaned up on exit.
#   prometheus_e2e_test.sh BUILD_DIR
set -euo pipefail
BUILD=${1:?usage: prometheus_e2e_test.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
command -v prometheus >/dev/null && command -v promtool >/dev/null || { echo "SKIP: prometheus/promtool not installed"; exit 77; }
WORK=$(mktemp -d)
GRPC_PORT=${TIDAL_E2E_GRPC_PORT:-29181}
HTTP_PORT=${TIDAL_E2E_HTTP_PORT:-29182}
PROM_PORT=${TIDAL_E2E_PROM_PORT:-29190}
GRPC2_PORT=${TIDAL_E2E_GRPC2_PORT:-29183}   # the second ("standby") engine
HTTP2_PORT=${TIDAL_E2E_HTTP2_PORT:-29184}
SLURM_METRICS_PORT=${TIDAL_E2E_SLURM_METRICS_PORT:-29185}
DEAD_PORT=${TIDAL_E2E_DEAD_PORT:-29186}     # nothing listens: tidal-slurm only serves its metrics
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- engine log"; tail -20 "$WORK/engine.log" || true; echo "--- prometheus log"; tail -20 "$WORK/prom.log" || true; exit 1; }

"$BUILD/bin/tidal-engine" --listen "127.0.0.1:$GRPC_PORT" --http-addr "127.0.0.1:$HTTP_PORT" \
  --config "$ROOT/deploy/config/tidal.yaml" --decision-log "$WORK/decisions.jsonl" >"$WORK/engine.log" 2>&1 &
pids+=($!)
"$BUILD/bin/tidal-engine" --listen "127.0.0.1:$GRPC2_PORT" --http-addr "127.0.0.1:$HTTP2_PORT" \
  --config "$ROOT/deploy/config/tidal.yaml" --decision-log none >"$WORK/engine2.log" 2>&1 &
pids+=($!)
for port in "$HTTP_PORT" "$HTTP2_PORT"; do
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || fail "engine on $port did not start"
done

cat >"$WORK/prometheus.yml" <<CFG
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$ROOT/deploy/prometheus/tidal-rules.yaml"]
scrape_configs:
  - job_name: tidal-engine
    static_configs: [{targets: ["127.0.0.1:$HTTP_PORT", "127.0.0.1:$HTTP2_PORT"]}]
CFG
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prom.log" 2>&1 &
pids+=($!)

query() {  # prints the first value of an instant query, or "none"
  curl -sf --get "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")'
}
for _ in $(seq 120); do [ "$(query 'sum(up{job="tidal-engine"})' 2>/dev/null || echo none)" = "2" ] && break; sleep 0.5; done
[ "$(query 'sum(up{job="tidal-engine"})')" = "2" ] || fail "prometheus never scraped both engines"

out=$("$BUILD/tests/engine_driver" "127.0.0.1:$GRPC_PORT") || fail "driver failed"
echo "$out"
plan_calls=$(sed -n 's/^plan_calls=//p' <<<"$out")
bound_gpus=$(sed -n 's/^bound_gpus=//p' <<<"$out")
out2=$("$BUILD/tests/engine_driver" "127.0.0.1:$GRPC2_PORT") || fail "driver failed on the second engine"
[ "$out2" = "$out" ] || fail "the second engine was driven differently: $out2"
E1="instance=\"127.0.0.1:$HTTP_PORT\""  # the first engine's series (the counters below are its own)

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
want_ok "sum(tidal_grpc_requests_total{method=\"PlanPod\",code=\"OK\",$E1})" "$plan_calls"
want_ok "sum(tidal_gpus{state=\"allocated\",$E1})" "$bound_gpus"
want_ok "sum(tidal_queue_usage{queue=\"team-llm\",resource=\"gpus\",$E1})" "$bound_gpus"
want_ok "sum(tidal_decisions_total{outcome=\"Rejected\",$E1})" 1
# Three 4 x 8-GPU gangs started: three time-to-start observations in the 9-64 GPU bucket.
want_ok "sum(tidal_time_to_start_seconds_count{size_bucket=\"9-64\",$E1})" 3
# Both engines scraped in their final state before the dashboard is read.
want_ok "count(sum by (instance) (tidal_gpus{state=\"allocated\"}) == $bound_gpus)" 2
want_ok 'count(sum by (instance) (tidal_time_to_start_seconds_count) == 3)' 2

# The dashboard against what is exported: tidal-slurm's names from its own /metrics (it reads a
# recorded state with no jobs; its engine address answers nothing).
echo '{"format": "tidal-slurm-state/1", "jobs": [], "nodes": []}' >"$WORK/slurm-state.json"
"$BUILD/bin/tidal-slurm" --state "$WORK/slurm-state.json" --engine "127.0.0.1:$DEAD_PORT" \
  --metrics "127.0.0.1:$SLURM_METRICS_PORT" >"$WORK/slurm.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$SLURM_METRICS_PORT/metrics" >"$WORK/slurm-metrics.txt" && break; sleep 0.1; done
grep -q '^tidal_slurm_up ' "$WORK/slurm-metrics.txt" || fail "tidal-slurm served no metrics"
cat "$WORK/metrics.txt" "$WORK/slurm-metrics.txt" >"$WORK/exported.txt"
# What each panel must show: the cluster once (16 nodes of 8 GPUs, 12 members of 8 GPUs bound,
# the too-big gang pending), not once per engine.
cat >"$WORK/expect.json" <<JSON
[
  {"panel": "GPUs by state", "legend": "allocated", "value": $bound_gpus},
  {"panel": "GPUs by state", "legend": "idle", "value": $((128 - bound_gpus))},
  {"panel": "Fragmentation", "legend": "idle GPUs", "value": $((128 - bound_gpus))},
  {"panel": "GPUs by front door", "legend": "kubernetes", "value": $bound_gpus},
  {"panel": "Members by front door and state", "legend": "kubernetes bound", "value": 12},
  {"panel": "Members by front door and state", "legend": "kubernetes pending", "value": 5},
  {"panel": "Nodes by front door", "legend": "kubernetes", "value": 16},
  {"panel": "Nodes by health", "legend": "ready", "value": 16},
  {"panel": "Pending workloads", "legend": "team-llm / batch", "value": 1},
  {"panel": "Queue GPUs by front door", "legend": "team-llm kubernetes", "value": $bound_gpus},
  {"panel": "Queue usage, nominal and borrowed", "legend": "usage team-llm gpus", "value": $bound_gpus},
  {"panel": "Queue usage, nominal and borrowed", "legend": "nominal team-llm gpus", "value": 512},
  {"panel": "Largest placeable gang", "legend": "nvlink", "value": 32}
]
JSON
python3 "$ROOT/test/metrics/dashboard_check.py" "$ROOT/deploy/grafana/tidal-dashboard.json" \
  "$ROOT/deploy/prometheus/tidal-rules.yaml" "http://127.0.0.1:$PROM_PORT" "$WORK/exported.txt" \
  "$WORK/expect.json" || fail "the dashboard does not show what the engines export"
# Recording rules from deploy/prometheus evaluate against the live series.
[ "$(query 'count(tidal_gpus)')" != none ] || fail "no tidal_gpus series"
grep -q '"outcome":"rejected"' "$WORK/decisions.jsonl" || fail "decision log has no rejected line"
grep -q '"outcome":"placed"' "$WORK/decisions.jsonl" || fail "decision log has no placed line"
echo "PASS: prometheus scraped plan_calls=$plan_calls bound_gpus=$bound_gpus"
