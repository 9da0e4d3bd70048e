#!/usr/bin/env bash
# Starts kube-controller-manager (build/tools/bin, built from tools/k8s like kube-apiserver) on a cluster
# made by cluster-up.sh, with only the controllers a demo needs: Deployments and their ReplicaSets, Jobs,
# garbage collection and namespace deletion. No node-lifecycle controller: kwok nodes send no heartbeats
# (TIDAL_E2E_KWOK_LEASE_SECONDS=0) and would be marked NotReady.
# Usage: kcm-up.sh BASE      (registered in BASE/run, so cluster-down.sh stops it)
# Env:   TIDAL_E2E_KCM_PORT (secure port, default 20257), TIDAL_E2E_KCM_CONTROLLERS.
set -euo pipefail
# shellcheck source=test/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

BASE=${1:?usage: kcm-up.sh BASE}
BASE=$(cd "$BASE" && pwd)
KCM=$TIDAL_E2E_TOOLS_BIN/kube-controller-manager
[ -x "$KCM" ] || e2e_die "$KCM missing: run hack/build-go-tools.sh kube-controller-manager"
e2e_port_free "$TIDAL_E2E_KCM_PORT" || e2e_die "port 127.0.0.1:$TIDAL_E2E_KCM_PORT is in use (set TIDAL_E2E_KCM_PORT)"
: "${TIDAL_E2E_KCM_CONTROLLERS:=deployment-controller,replicaset-controller,job-controller,garbage-collector-controller,namespace-controller}"
t0=$(e2e_now_ms)
e2e_start "$BASE" kube-controller-manager "$KCM" --kubeconfig="$BASE/kubeconfig" \
  --authentication-kubeconfig="$BASE/kubeconfig" --authorization-kubeconfig="$BASE/kubeconfig" \
  --authentication-skip-lookup \
  --bind-address=127.0.0.1 --secure-port="$TIDAL_E2E_KCM_PORT" --leader-elect=false \
  --controllers="$TIDAL_E2E_KCM_CONTROLLERS" --use-service-account-credentials=false \
  --kube-api-qps=200 --kube-api-burst=400 --v=1
e2e_wait "$BASE" kube-controller-manager "kube-controller-manager /healthz" curl -skf "https://127.0.0.1:$TIDAL_E2E_KCM_PORT/healthz"
e2e_log "kube-controller-manager ready after $(($(e2e_now_ms) - t0))ms (controllers: $TIDAL_E2E_KCM_CONTROLLERS)"
