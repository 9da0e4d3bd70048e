#!/usr/bin/env bash
# End-to-end tests of Tidal on a real control plane, everything on 127.0.0.1:
#   etcd 3.6 + kube-apiserver v1.36 + kwok (64 fake 8-GPU nodes: 2 blocks x 2 leaves x 4 NVLink domains
#   x 4 nodes) + build/bin/tidal-engine + build/bin/tidal-scheduler (profiles tidal-scheduler and the
#   stock default-scheduler in one binary).
#
# Usage: test/e2e/run.sh [CASE...]      (default: every case, in this order)
#   go-unit     go test ./pkg/... in shim/kube (convert, engine client, plugin against a fake engine)
#   smoke       a 1-GPU pod binds and runs; a 9-GPU pod stays Unschedulable; a 2 s pod succeeds
#   gang-leaf   (a) 16 pods x 8 GPUs, topology-required leaf: all bound, inside one leaf
#   contention  (b) two 40-node gangs on 64 nodes: one runs, the other waits whole, runs after the first is deleted
#   nvlink      (c) a 5-node gang with topology-required nvlink (domains hold 4) is refused, reason in a pod event
#   default     (d) default-scheduler pods fill 3 leaves; Tidal's gang lands in the 4th and never hits them
#   preempt     four preemptible leaf gangs fill the cluster; a higher-priority leaf gang arrives: the engine
#               picks one whole gang as victims (PostFilter), the shim evicts it, the new gang runs there
#   backfill    leaf-0's nodes run pods declared to end in 30 m, the rest 10 h: a 16-node gang that does
#               not fit gets a reservation on leaf-0; when one leaf-0 node frees, a 1-GPU pod declared for
#               10 h may not take it (it would delay the gang), one declared for 5 m may; the gang runs
#               in leaf-0 once it frees
#   overdue     a Tidal pod declared for 3 s is evicted once it has run 3 s + the engine's 2 s grace
#               (event TidalRuntimeLimitExceeded); a 10 h one and another scheduler's pod stay
#   reclaim     with queues a and b (nominal half the cluster each; the engine restarted with them),
#               a's non-preemptible pods fill all 64 nodes (a borrows b's half); b's 16-node leaf gang
#               takes back one leaf: exactly 16 of a's pods are evicted (reason reclaim), b runs
#   kill        (e) kill -9 tidal-engine while gangs are being scheduled: no partial gang, an event
#               "tidal-engine unreachable" meanwhile, scheduling resumes after the restart
#   invalid     (f) tidal.dev/gang-size: many -> a pod event naming the key and the accepted values; others unaffected
#   deploy      (g) kubectl apply --dry-run=server -k deploy/overlays/dev
# Every case runs in its own namespace and deletes its pods afterwards; a failing case does not stop the
# others. Always tears everything down (also on failure or Ctrl-C). Exit status non-zero on any failure;
# the last line is "e2e: N passed, M failed".
# Env: TIDAL_E2E_SKIP_BUILD=1 (no build step), TIDAL_E2E_KEEP=1 (keep BASE with logs), TIDAL_E2E_BASE,
#      TIDAL_E2E_FABRIC (default "2 2 4 4"), plus lib/common.sh's (ports, timeouts).
set -euo pipefail
# shellcheck source=test/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=test/e2e/lib/pods.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/pods.sh"
E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

ALL_CASES=(go-unit smoke gang-leaf contention nvlink default preempt backfill overdue reclaim kill invalid deploy)
# More cases live in cases/*.sh (sourced below, after the helpers): each file defines case_<name>
# functions and appends the names to MORE_CASES (they run after the cases above, before kill).
MORE_CASES=()
EXPLICIT_CASES=()  # defined in cases/*.sh but only run when named on the command line
BEFORE_CASE_HOOKS=()  # cases/*.sh: functions called with the case name before each case
FINISH_HOOKS=()       # cases/*.sh: functions called at exit (also on failure), before the cluster goes down

KEEP=${TIDAL_E2E_KEEP:-0}
if [ -n "${TIDAL_E2E_BASE:-}" ]; then BASE=$TIDAL_E2E_BASE; mkdir -p "$BASE"; else BASE=$(mktemp -d /tmp/tidal-e2e.XXXXXX); fi
BASE=$(cd "$BASE" && pwd)
T_START=$(e2e_now_ms)
passed=0 failed=0
failures=()
timings=()

finish() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "$failed" -gt 0 ] || [ "$rc" -ne 0 ]; then
    for n in tidal-scheduler tidal-engine; do
      [ -f "$BASE/log/$n.log" ] && { e2e_log "$n log (last 30 lines):"; tail -n 30 "$BASE/log/$n.log" >&2; }
    done
  fi
  local h; for h in "${FINISH_HOOKS[@]}"; do "$h" || true; done
  "$E2E_LIB/cluster-down.sh" "$BASE" >/dev/null 2>&1 || rc=1
  if [ "$KEEP" = 1 ]; then e2e_log "kept $BASE (logs in $BASE/log)"; else rm -rf "${BASE:?}"; fi
  [ "$rc" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1
  e2e_log "timings: ${timings[*]:-none}; total $(( ($(e2e_now_ms) - T_START) / 1000 ))s"
  [ ${#failures[@]} -eq 0 ] || e2e_log "failed: ${failures[*]}"
  local l; for l in "${fail_lines[@]}"; do e2e_log "  $l"; done
  echo "e2e: $passed passed, $failed failed"
  [ "$failed" -eq 0 ] && exit 0 || exit 1
}
trap finish EXIT
trap 'exit 130' INT TERM

# --- helpers -------------------------------------------------------------------------------------------
k() { e2e_kubectl "$BASE" "$@"; }
CASE_OK=1
CASE=""
fail_lines=()
# fail DESC: the current case fails; the first failure of a case also records what its namespace
# ($ns of the calling case) looked like, and every failure is repeated at the very end of the output.
fail() {
  e2e_log "  FAIL: $*"
  fail_lines+=("$CASE: $*")
  if [ "$CASE_OK" = 1 ] && [ -n "${ns:-}" ]; then
    fail_lines+=("$CASE: pods (name node phase): $(k get pods -n "$ns" --no-headers \
      -o custom-columns=N:.metadata.name,NODE:.spec.nodeName,P:.status.phase 2>/dev/null | awk '{printf "%s %s %s; ", $1, $2, $3}' | cut -c1-600)")
    local e; while IFS= read -r e; do fail_lines+=("$CASE: event: ${e:0:300}"); done < <(events "$ns" 2>/dev/null | tail -n 4)
    [ -f "$BASE/log/tidal-engine.log" ] && while IFS= read -r e; do fail_lines+=("$CASE: engine: ${e:0:300}"); done \
      < <(grep -F "\"workload\":\"$ns/" "$BASE/log/tidal-engine.log" | tail -n 3)
  fi
  CASE_OK=0
}
check() {  # check DESC CMD...: one assertion of the current case
  local desc=$1; shift
  if "$@"; then e2e_log "  ok: $desc"; else fail "$desc"; fi
}
# until_true TIMEOUT_S CMD...: poll CMD every 0.2 s
until_true() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ "$SECONDS" -lt "$deadline" ] || return 1; sleep 0.2; done
}
pods() { e2e_pods "$@"; }
# gang NS NAME SIZE [TOPOLOGY-REQUIRED]: a Tidal gang of SIZE pods x 8 GPUs (label tidal.dev/gang=NAME)
gang() { e2e_gang "$1" "$2" "$3" 8 "" "${4:+\"tidal.dev/topology-required\": \"$4\"}"; }
bound() {  # bound NS [SELECTOR]: number of pods with a node
  k get pods -n "$1" ${2:+-l "$2"} -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
}
running() {  # running NS [SELECTOR]
  k get pods -n "$1" ${2:+-l "$2"} -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running$' || true
}
all_running() { [ "$(running "$1" "${3:-}")" -ge "$2" ]; }
# leaves NS SELECTOR: the distinct topology.tidal.dev/leaf values of the nodes the pods are bound to
leaves() {
  local nodes; nodes=$(k get pods -n "$1" -l "$2" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep . | sort -u)
  [ -n "$nodes" ] || return 0
  # shellcheck disable=SC2086
  k get nodes $nodes -o jsonpath='{range .items[*]}{.metadata.labels.topology\.tidal\.dev/leaf}{"\n"}{end}' | sort -u
}
# events NS [REASON]: "pod<TAB>reason<TAB>message" lines
events() {
  k get events -n "$1" ${2:+--field-selector reason=$2} \
    -o jsonpath='{range .items[*]}{.involvedObject.name}{"\t"}{.reason}{"\t"}{.message}{"\n"}{end}'
}
has_event() {  # has_event NS REASON PATTERN...: an event of REASON whose line matches every PATTERN
  local lines; lines=$(events "$1" "$2"); shift 2
  local p; for p in "$@"; do lines=$(grep -F -- "$p" <<<"$lines") || return 1; done
  [ -n "$lines" ]
}
no_event() { ! has_event "$@"; }
bound_at_least() { [ "$(bound "$1")" -ge "$2" ]; }
pod_field() { k get pod -n "$1" "$2" -o jsonpath="$3"; }  # pod_field NS POD JSONPATH
pod_field_is() { [ "$(pod_field "$1" "$2" "$3")" = "$4" ]; }
reported_by() {  # reported_by NS POD TEXT: its Scheduled event names TEXT (component or instance)
  k get events -n "$1" --field-selector "involvedObject.name=$2,reason=Scheduled" \
    -o jsonpath='{range .items[*]}{.reportingComponent} {.reportingInstance} {.source.component}{"\n"}{end}' | grep -q -- "$3"
}
gang_all_or_none() {  # gang_all_or_none NS GANG SIZE: bound count is 0 or SIZE
  local b; b=$(bound "$1" "tidal.dev/gang=$2")
  [ "$b" -eq 0 ] || [ "$b" -eq "$3" ] || { e2e_log "  gang $1/$2: $b of $3 bound"; return 1; }
}
new_ns() { k create namespace "$1" >/dev/null; }
cleanup_ns() {  # delete the case's pods (no namespace controller here: the namespace itself stays)
  [ "${TIDAL_E2E_NO_CLEANUP:-0}" = 1 ] && return 0
  k delete pods -n "$1" --all --wait=false >/dev/null 2>&1 || true
  until_true 60 eval "[ -z \"\$(k get pods -n '$1' -o name)\" ]" ||
    e2e_log "  warning: pods of $1 still exist after 60 s"
}
engine_alive() { e2e_alive "$BASE" tidal-engine; }
sched_alive() { e2e_alive "$BASE" tidal-scheduler; }
ms_since() { echo $(($(e2e_now_ms) - $1)); }

# --- cases -----------------------------------------------------------------------------------------------
case_go-unit() {
  local t0; t0=$(e2e_now_ms)
  if (cd "$E2E_ROOT/shim/kube" && go test -count=1 ./pkg/... 2>&1 | grep -v '^I[0-9]' | tail -n 20); then
    check "go test ./pkg/... passed" true
  else
    fail "go test ./pkg/... failed"
  fi
  timings+=("go-unit=$(ms_since "$t0")ms")
}

case_smoke() {
  local ns=e2e-smoke t0 node
  new_ns $ns
  t0=$(e2e_now_ms)
  pods $ns gpu1 1 1 tidal-scheduler | k create -f - >/dev/null
  check "a 1-GPU Tidal pod is Running" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 1
  timings+=("smoke-1pod-running=$(ms_since "$t0")ms")
  node=$(k get pod -n $ns gpu1-0 -o jsonpath='{.spec.nodeName}')
  check "it is bound to a fake GPU node ($node)" test -n "$node"
  check "it was scheduled by tidal-scheduler" until_true 10 reported_by $ns gpu1-0 tidal-scheduler
  pods $ns gpu9 1 9 tidal-scheduler | k create -f - >/dev/null
  check "a 9-GPU pod (> 8 per node) is Unschedulable" until_true "$TIDAL_E2E_TIMEOUT" \
    pod_field_is $ns gpu9-0 '{.status.conditions[?(@.type=="PodScheduled")].reason}' Unschedulable
  check "the 9-GPU pod is not bound" test -z "$(k get pod -n $ns gpu9-0 -o jsonpath='{.spec.nodeName}')"
  pods $ns short 1 8 tidal-scheduler '{}' '{"sim.tidal.dev/runtime": "2s"}' | k create -f - >/dev/null
  check "an 8-GPU pod with a 2 s runtime turns Succeeded" until_true "$TIDAL_E2E_TIMEOUT" \
    pod_field_is $ns short-0 '{.status.phase}' Succeeded
  cleanup_ns $ns
}

case_gang-leaf() {
  local ns=e2e-gang t0 l
  new_ns $ns
  t0=$(e2e_now_ms)
  gang $ns train 16 leaf | k create -f - >/dev/null
  check "all 16 pods of gang train are Running" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 16 tidal.dev/gang=train
  timings+=("gang16-running=$(ms_since "$t0")ms")
  check "gang train is all-or-nothing (16 of 16 bound)" gang_all_or_none $ns train 16
  check "16 distinct nodes" test "$(k get pods -n $ns -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | grep -c .)" -eq 16
  l=$(leaves $ns tidal.dev/gang=train)
  check "all inside one leaf ($(echo "$l" | tr '\n' ' '))" test "$(echo "$l" | grep -c .)" -eq 1
  check "no FailedScheduling event (planned right the first time)" no_event $ns FailedScheduling ""
  cleanup_ns $ns
}

case_contention() {
  local ns=e2e-contention t0 first second bx by
  new_ns $ns
  t0=$(e2e_now_ms)
  { gang $ns gx 40; gang $ns gy 40; } | k create -f - >/dev/null
  both_settled() {
    bx=$(bound $ns tidal.dev/gang=gx); by=$(bound $ns tidal.dev/gang=gy)
    { [ "$bx" -eq 40 ] && [ "$by" -eq 0 ]; } || { [ "$bx" -eq 0 ] && [ "$by" -eq 40 ]; }
  }
  check "one 40-node gang runs, the other is not bound at all" until_true "$TIDAL_E2E_TIMEOUT" both_settled
  timings+=("gang40-bound=$(ms_since "$t0")ms")
  if [ "$(bound $ns tidal.dev/gang=gx)" -eq 40 ]; then first=gx second=gy; else first=gy second=gx; fi
  sleep 3
  check "3 s later the waiting gang $second still has no pod bound" test "$(bound $ns tidal.dev/gang=$second)" -eq 0
  check "the waiting gang's pods say why (FailedScheduling)" has_event $ns FailedScheduling "$second-"
  t0=$(e2e_now_ms)
  k delete pods -n $ns -l tidal.dev/gang=$first --wait=false >/dev/null
  check "after $first is deleted, all 40 pods of $second are Running" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 40 tidal.dev/gang=$second
  timings+=("gang40-after-delete=$(ms_since "$t0")ms")
  check "gang $second is whole" gang_all_or_none $ns "$second" 40
  cleanup_ns $ns
}

case_nvlink() {
  local ns=e2e-nvlink
  new_ns $ns
  gang $ns wide 5 nvlink | k create -f - >/dev/null
  check "the refusal reaches the pods as a FailedScheduling event naming nvlink and the largest domain" \
    until_true "$TIDAL_E2E_TIMEOUT" has_event $ns FailedScheduling "topology-required nvlink" "largest holds 4"
  events $ns FailedScheduling | head -n 1 | cut -f3 | sed 's/^/    event: /' >&2
  check "no pod of the gang is bound" test "$(bound $ns)" -eq 0
  cleanup_ns $ns
}

case_default() {
  local ns=e2e-default t0 l leaf
  new_ns $ns
  t0=$(e2e_now_ms)
  for leaf in 0 1 2; do
    pods $ns "other-l$leaf" 16 8 default-scheduler '{"team": "other"}' '{}' "{\"topology.tidal.dev/leaf\": \"leaf-$leaf\"}" | k create -f - >/dev/null
  done
  check "48 default-scheduler pods fill leaves 0-2" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 48 team=other
  timings+=("default48-running=$(ms_since "$t0")ms")
  check "they were bound by the default profile" until_true 10 reported_by $ns other-l0-0 default-scheduler
  sleep 0.5  # the engine hears of the bindings through the Sync stream (50 ms batches)
  t0=$(e2e_now_ms)
  gang $ns tidal 16 leaf | k create -f - >/dev/null
  check "Tidal's 16-node leaf gang is Running" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 16 tidal.dev/gang=tidal
  timings+=("gang16-beside-default=$(ms_since "$t0")ms")
  l=$(leaves $ns tidal.dev/gang=tidal)
  check "it landed in leaf-3, the only free leaf (got: $(echo "$l" | tr '\n' ' '))" test "$l" = leaf-3
  check "the engine never planned onto a node the default pods hold (no FailedScheduling)" \
    no_event $ns FailedScheduling "tidal-"
  pods $ns extra 1 1 tidal-scheduler | k create -f - >/dev/null
  check "one more 1-GPU Tidal pod stays pending: the cluster is full" \
    until_true "$TIDAL_E2E_TIMEOUT" has_event $ns FailedScheduling "extra-0"
  check "and is not bound" test -z "$(k get pod -n $ns extra-0 -o jsonpath='{.spec.nodeName}')"
  cleanup_ns $ns
}

case_preempt() {
  local ns=e2e-preempt t0 l g whole=0 gone=""
  new_ns $ns
  t0=$(e2e_now_ms)
  for g in low1 low2 low3 low4; do
    e2e_gang $ns $g 16 8 "" '"tidal.dev/topology-required": "leaf", "tidal.dev/preemptible": "true"' | k create -f - >/dev/null
  done
  check "four preemptible leaf gangs fill all 64 nodes" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 64
  sleep 0.5  # the engine hears of the bindings through the Sync stream
  t0=$(e2e_now_ms)
  E2E_POD_PRIORITY=1000 e2e_gang $ns high 16 8 "" '"tidal.dev/topology-required": "leaf"' | k create -f - >/dev/null
  check "the higher-priority gang preempts and runs whole" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 16 tidal.dev/gang=high
  timings+=("preempt-gang16-running=$(ms_since "$t0")ms")
  l=$(leaves $ns tidal.dev/gang=high)
  check "inside one leaf ($(echo "$l" | tr '\n' ' '))" test "$(echo "$l" | grep -c .)" -eq 1
  check "a TidalPreempting event names the victims" has_event $ns TidalPreempting "tidal-engine preempts"
  events $ns TidalPreempting | head -n 1 | cut -f3 | cut -c1-160 | sed 's/^/    event: /' >&2
  for g in low1 low2 low3 low4; do
    case $(bound $ns tidal.dev/gang=$g) in
      16) whole=$((whole + 1)) ;;
      0) gone+=" $g" ;;
      *) fail "gang $g was preempted partly ($(bound $ns tidal.dev/gang=$g) of 16 left)" ;;
    esac
  done
  check "exactly one low gang was evicted, whole ($gone); the other three are untouched" test "$whole" -eq 3
  cleanup_ns $ns
}

case_backfill() {
  local ns=e2e-backfill t0 leaf n0 l
  new_ns $ns
  t0=$(e2e_now_ms)
  for leaf in 0 1 2 3; do
    l=10h; [ $leaf = 0 ] && l=30m
    pods $ns "fill-l$leaf" 16 8 tidal-scheduler "{\"leaf\": \"$leaf\"}" "{\"tidal.dev/runtime-limit\": \"$l\"}" \
      "{\"topology.tidal.dev/leaf\": \"leaf-$leaf\"}" | k create -f - >/dev/null
  done
  check "64 fill pods run (leaf-0's declared for 30 m, the others for 10 h)" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 64
  sleep 0.5  # the engine hears of the bindings through the Sync stream
  e2e_gang $ns big 16 8 "" '"tidal.dev/runtime-limit": "1h"' | k create -f - >/dev/null
  check "the 16-node gang waits with a reservation (FailedScheduling says when)" \
    until_true "$TIDAL_E2E_TIMEOUT" has_event $ns FailedScheduling "big-" "reserved to start in"
  events $ns FailedScheduling | grep big- | head -n 1 | cut -f3 | cut -c1-200 | sed 's/^/    event: /' >&2
  n0=$(pod_field $ns fill-l0-0 '{.spec.nodeName}')
  k delete pod -n $ns fill-l0-0 --wait=false >/dev/null
  check "the engine sees $n0 free (the gang retries: room for 1 of 16)" \
    until_true "$TIDAL_E2E_TIMEOUT" has_event $ns FailedScheduling "big-" "room for 1 of 16" "reserved to start in"
  pods $ns long 1 1 tidal-scheduler '{}' '{"tidal.dev/runtime-limit": "10h"}' | k create -f - >/dev/null
  check "a 1-GPU pod declared for 10 h is refused the free node $n0 (held for the gang)" \
    until_true "$TIDAL_E2E_TIMEOUT" has_event $ns FailedScheduling "long-0" "held for earlier reservations"
  check "and is not bound" test -z "$(pod_field $ns long-0 '{.spec.nodeName}')"
  pods $ns short 1 1 tidal-scheduler '{}' '{"tidal.dev/runtime-limit": "5m"}' | k create -f - >/dev/null
  check "a 1-GPU pod declared for 5 m backfills onto $n0" until_true "$TIDAL_E2E_TIMEOUT" pod_field_is $ns short-0 '{.spec.nodeName}' "$n0"
  t0=$(e2e_now_ms)
  k delete pods -n $ns -l leaf=0 --wait=false >/dev/null
  k delete pod -n $ns short-0 --wait=false >/dev/null
  check "once leaf-0 frees, the gang runs whole" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 16 tidal.dev/gang=big
  timings+=("reserved-gang16-running=$(ms_since "$t0")ms")
  l=$(leaves $ns tidal.dev/gang=big)
  check "in leaf-0 (got: $(echo "$l" | tr '\n' ' '))" test "$l" = leaf-0
  check "the 10 h pod is still not bound" test -z "$(pod_field $ns long-0 '{.spec.nodeName}')"
  cleanup_ns $ns
}

case_overdue() {
  local ns=e2e-overdue t0 ms
  new_ns $ns
  { pods $ns over 1 1 tidal-scheduler '{}' '{"tidal.dev/runtime-limit": "3s"}'
    pods $ns within 1 1 tidal-scheduler '{}' '{"tidal.dev/runtime-limit": "10h"}'
    pods $ns theirs 1 1 default-scheduler '{}' '{"tidal.dev/runtime-limit": "3s"}'; } | k create -f - >/dev/null
  check "three 1-GPU pods run (Tidal's declared for 3 s and 10 h, default-scheduler's for 3 s)" \
    until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 3
  t0=$(e2e_now_ms)
  check "the 3 s pod is evicted with an event naming its limit and the grace" \
    until_true "$TIDAL_E2E_TIMEOUT" has_event $ns TidalRuntimeLimitExceeded "over-0" "runtime-limit of 3s (grace 2s)"
  ms=$(ms_since "$t0")
  events $ns TidalRuntimeLimitExceeded | head -n 1 | cut -f3 | sed 's/^/    event: /' >&2
  check "not before its limit + grace ($ms ms after it was seen Running; bound a moment before)" test "$ms" -ge 3000
  check "it is gone" until_true "$TIDAL_E2E_TIMEOUT" eval "[ -z \"\$(k get pod -n $ns over-0 -o name 2>/dev/null)\" ]"
  sleep 1
  check "the 10 h pod still runs" pod_field_is $ns within-0 '{.status.phase}' Running
  check "the default-scheduler pod is not Tidal's to evict" pod_field_is $ns theirs-0 '{.status.phase}' Running
  timings+=("overdue-evicted=${ms}ms")
  cleanup_ns $ns
}

# restart_engine CONFIG: stop tidal-engine and start it again with CONFIG (the scheduler resyncs).
restart_engine() {
  e2e_stop "$BASE" tidal-engine 10 || true
  TIDAL_E2E_ENGINE_CONFIG=$1 "$E2E_LIB/tidal-up.sh" "$BASE" engine
}

case_reclaim() {
  local ns=e2e-reclaim t0 l cfg=$BASE/engine-queues.yaml a_left
  new_ns $ns
  { cat "$E2E_DIR/config/engine.yaml"
    printf 'queues:\n  - {name: a, nominal: {gpus: 256}}\n  - {name: b, nominal: {gpus: 256}}\n'; } >"$cfg"
  restart_engine "$cfg"
  pods $ns a 64 8 tidal-scheduler '{"tidal.dev/queue": "a"}' | k create -f - >/dev/null
  check "queue a's 64 non-preemptible pods fill the cluster (a borrows b's unused half)" \
    until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 64
  sleep 1.5  # preemption.minRuntime is 1 s here
  t0=$(e2e_now_ms)
  e2e_gang $ns b 16 8 '"tidal.dev/queue": "b"' '"tidal.dev/topology-required": "leaf"' | k create -f - >/dev/null
  check "queue b's 16-node gang (within its nominal) takes its share back and runs" \
    until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 16 tidal.dev/gang=b
  timings+=("reclaim-gang16-running=$(ms_since "$t0")ms")
  l=$(leaves $ns tidal.dev/gang=b)
  check "inside one leaf ($(echo "$l" | tr '\n' ' '))" test "$(echo "$l" | grep -c .)" -eq 1
  check "b's TidalPreempting event says it reclaims from queue a" has_event $ns TidalPreempting "tidal-engine reclaims" "from queue a"
  check "the victims' TidalDisrupted events name the quota reclaim by b" has_event $ns TidalDisrupted "quota reclaim by $ns/b-" "(queue b)"
  a_left=$(k get pods -n $ns -l '!tidal.dev/gang' -o name | grep -c . || true)
  check "exactly 16 of a's 64 pods were evicted ($a_left left)" test "$a_left" -eq 48
  local m; m=$(curl -sf "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/metrics" | grep '^tidal_preemptions_total' || true)
  # Victims proposed, by reason: a retry while evictions are in flight may propose one again.
  check "the engine proposed them as reclaim, never by priority ($(echo "$m" | tr '\n' ' '))" \
    eval "echo \"\$m\" | awk '/reason=\"reclaim\"/ {r = \$2} /reason=\"priority\"/ {p = \$2} END {exit !(r >= 16 && p + 0 == 0)}'"
  cleanup_ns $ns
  restart_engine "$E2E_DIR/config/engine.yaml"
}

case_kill() {
  local ns=e2e-kill t0 g pid rest
  new_ns $ns
  # Mid-run: as soon as a gang's plan is partly reserved (members wait in Permit for the others),
  # kill -9 the engine. The watcher starts before the gangs exist, so it cannot miss the window.
  local mid watch=$BASE/kill-watch.txt
  "$TIDAL_E2E_BIN/tidal-explain" --engine "unix://$BASE/run/engine.sock" --wait-partial 30s $ns/g1 $ns/g2 $ns/g3 >"$watch" 2>&1 &
  local watcher=$!
  sleep 0.3
  { gang $ns g1 16 leaf; gang $ns g2 16 leaf; gang $ns g3 16 leaf; } | k create -f - >/dev/null
  wait "$watcher" || true
  mid=$(grep '^plan:' "$watch" || true)
  read -r pid rest <"$BASE/run/tidal-engine.pid"
  kill -KILL "$pid"
  t0=$(e2e_now_ms)
  check "the engine was killed while a gang was partly reserved (${mid%%:*reserved*}...)" test -n "$mid"
  e2e_log "  killed tidal-engine (pid $pid) at: $mid"
  e2e_log "  $(bound $ns) of 48 pods bound right after the kill"
  until_true 10 eval "! kill -0 $pid 2>/dev/null" || true
  rm -f "$BASE/run/tidal-engine.pid"
  gang $ns g4 16 leaf | k create -f - >/dev/null
  check "while the engine is down, g4's pods get a 'tidal-engine unreachable' event" \
    until_true 30 has_event $ns TidalEngineUnreachable "g4-" "tidal-engine unreachable"
  check "and FailedScheduling events saying so" until_true 10 has_event $ns FailedScheduling "g4-" "tidal-engine unreachable"
  sleep 2  # bindings allowed before the kill have finished by now
  for g in g1 g2 g3 g4; do check "engine down: gang $g is all-or-nothing ($(bound $ns tidal.dev/gang=$g) bound)" gang_all_or_none $ns $g 16; done
  check "tidal-scheduler survived the engine's death" sched_alive
  e2e_log "  restarting tidal-engine after $(ms_since "$t0")ms down"
  "$E2E_LIB/tidal-up.sh" "$BASE" engine
  t0=$(e2e_now_ms)
  check "after the restart all 4 gangs (64 pods) are Running" until_true 90 all_running $ns 64
  e2e_log "  scheduler: members waiting in Permit released when the engine died: $(grep -c 'released gang members waiting in Permit' "$BASE/log/tidal-scheduler.log" || true) gang(s);" \
    "at the resync: $(grep -o 'releasedFromPermit=[0-9]*' "$BASE/log/tidal-scheduler.log" | tail -n 1)"
  timings+=("resume-after-restart=$(ms_since "$t0")ms")
  for g in g1 g2 g3 g4; do
    check "gang $g whole and in one leaf" eval "[ \$(bound $ns tidal.dev/gang=$g) -eq 16 ] && [ \$(leaves $ns tidal.dev/gang=$g | grep -c .) -eq 1 ]"
  done
  gang $ns g5 16 leaf | k create -f - >/dev/null
  sleep 3
  check "g5 (no room left) waits whole" test "$(bound $ns tidal.dev/gang=g5)" -eq 0
  cleanup_ns $ns
}

case_invalid() {
  local ns=e2e-invalid
  new_ns $ns
  pods $ns bad 1 1 tidal-scheduler '{"tidal.dev/gang": "bad"}' '{"tidal.dev/gang-size": "many"}' | k create -f - >/dev/null
  check "the pod gets a TidalInvalidSpec event naming tidal.dev/gang-size, the value and the accepted values" \
    until_true "$TIDAL_E2E_TIMEOUT" has_event $ns TidalInvalidSpec "tidal.dev/gang-size" '"many"' "1..10000"
  events $ns TidalInvalidSpec | head -n 1 | cut -f3 | sed 's/^/    event: /' >&2
  check "it is not bound" test -z "$(k get pod -n $ns bad-0 -o jsonpath='{.spec.nodeName}')"
  pods $ns good 1 1 tidal-scheduler | k create -f - >/dev/null
  check "a valid pod created after it still runs" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 1
  k annotate pod -n $ns bad-0 --overwrite tidal.dev/gang-size=1 >/dev/null
  check "fixing the annotation lets the pod run" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 2
  check "engine and scheduler still run" eval "engine_alive && sched_alive"
  cleanup_ns $ns
}

case_deploy() {
  local out
  # The namespace must exist for a server-side dry run of namespaced objects (the dry-run Namespace is not stored).
  k create namespace tidal-system >/dev/null 2>&1 || true
  if out=$(k apply --dry-run=server -k "$E2E_ROOT/deploy/overlays/dev" 2>&1); then
    check "kubectl apply --dry-run=server -k deploy/overlays/dev ($(echo "$out" | grep -c 'server dry run') objects)" true
  else
    echo "$out" | sed 's/^/    /' >&2
    fail "kubectl apply --dry-run=server -k deploy/overlays/dev"
  fi
  # The KubeSchedulerConfiguration inside the dev overlay's ConfigMap loads in the real binary.
  local cfg=$BASE/deploy-scheduler-config.yaml
  k kustomize "$E2E_ROOT/deploy/overlays/dev" |
    awk '/^  scheduler-config\.yaml: \|/ {on = 1; next} on && /^    / {print substr($0, 5); next} {on = 0}' >"$cfg"
  # In a cluster it uses its service account; here, the test kubeconfig (--kubeconfig is ignored with --config).
  grep -q '^clientConnection:' "$cfg" || printf 'clientConnection:\n  kubeconfig: %s\n' "$BASE/kubeconfig" >>"$cfg"
  if out=$("$TIDAL_E2E_BIN/tidal-scheduler" --config="$cfg" \
      --write-config-to="$BASE/deploy-scheduler-config.out.yaml" 2>&1) && grep -q 'engineAddress: unix:///run/tidal/sock/engine.sock' "$BASE/deploy-scheduler-config.out.yaml"; then
    check "the overlay's KubeSchedulerConfiguration loads in tidal-scheduler (--write-config-to)" true
  else
    echo "$out" | tail -n 5 | sed 's/^/    /' >&2
    fail "the overlay's KubeSchedulerConfiguration does not load in tidal-scheduler"
  fi
  if out=$(k apply --dry-run=server -k "$E2E_ROOT/deploy/base" 2>&1); then
    check "kubectl apply --dry-run=server -k deploy/base" true
  else
    echo "$out" | sed 's/^/    /' >&2
    fail "kubectl apply --dry-run=server -k deploy/base"
  fi
}

# --- cases in cases/*.sh ------------------------------------------------------------------------------
for f in "$E2E_DIR"/cases/*.sh; do
  # shellcheck disable=SC1090
  [ -e "$f" ] && source "$f"
done
# kill, invalid and deploy stay last (kill restarts the engine).
ALL_CASES=("${ALL_CASES[@]:0:10}" "${MORE_CASES[@]}" "${ALL_CASES[@]:10}")
CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=("${ALL_CASES[@]}")
for c in "${CASES[@]}"; do
  [[ " ${ALL_CASES[*]} ${EXPLICIT_CASES[*]} " == *" $c "* ]] || { echo "run.sh: unknown case $c (known: ${ALL_CASES[*]})" >&2; exit 2; }
done

# --- main ------------------------------------------------------------------------------------------------
if [ "${TIDAL_E2E_SKIP_BUILD:-0}" != 1 ]; then
  "$E2E_ROOT/hack/build-go-tools.sh"
fi
need_cluster=0
for c in "${CASES[@]}"; do [ "$c" = go-unit ] || need_cluster=1; done
if [ "$need_cluster" = 1 ]; then
  # shellcheck disable=SC2086
  set -- ${TIDAL_E2E_FABRIC:-2 2 4 4}
  "$E2E_LIB/cluster-up.sh" "$BASE"
  "$E2E_LIB/make-nodes.sh" "$BASE" "$@"
  "$E2E_LIB/tidal-up.sh" "$BASE" all
fi
for c in "${CASES[@]}"; do
  e2e_log "=== $c"
  CASE_OK=1 CASE=$c
  t0=$(e2e_now_ms)
  for h in "${BEFORE_CASE_HOOKS[@]}"; do "$h" "$c" || true; done
  if [ "$need_cluster" = 1 ] && [ "$c" != go-unit ]; then
    engine_alive || { e2e_log "tidal-engine is not running: restarting it"; "$E2E_LIB/tidal-up.sh" "$BASE" engine; }
  fi
  "case_$c" || CASE_OK=0
  if [ "$CASE_OK" = 1 ]; then passed=$((passed + 1)); e2e_log "PASS: $c ($(ms_since "$t0")ms)"
  else failed=$((failed + 1)); failures+=("$c"); e2e_log "FAIL: $c ($(ms_since "$t0")ms)"; fi
done
