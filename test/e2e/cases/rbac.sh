# shellcheck shell=bash
# e2e case rbac (sourced by run.sh, which provides k, check, fail, $BASE, $E2E_ROOT): the RBAC of
# deploy/base/rbac.yaml applied to the real kube-apiserver (authorization-mode RBAC), then
# `kubectl auth can-i --as=system:serviceaccount:tidal-system:tidal-scheduler` for everything a
# secondary kube-scheduler with Tidal's plugin must be able to do (yes) and a list it must not
# (no), and `can-i --list` has no wildcard. The RBAC objects are deleted again afterwards.
# Also: the ValidatingAdmissionPolicy that narrows its node updates to its lent-node taint
# (deploy/base/node-taint-policy.yaml), and the security settings of deploy/base and of
# deploy/overlays/mtls (server-side dry run).
MORE_CASES+=(rbac)

RBAC_SA=system:serviceaccount:tidal-system:tidal-scheduler

# rbac_can WANT VERB RESOURCE [ARGS...]: can-i answers WANT (yes/no) for the service account.
rbac_can() {
  local want=$1 got; shift
  got=$(k auth can-i --as="$RBAC_SA" "$@" 2>/dev/null) || true
  [ "$got" = "$want" ] || { e2e_log "  can-i $*: got '${got:-error}', want $want"; return 1; }
}

# rbac_sar WANT VERB GROUP RESOURCE: a SubjectAccessReview for the service account (for resources this
# API server does not serve, which `can-i` cannot name: Volcano's and KAI's PodGroups).
rbac_sar() {
  local got
  got=$(printf '{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": "%s",
    "groups": ["system:serviceaccounts", "system:serviceaccounts:tidal-system", "system:authenticated"],
    "resourceAttributes": {"verb": "%s", "group": "%s", "resource": "%s"}}}' "$RBAC_SA" "$2" "$3" "$4" |
    k create -f - -o jsonpath='{.status.allowed}' 2>/dev/null) || true
  [ "${got:-false}" = "$1" ] || { e2e_log "  SubjectAccessReview $2 $4.$3: allowed=${got:-error}, want $1"; return 1; }
}

# rbac_replace_node NODE PYTHON: updates NODE (PUT, as `update nodes` is all it may do) as the service
# account after PYTHON changed the JSON object `n`; prints the API server's answer.
rbac_replace_node() {
  k get node "$1" -o json | python3 -c "import json, sys, time; n = json.load(sys.stdin); $2; print(json.dumps(n))" |
    k replace --as="$RBAC_SA" -f - 2>&1 || true  # refused: the answer is the output
}

# The ValidatingAdmissionPolicy of deploy/base/node-taint-policy.yaml narrows tidal-scheduler's node
# updates to its taint tidal.dev/lent-to=slurm:NoSchedule: adding and removing it is allowed, a
# label, another taint or another value of it is refused.
rbac_node_taint_policy() {
  local node out
  node=$(k get nodes -o jsonpath='{.items[0].metadata.name}')
  k apply -f "$E2E_ROOT/deploy/base/node-taint-policy.yaml" >/dev/null || { fail "kubectl apply -f deploy/base/node-taint-policy.yaml"; return; }
  local add="n['spec'].setdefault('taints', []).append({'key': 'tidal.dev/lent-to', 'value': 'slurm', 'effect': 'NoSchedule'})"
  # The policy is enforced once the API server has compiled it: a label change is refused then.
  check "node-taint policy: tidal-scheduler may not change a node's labels" until_true 20 eval \
    "rbac_replace_node $node \"n['metadata']['labels']['tidal-e2e'] = str(time.time_ns())\" | grep -q 'may not change a node.s labels'"
  # (Judged by the API server's answer, retried on a conflict: the running tidal-scheduler removes
  # a taint the engine did not ask for at its next poll.)
  check "node-taint policy: tidal-scheduler may add tidal.dev/lent-to=slurm:NoSchedule" until_true 10 eval \
    "rbac_replace_node $node \"$add\" | grep -q '^node/$node replaced'"
  # (Retried on a conflict with the running tidal-scheduler's own update, until the refusal shows.)
  local bad_value="n['spec']['taints'] = [t for t in n['spec'].get('taints', []) if t['key'] != 'tidal.dev/lent-to'] + [{'key': 'tidal.dev/lent-to', 'value': 'x', 'effect': 'NoExecute'}]"
  check "node-taint policy: not another value or effect of it" until_true 10 eval \
    "rbac_replace_node $node \"$bad_value\" | grep -q 'must be tidal.dev/lent-to=slurm:NoSchedule'"
  check "node-taint policy: not another taint" until_true 10 eval \
    "rbac_replace_node $node \"n['spec'].setdefault('taints', []).append({'key': 'other', 'effect': 'NoSchedule'})\" | grep -q 'may change only the tidal.dev/lent-to taint'"
  check "node-taint policy: tidal-scheduler may remove it" until_true 10 eval \
    "rbac_replace_node $node \"n['spec']['taints'] = [t for t in n['spec'].get('taints', []) if t['key'] != 'tidal.dev/lent-to']\" | grep -q '^node/$node replaced'"
  k label node "$node" tidal-e2e- >/dev/null 2>&1 || true
  k taint node "$node" other- tidal.dev/lent-to- >/dev/null 2>&1 || true
  k delete -f "$E2E_ROOT/deploy/base/node-taint-policy.yaml" --wait=false >/dev/null 2>&1 || true
}

case_rbac() {
  k create namespace tidal-system >/dev/null 2>&1 || true
  if ! k apply -f "$E2E_ROOT/deploy/base/rbac.yaml" >/dev/null; then
    fail "kubectl apply -f deploy/base/rbac.yaml"
    return
  fi
  local bad="" line
  set -f  # the lines hold '*'
  # What it must do: VERB RESOURCE [--subresource=X] [-n NS].
  while read -r line; do
    [ -n "$line" ] || continue
    # shellcheck disable=SC2086
    rbac_can yes $line || bad+=" [$line]"
  done <<'EOF'
get pods -A
list pods -A
watch pods -A
create pods --subresource=binding -n default
update nodes
create pods --subresource=eviction -n default
patch pods --subresource=status -n default
update pods --subresource=status -n default
list nodes
watch nodes
get namespaces
list poddisruptionbudgets.policy -A
list services -A
list replicationcontrollers -A
list replicasets.apps -A
list statefulsets.apps -A
watch statefulsets.apps -A
list deployments.apps -A
watch deployments.apps -A
list horizontalpodautoscalers.autoscaling -A
watch horizontalpodautoscalers.autoscaling -A
list persistentvolumeclaims -A
list persistentvolumes
list storageclasses.storage.k8s.io
list csinodes.storage.k8s.io
list csidrivers.storage.k8s.io
list csistoragecapacities.storage.k8s.io -A
list volumeattachments.storage.k8s.io
list resourceclaims.resource.k8s.io -A
list resourceslices.resource.k8s.io
list deviceclasses.resource.k8s.io
patch resourceclaims.resource.k8s.io --subresource=status -n default
create events -n default
patch events -n default
create events.events.k8s.io -n default
list podgroups.scheduling.k8s.io -A
update podgroups.scheduling.k8s.io --subresource=status -n default
create leases.coordination.k8s.io -n tidal-system
get leases.coordination.k8s.io/tidal-scheduler -n tidal-system
update leases.coordination.k8s.io/tidal-scheduler -n tidal-system
create tokenreviews.authentication.k8s.io
create subjectaccessreviews.authorization.k8s.io
get configmaps/extension-apiserver-authentication -n kube-system
EOF
  local g
  for g in scheduling.volcano.sh scheduling.run.ai; do
    for line in list watch; do rbac_sar true "$line" "$g" podgroups || bad+=" [$line podgroups.$g]"; done
    rbac_sar false update "$g" podgroups || bad+=" [update podgroups.$g allowed]"
  done
  check "the scheduler's service account may do all it needs${bad:+ (missing:$bad)}" test -z "$bad"
  bad=""
  while read -r line; do
    [ -n "$line" ] || continue
    # shellcheck disable=SC2086
    rbac_can no $line || bad+=" [$line]"
  done <<'EOF'
get secrets -n tidal-system
list secrets -A
get secrets -n kube-system
create pods -n default
delete pods -n default
deletecollection pods -n default
create pods --subresource=exec -n default
create pods --subresource=attach -n default
create pods --subresource=portforward -n default
get pods --subresource=log -n default
update pods -n default
patch pods -n default
delete nodes
patch nodes
create nodes
patch nodes --subresource=status
update pods --subresource=ephemeralcontainers -n default
create deployments.apps -n tidal-system
patch deployments.apps -n tidal-system
update deployments.apps --subresource=scale -n default
patch statefulsets.apps --subresource=scale -n default
update horizontalpodautoscalers.autoscaling -n default
patch horizontalpodautoscalers.autoscaling --subresource=status -n default
delete horizontalpodautoscalers.autoscaling -n default
delete namespaces
create namespaces
delete persistentvolumes
create persistentvolumeclaims -n default
get configmaps -n default
get configmaps -n tidal-system
list configmaps -A
create serviceaccounts --subresource=token -n tidal-system
create clusterroles.rbac.authorization.k8s.io
escalate clusterroles.rbac.authorization.k8s.io
bind clusterroles.rbac.authorization.k8s.io
create clusterrolebindings.rbac.authorization.k8s.io
create rolebindings.rbac.authorization.k8s.io -n tidal-system
update roles.rbac.authorization.k8s.io -n tidal-system
impersonate users
impersonate serviceaccounts -n tidal-system
create certificatesigningrequests.certificates.k8s.io
update leases.coordination.k8s.io/kube-scheduler -n kube-system
get leases.coordination.k8s.io/other-lease -n tidal-system
update leases.coordination.k8s.io/other-lease -n tidal-system
delete leases.coordination.k8s.io/tidal-scheduler -n tidal-system
create leases.coordination.k8s.io -n kube-system
update podgroups.scheduling.k8s.io -n default
delete podgroups.scheduling.k8s.io -n default
delete events -n default
create mutatingwebhookconfigurations.admissionregistration.k8s.io
create customresourcedefinitions.apiextensions.k8s.io
* *
EOF
  set +f
  check "and none of what it must not${bad:+ (allowed:$bad)}" test -z "$bad"
  # No wildcard verb or resource among its resource rules (non-resource URL rules are the API
  # server's defaults for every authenticated user).
  local wild
  wild=$(k auth can-i --list --as="$RBAC_SA" 2>/dev/null |
    awk 'NR > 1 && ($1 == "*" || $1 == "*.*" || $0 ~ /\[\*\]/)' || true)
  check "can-i --list shows no wildcard resource or verb${wild:+ ($(echo "$wild" | tr -s ' \n' ' '))}" test -z "$wild"
  rbac_node_taint_policy
  k delete -f "$E2E_ROOT/deploy/base/rbac.yaml" --wait=false >/dev/null 2>&1 || true
  # The deploy's security settings, as the API server sees them.
  local out
  if out=$(k kustomize "$E2E_ROOT/deploy/base" 2>&1); then
    local dep; dep=$(awk '/^kind: StatefulSet/ {on = 1} on && /^---/ {exit} on' <<<"$out")
    check "deploy/base: pod runAsNonRoot and seccomp RuntimeDefault" \
      eval "grep -q 'runAsNonRoot: true' <<<\"\$dep\" && grep -q 'type: RuntimeDefault' <<<\"\$dep\""
    check "deploy/base: both containers read-only root, no privilege escalation, drop ALL" \
      eval "[ \$(grep -c 'readOnlyRootFilesystem: true' <<<\"\$dep\") -eq 2 ] && [ \$(grep -c 'allowPrivilegeEscalation: false' <<<\"\$dep\") -eq 2 ] && [ \$(grep -c -- '- ALL' <<<\"\$dep\") -eq 2 ]"
    check "deploy/base: the engine saves its state file on each replica's own ReadWriteOnce claim" \
      eval "grep -q -- '--state-file=/var/lib/tidal/ledger.json' <<<\"\$dep\" && grep -q 'volumeClaimTemplates:' <<<\"\$dep\" && grep -q 'ReadWriteOnce' <<<\"\$dep\""
    check "deploy/base: a NetworkPolicy" grep -q '^kind: NetworkPolicy' <<<"$out"
  else
    fail "kubectl kustomize deploy/base: $out"
  fi
  if out=$(k apply --dry-run=server -k "$E2E_ROOT/deploy/overlays/mtls" 2>&1); then
    check "kubectl apply --dry-run=server -k deploy/overlays/mtls" true
  else
    echo "$out" | sed 's/^/    /' >&2
    fail "kubectl apply --dry-run=server -k deploy/overlays/mtls"
  fi
}
