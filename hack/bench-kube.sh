#!/usr/bin/env bash
# `make bench-kube` (a benchmark, not a test): kube-scheduler throughput of tidal-scheduler's two profiles
# on one KWOK cluster, same pods, same run, same binary:
#   default   N pods (GPUS_PER_POD GPUs each, schedulerName default-scheduler): the stock profile
#   tidal     the same N pods with schedulerName tidal-scheduler (every pod: CheckPod, PlanPod, Reserve,
#             Permit, Bound against tidal-engine, plus the Sync stream)
#   gang8     the same N pods as N/8 gangs of 8 (tidal.dev/gang + gang-size 8)
#   default-constrained, tidal-constrained
#             the default and tidal phases with every node tainted tidal.dev/bench=constrained:NoSchedule
#             and every pod carrying a nodeSelector (type: kwok, which every bench node has) and a
#             toleration of that taint: the engine evaluates both itself (core/api/node_constraints.h),
#             kube-scheduler's filters check them again on the planned node. The taint is put on before
#             these two phases and taken off after them.
# Each phase: stop tidal-scheduler, create the phase's pods (so creation speed does not limit the figure),
# start tidal-scheduler, wait until every pod is bound, then delete them. pods/s = N / (last - first
# "Scheduled" event time) of the phase, from the events' microsecond eventTime; the wall time from the
# scheduler's start to the last binding (including start-up and the engine's resync) is reported too.
# The five phases run BENCH_RUNS times, interleaved (default, tidal, gang8, default-constrained,
# tidal-constrained, default, ...); each figure is the median, every run's value is kept under "runs";
# the ratios to the default profile are of those medians.
# BENCH_PHASES (all five) picks phases, e.g. "default tidal-constrained".
# Writes build/bench/kube_throughput.json. Everything runs on 127.0.0.1 and is torn down at the end.
# Usage: hack/bench-kube.sh     Env: BENCH_NODES_FABRIC ("2 8 8 8" = 1024 nodes), BENCH_PODS (1000),
#        BENCH_GPUS_PER_POD (4), BENCH_RUNS (3), BENCH_OUT (build/bench/kube_throughput.json), TIDAL_BENCH_BASE.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/e2e/lib/common.sh
source "$ROOT/test/e2e/lib/common.sh"
# shellcheck source=test/e2e/lib/pods.sh
source "$ROOT/test/e2e/lib/pods.sh"

N=${BENCH_PODS:-1000}
RUNS=${BENCH_RUNS:-3}
GPUS=${BENCH_GPUS_PER_POD:-4}
OUT=${BENCH_OUT:-$ROOT/build/bench/kube_throughput.json}
# shellcheck disable=SC2206
FABRIC=(${BENCH_NODES_FABRIC:-2 8 8 8})
[ $((N % 8)) -eq 0 ] || e2e_die "BENCH_PODS must be a multiple of 8 (gangs of 8)"
export TIDAL_E2E_TIMEOUT=${TIDAL_E2E_TIMEOUT:-120}
if [ -n "${TIDAL_BENCH_BASE:-}" ]; then BASE=$TIDAL_BENCH_BASE; mkdir -p "$BASE"; else BASE=$(mktemp -d /tmp/tidal-bench.XXXXXX); fi
BASE=$(cd "$BASE" && pwd)
finish() {
  local rc=$?
  trap - EXIT INT TERM
  "$E2E_LIB/cluster-down.sh" "$BASE" >/dev/null 2>&1 || true
  [ -n "${TIDAL_BENCH_BASE:-}" ] || rm -rf "${BASE:?}"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM
k() { e2e_kubectl "$BASE" "$@"; }

"$E2E_LIB/cluster-up.sh" "$BASE"
"$E2E_LIB/make-nodes.sh" "$BASE" "${FABRIC[@]}"
NODES=$(k get nodes --no-headers | wc -l)
TIDAL_E2E_SCHED_V=1 "$E2E_LIB/tidal-up.sh" "$BASE" all

# create_parallel FILE: kubectl create a JSON List in 4 parallel slices (pods already split by index)
SELECTOR='{"type": "kwok"}'
TOLERATION='"tolerations": [{"key": "tidal.dev/bench", "operator": "Equal", "value": "constrained", "effect": "NoSchedule"}]'
# constrained: adds the toleration after the nodeSelector of every pod e2e_pods prints.
constrained() { sed "s#\"nodeSelector\": $SELECTOR#&, $TOLERATION#"; }
taint_nodes() {  # taint_nodes on|off
  local t0
  t0=$(e2e_now_ms)
  if [ "$1" = on ]; then
    k taint nodes --all tidal.dev/bench=constrained:NoSchedule --overwrite >/dev/null
  else
    k taint nodes --all tidal.dev/bench:NoSchedule- >/dev/null
  fi
  e2e_log "taint tidal.dev/bench=constrained:NoSchedule $1: $NODES nodes in $(($(e2e_now_ms) - t0))ms"
}
bound_count() { k get pods -n "$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true; }
results=()
phase() {  # phase NAME SCHEDULER GANG(""|8|constrained) RUN
  local name=$1 sched=$2 gang=$3 run=$4 ns=bench-$1-$4 t0 t1 b i
  e2e_log "=== run $run, phase $name: $N pods x $GPUS GPUs, scheduler $sched${gang:+, $gang}"
  e2e_stop "$BASE" tidal-scheduler 10
  k create namespace "$ns" >/dev/null
  t0=$(e2e_now_ms)
  for ((i = 0; i < 4; i++)); do
    if [ "$gang" = 8 ]; then
      local g
      for ((g = i; g < N / 8; g += 4)); do
        e2e_pods "$ns" "g$g" 8 "$GPUS" tidal-scheduler "{\"tidal.dev/gang\": \"g$g\"}" '{"tidal.dev/gang-size": "8"}'
      done | k create -f - >/dev/null &
    elif [ "$gang" = constrained ]; then
      e2e_pods "$ns" "p$i" $((N / 4)) "$GPUS" "$sched" '{}' '{}' "$SELECTOR" | constrained | k create -f - >/dev/null &
    else
      e2e_pods "$ns" "p$i" $((N / 4)) "$GPUS" "$sched" | k create -f - >/dev/null &
    fi
  done
  wait
  e2e_log "created $(k get pods -n "$ns" --no-headers | wc -l) pods in $(($(e2e_now_ms) - t0))ms"
  t0=$(e2e_now_ms)
  TIDAL_E2E_SCHED_V=1 "$E2E_LIB/tidal-up.sh" "$BASE" scheduler >/dev/null 2>&1
  local deadline=$((SECONDS + 300))
  while b=$(bound_count "$ns"); [ "$b" -lt "$N" ]; do
    [ "$SECONDS" -lt "$deadline" ] || { e2e_log "phase $name: only $b of $N bound after 300 s"; break; }
    sleep 0.5
  done
  t1=$(e2e_now_ms)
  k get events.events.k8s.io -n "$ns" --field-selector reason=Scheduled \
    -o jsonpath='{range .items[*]}{.eventTime}{"\n"}{end}' >"$BASE/$name.$run.times"
  results+=("$name $b $((t1 - t0)) $BASE/$name.$run.times")
  e2e_log "phase $name: $b of $N bound, $((t1 - t0))ms from scheduler start to the last binding seen"
  k delete pods -n "$ns" --all --wait=false >/dev/null
  deadline=$((SECONDS + 120))
  while [ -n "$(k get pods -n "$ns" -o name | head -n 1)" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.5; done
}
PHASES=" ${BENCH_PHASES:-default tidal gang8 default-constrained tidal-constrained} "
on() { [[ $PHASES == *" $1 "* ]]; }
# The constrained pods must really carry both: check one before anything runs.
e2e_pods x p 1 1 tidal-scheduler '{}' '{}' "$SELECTOR" | constrained | grep -q '"tolerations": \[{"key": "tidal.dev/bench"' ||
  e2e_die "constrained pods lack the toleration (e2e_pods output changed?)"
for ((run = 1; run <= RUNS; run++)); do
  if on default; then phase default default-scheduler "" "$run"; fi
  if on tidal; then phase tidal tidal-scheduler "" "$run"; fi
  if on gang8; then phase gang8 tidal-scheduler 8 "$run"; fi
  if on default-constrained || on tidal-constrained; then
    taint_nodes on
    if on default-constrained; then phase default-constrained default-scheduler constrained "$run"; fi
    if on tidal-constrained; then phase tidal-constrained tidal-scheduler constrained "$run"; fi
    taint_nodes off
  fi
done

mkdir -p "$(dirname "$OUT")"
python3 - "$OUT" "$NODES" "$N" "$GPUS" "${results[@]}" <<'EOF'
import json, sys, datetime, os, platform, statistics
out, nodes, n, gpus = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
runs = {}
for r in sys.argv[5:]:
    name, bound, wall_ms, path = r.split(" ")
    times = sorted(datetime.datetime.fromisoformat(l.strip().replace("Z", "+00:00")) for l in open(path) if l.strip())
    span = (times[-1] - times[0]).total_seconds() if len(times) > 1 else 0.0
    runs.setdefault(name, []).append({
        "pods_per_s": round((len(times) - 1) / span, 1) if span > 0 else None,
        "bound": int(bound), "scheduled_span_s": round(span, 3), "wall_from_scheduler_start_s": round(int(wall_ms) / 1000, 3)})
res = {"nodes": nodes, "pods": n, "gpus_per_pod": gpus, "gang_size": 8, "gangs": n // 8}
for name in ("default", "tidal", "gang8", "default-constrained", "tidal-constrained"):
    rs = runs.get(name, [])
    key = name.replace("-", "_")
    pps = [r["pods_per_s"] for r in rs if r["pods_per_s"]]
    res[key + "_pods_per_s"] = round(statistics.median(pps), 1) if pps else None
    res[key + "_bound"] = min((r["bound"] for r in rs), default=0)
    res[key + "_wall_from_scheduler_start_s"] = round(statistics.median([r["wall_from_scheduler_start_s"] for r in rs]), 3) if rs else None
def ratio(a, b):
    return round(res[a] / res[b], 2) if res.get(a) and res.get(b) else None
# Tidal / default-scheduler profile, each over the default profile's run of the same pods.
res["ratio_to_default"] = {
    "tidal": ratio("tidal_pods_per_s", "default_pods_per_s"),
    "gang8": ratio("gang8_pods_per_s", "default_pods_per_s"),
    "tidal_constrained": ratio("tidal_constrained_pods_per_s", "default_constrained_pods_per_s"),
    "tidal_constrained_vs_unconstrained_default": ratio("tidal_constrained_pods_per_s", "default_pods_per_s"),
}
res["constrained"] = {"taint": "tidal.dev/bench=constrained:NoSchedule on every node",
                      "pod": "nodeSelector {type: kwok} (every node) + toleration of the taint"}
res["runs"] = runs
res["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform()}
res["method"] = ("pods created before the scheduler starts; pods/s = (pods - 1) / (last - first Scheduled event time), "
                 "median of the runs; same cluster, same pods, one tidal-scheduler binary (profiles default-scheduler "
                 "and tidal-scheduler); phases interleaved")
json.dump(res, open(out, "w"), indent=2)
print(json.dumps({k: v for k, v in res.items() if k != "runs"}, indent=2))
EOF
e2e_log "wrote ${OUT#"$ROOT"/}"
