#!/usr/bin/env bash
# End-to-end smoke test of the Go shim against a real control plane (etcd + kube-apiserver + kwok):
#   1. builds what is missing (hack/build-go-tools.sh; ~1 s when everything is up to date)
#   2. cluster-up, 16 fake GPU nodes (fabric 2 blocks x 2 leaves x 2 NVLink domains x 2 nodes)
#   3. starts build/bin/tidal-scheduler with test/e2e/config/scheduler-config.yaml
#   4. checks: a pod (schedulerName tidal-scheduler, 1 nvidia.com/gpu) is bound and turns Running;
#      a pod asking for 9 GPUs (> 8 per node) stays Pending as Unschedulable; a pod annotated
#      sim.tidal.dev/runtime: 2s turns Succeeded; deleting a pod removes it.
# Always tears everything down (also on failure / Ctrl-C). Exits non-zero on any failure.
# Env: TIDAL_E2E_BASE (scratch dir, default a fresh mktemp dir, removed afterwards unless
#      TIDAL_E2E_KEEP=1), TIDAL_E2E_SKIP_BUILD=1 (do not run the build script), plus lib/common.sh's.
set -euo pipefail
# shellcheck source=test/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

KEEP=${TIDAL_E2E_KEEP:-0}
if [ -n "${TIDAL_E2E_BASE:-}" ]; then BASE=$TIDAL_E2E_BASE; mkdir -p "$BASE"; else BASE=$(mktemp -d /tmp/tidal-e2e.XXXXXX); fi
BASE=$(cd "$BASE" && pwd)

passed=0 failed=0
finish() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "$rc" -ne 0 ] && [ -f "$BASE/log/tidal-scheduler.log" ]; then
    e2e_log "tidal-scheduler log (last 40 lines):"; tail -n 40 "$BASE/log/tidal-scheduler.log" >&2
  fi
  "$E2E_LIB/cluster-down.sh" "$BASE" || rc=1
  if [ "$KEEP" = 1 ]; then e2e_log "kept $BASE (logs in $BASE/log)"; else rm -rf "${BASE:?}"; fi
  [ "$rc" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1
  echo "smoke: $passed passed, $failed failed"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

check() {  # check DESC CMD...: run one check, count it, stop at the first failure
  local desc=$1; shift
  if "$@"; then passed=$((passed + 1)); e2e_log "PASS: $desc"
  else failed=$((failed + 1)); e2e_log "FAIL: $desc"; exit 1; fi
}

if [ "${TIDAL_E2E_SKIP_BUILD:-0}" != 1 ]; then
  "$E2E_ROOT/hack/build-go-tools.sh"
fi
SCHED=$TIDAL_E2E_BIN/tidal-scheduler
[ -x "$SCHED" ] || e2e_die "$SCHED missing: run hack/build-go-tools.sh"
e2e_port_free "$TIDAL_E2E_SCHED_PORT" || e2e_die "port 127.0.0.1:$TIDAL_E2E_SCHED_PORT is in use (set TIDAL_E2E_SCHED_PORT)"

"$E2E_LIB/cluster-up.sh" "$BASE"
"$E2E_LIB/make-nodes.sh" "$BASE" 2 2 2 2
k() { e2e_kubectl "$BASE" "$@"; }

# --- scheduler ------------------------------------------------------------------------------------------
sed "s|@KUBECONFIG@|$BASE/kubeconfig|" "$E2E_DIR/config/scheduler-config.yaml" >"$BASE/scheduler-config.yaml"
T0=$(e2e_now_ms)
e2e_start "$BASE" tidal-scheduler "$SCHED" --config="$BASE/scheduler-config.yaml" \
  --authentication-kubeconfig="$BASE/kubeconfig" --authorization-kubeconfig="$BASE/kubeconfig" \
  --authentication-skip-lookup \
  --bind-address=127.0.0.1 --secure-port="$TIDAL_E2E_SCHED_PORT" --v=2
e2e_wait "$BASE" tidal-scheduler "tidal-scheduler /readyz" curl -skf "https://127.0.0.1:$TIDAL_E2E_SCHED_PORT/readyz"
e2e_log "tidal-scheduler ready after $(($(e2e_now_ms) - T0))ms"
check "Tidal plugin was initialized" grep -q 'Tidal plugin initialized' "$BASE/log/tidal-scheduler.log"

# --- pods -----------------------------------------------------------------------------------------------
pod() {  # pod NAME GPUS [ANNOTATIONS-JSON]
  local ann=${3:-}; [ -n "$ann" ] || ann='{}'
  cat <<EOF
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "$1", "namespace": "default", "annotations": $ann},
 "spec": {"schedulerName": "tidal-scheduler",
          "containers": [{"name": "main", "image": "fake.invalid/train:1",
                          "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "$2"},
                                        "limits":   {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "$2"}}}]}}
EOF
}
wait_jsonpath() {  # wait_jsonpath OBJ JSONPATH=VALUE
  k wait --for=jsonpath="$2" "$1" --timeout="${TIDAL_E2E_TIMEOUT}s" >/dev/null
}

T0=$(e2e_now_ms)
pod gpu-1 1 | k create -f - >/dev/null
check "pod gpu-1 (1 GPU) is Running" wait_jsonpath pod/gpu-1 '{.status.phase}=Running'
node=$(k get pod gpu-1 -o jsonpath='{.spec.nodeName}')
e2e_log "gpu-1 bound to $node and Running after $(($(e2e_now_ms) - T0))ms"
check "gpu-1 is bound to a fake GPU node" test -n "$node"
check "gpu-1 was scheduled by tidal-scheduler" \
  sh -c "'$TIDAL_E2E_TOOLS_BIN/kubectl' --kubeconfig='$BASE/kubeconfig' get events --field-selector involvedObject.name=gpu-1,reason=Scheduled -o jsonpath='{.items[*].reportingComponent}' | grep -q tidal-scheduler"
check "gpu-1 is Ready" wait_jsonpath pod/gpu-1 '{.status.conditions[?(@.type=="Ready")].status}=True'

pod gpu-9 9 | k create -f - >/dev/null
check "pod gpu-9 (9 GPUs > 8 per node) is Unschedulable" \
  wait_jsonpath pod/gpu-9 '{.status.conditions[?(@.type=="PodScheduled")].reason}=Unschedulable'
check "gpu-9 is not bound" test -z "$(k get pod gpu-9 -o jsonpath='{.spec.nodeName}')"

pod gpu-short 8 '{"sim.tidal.dev/runtime": "2s"}' | k create -f - >/dev/null
check "pod gpu-short (8 GPUs, runtime 2s) turns Succeeded" wait_jsonpath pod/gpu-short '{.status.phase}=Succeeded'

check "deleting gpu-1 removes it" k delete pod gpu-1 --timeout="${TIDAL_E2E_TIMEOUT}s"
check "gpu-1 is gone" sh -c "! '$TIDAL_E2E_TOOLS_BIN/kubectl' --kubeconfig='$BASE/kubeconfig' get pod gpu-1 2>/dev/null"

rss=""
for n in etcd kube-apiserver kwok tidal-scheduler; do rss+=" $n=$(( $(e2e_rss_kb "$BASE" "$n") / 1024 ))MiB"; done
e2e_log "RSS:$rss"
check "tidal-scheduler is still running" e2e_alive "$BASE" tidal-scheduler
