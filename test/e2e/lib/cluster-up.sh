#!/usr/bin/env bash
# Starts a kubelet-less Kubernetes control plane on 127.0.0.1 for end-to-end tests:
#   etcd 3.6 -> kube-apiserver (openssl test PKI, static bearer token, RBAC) -> kwok (fake nodes/pods)
# and waits until each is ready by polling. Returns once the cluster is usable; the processes keep
# running in the background until test/e2e/lib/cluster-down.sh BASE. If anything fails on the way up,
# everything already started is stopped again and the script exits non-zero.
#
# Usage: cluster-up.sh BASE       (BASE: a scratch directory; it is wiped first)
# Leaves in BASE:
#   kubeconfig       bearer-token kubeconfig (admin, system:masters); also pki/cert.kubeconfig
#   env              shell snippet: KUBECONFIG, KUBECTL, ports (source it)
#   run/NAME.pid     "PID EXE" of etcd, kube-apiserver, kwok (and of anything a test registers there)
#   log/NAME.log     component logs
#   kwok.yaml        kwok Stage config (see kwok-config.sh)
# Needs: build/tools/bin/{etcd,kube-apiserver,kubectl,kwok} (hack/build-go-tools.sh), openssl, curl.
# Env overrides: see lib/common.sh (TIDAL_E2E_*_PORT, TIDAL_E2E_TOOLS_BIN, TIDAL_E2E_TIMEOUT, ...).
set -euo pipefail
# shellcheck source=test/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

BASE=${1:?usage: cluster-up.sh BASE}
e2e_need openssl curl
B=$TIDAL_E2E_TOOLS_BIN
for b in etcd kube-apiserver kubectl kwok; do
  [ -x "$B/$b" ] || e2e_die "$B/$b missing: run hack/build-go-tools.sh first"
done
for p in "$TIDAL_E2E_ETCD_PORT" "$TIDAL_E2E_ETCD_PEER_PORT" "$TIDAL_E2E_APISERVER_PORT" "$TIDAL_E2E_KWOK_PORT"; do
  e2e_port_free "$p" || e2e_die "port 127.0.0.1:$p is in use (another cluster? run cluster-down.sh on its BASE, or set TIDAL_E2E_*_PORT)"
done

mkdir -p "$BASE"; BASE=$(cd "$BASE" && pwd)
[ "$BASE" != / ] || e2e_die "refusing BASE=/"
if [ -d "$BASE/run" ] && ls "$BASE"/run/*.pid >/dev/null 2>&1; then
  e2e_log "BASE has pid files from an earlier run: stopping those first"
  "$E2E_LIB/cluster-down.sh" "$BASE"
fi
rm -rf "${BASE:?}"/{run,log,etcd,pki,kubeconfig,env,kwok.yaml}
mkdir -p "$BASE"/{run,log,etcd}

ok=0
cleanup_on_failure() { [ "$ok" = 1 ] || { e2e_log "cluster-up failed: tearing down"; "$E2E_LIB/cluster-down.sh" "$BASE" || true; }; }
trap cleanup_on_failure EXIT
trap 'exit 130' INT TERM

T0=$(e2e_now_ms)
P=$BASE/pki
"$E2E_LIB/gen-certs.sh" "$P" "$TIDAL_E2E_APISERVER_PORT" "$TIDAL_E2E_TOKEN"
cp "$P/token.kubeconfig" "$BASE/kubeconfig"
"$E2E_LIB/kwok-config.sh" "$BASE/kwok.yaml"
T_PREP=$(e2e_now_ms)

# --- etcd -------------------------------------------------------------------------------------------
ETCD_URL=http://127.0.0.1:$TIDAL_E2E_ETCD_PORT
PEER_URL=http://127.0.0.1:$TIDAL_E2E_ETCD_PEER_PORT
e2e_start "$BASE" etcd "$B/etcd" --name=tidal-e2e --data-dir="$BASE/etcd" \
  --listen-client-urls="$ETCD_URL" --advertise-client-urls="$ETCD_URL" \
  --listen-peer-urls="$PEER_URL" --initial-advertise-peer-urls="$PEER_URL" \
  --initial-cluster="tidal-e2e=$PEER_URL" --initial-cluster-state=new \
  --unsafe-no-fsync --quota-backend-bytes=$((4 * 1024 * 1024 * 1024)) \
  --auto-compaction-mode=periodic --auto-compaction-retention=5m --log-level=warn
e2e_wait "$BASE" etcd "etcd /health" sh -c "curl -sf '$ETCD_URL/health' | grep -q '\"health\":\"true\"'"
T_ETCD=$(e2e_now_ms)

# --- kube-apiserver ---------------------------------------------------------------------------------
# Flags: envtest's defaults + scheduler_perf's admission set. ServiceAccount admission is off (no
# controller-manager creates default service accounts here), TaintNodesByCondition is off (nothing would
# lift the not-ready taint from new nodes), Priority is off (no need for system priority classes).
# --endpoint-reconciler-type=none: the "kubernetes" service cannot point at a loopback address anyway
# (the reconciler would log an error every 10 s), and nothing runs in-cluster here.
# The upstream gang API (kube-scheduler v1.36's scheduling.k8s.io/v1alpha2 Workload and PodGroup,
# pod spec.schedulingGroup) is alpha: served with --runtime-config and the GenericWorkload gate (without
# it the apiserver drops spec.schedulingGroup from pods), PodGroup schedulingConstraints with
# TopologyAwareWorkloadScheduling. These are apiserver gates only: tidal-scheduler keeps GenericWorkload
# and GangScheduling off (their defaults), so no profile of it runs kube-scheduler's own pod-group cycle
# or GangScheduling plugin; Tidal gang-schedules its pods (test/e2e/cases/upstream.sh).
e2e_start "$BASE" kube-apiserver "$B/kube-apiserver" \
  --etcd-servers="$ETCD_URL" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$TIDAL_E2E_APISERVER_PORT" \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
  --client-ca-file="$P/ca.crt" --token-auth-file="$P/tokens.csv" \
  --authorization-mode=RBAC \
  --service-account-issuer="https://127.0.0.1:$TIDAL_E2E_APISERVER_PORT" \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true --endpoint-reconciler-type=none \
  --disable-admission-plugins=ServiceAccount,TaintNodesByCondition,Priority \
  --enable-priority-and-fairness=false --max-requests-inflight=2000 --max-mutating-requests-inflight=1000 \
  --runtime-config=scheduling.k8s.io/v1alpha2=true \
  --feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true \
  --profiling=false --v="$TIDAL_E2E_APISERVER_V"
API_URL=https://127.0.0.1:$TIDAL_E2E_APISERVER_PORT
e2e_wait "$BASE" kube-apiserver "kube-apiserver /readyz" \
  curl -sf --cacert "$P/ca.crt" -H "Authorization: Bearer $TIDAL_E2E_TOKEN" "$API_URL/readyz"
# /readyz can pass a moment before the bootstrap controller has created the default namespace.
e2e_wait "$BASE" kube-apiserver "namespace default" e2e_kubectl "$BASE" get namespace default
T_API=$(e2e_now_ms)

# --- kwok ---------------------------------------------------------------------------------------------
e2e_start "$BASE" kwok "$B/kwok" --kubeconfig="$BASE/kubeconfig" --config="$BASE/kwok.yaml" \
  --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --node-ip=127.0.0.1 --cidr=10.244.0.1/16 \
  --server-address="127.0.0.1:$TIDAL_E2E_KWOK_PORT" \
  --node-lease-duration-seconds="$TIDAL_E2E_KWOK_LEASE_SECONDS"
e2e_wait "$BASE" kwok "kwok /healthz" curl -sf "http://127.0.0.1:$TIDAL_E2E_KWOK_PORT/healthz"
T_KWOK=$(e2e_now_ms)

cat >"$BASE/env" <<EOF
# generated by test/e2e/lib/cluster-up.sh
export KUBECONFIG=$BASE/kubeconfig
export KUBECTL=$B/kubectl
export TIDAL_E2E_BASE=$BASE
export TIDAL_E2E_TOOLS_BIN=$TIDAL_E2E_TOOLS_BIN
export TIDAL_E2E_BIN=$TIDAL_E2E_BIN
export TIDAL_E2E_ETCD_PORT=$TIDAL_E2E_ETCD_PORT
export TIDAL_E2E_ETCD_PEER_PORT=$TIDAL_E2E_ETCD_PEER_PORT
export TIDAL_E2E_APISERVER_PORT=$TIDAL_E2E_APISERVER_PORT
export TIDAL_E2E_KWOK_PORT=$TIDAL_E2E_KWOK_PORT
export TIDAL_E2E_SCHED_PORT=$TIDAL_E2E_SCHED_PORT
export TIDAL_E2E_TOKEN=$TIDAL_E2E_TOKEN
EOF

ok=1
e2e_log "cluster up in $((T_KWOK - T0))ms (certs+kwok config $((T_PREP - T0))ms, etcd $((T_ETCD - T_PREP))ms," \
  "kube-apiserver $((T_API - T_ETCD))ms, kwok $((T_KWOK - T_API))ms); KUBECONFIG=$BASE/kubeconfig"
e2e_log "stop with: $E2E_LIB/cluster-down.sh $BASE"
