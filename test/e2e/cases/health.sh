# shellcheck shell=bash
# e2e case health (sourced by run.sh, which provides k, check, fail, until_true, bound, events,
# has_event, new_ns, cleanup_ns, pod_field, $BASE; disruption_metric is cases/disruption.sh's): a
# node that GPU health tooling marks unhealthy takes its whole gang down with it.
#
# On one NVLink domain (node-4's, 4 nodes in the default fabric; nodeSelector, so no other node is
# touched): a rigid 2-pod gang "hg" (8 GPUs each, so on two nodes) runs. The test labels hg-0's node
# tidal.dev/health=unhealthy (one of the engine's default nodeHealth rules; a label, since kwok
# rewrites node conditions) and asserts: after the engine's grace (nodeHealth.unhealthyAfterSeconds,
# 2 s in config/engine.yaml) BOTH pods are evicted, also hg-1 on the healthy node (a rigid gang
# never half-runs), each with a TidalDisrupted event naming unhealthy-node; a 1-GPU pod pinned to
# the unhealthy node stays pending while one pinned to the gang's other node runs;
# tidal_disruptions_total{cause="unhealthy-node"} grew. The label is removed at the end (also when
# a check failed) and the pinned pod then binds. About 15 s.
MORE_CASES+=(health)

case_health() {
  local ns=e2e-health dom sel bad good before after t0 ms
  new_ns $ns
  dom=$(k get node "${TIDAL_E2E_NODE_PREFIX:-node-}4" -o jsonpath='{.metadata.labels.topology\.tidal\.dev/nvlink}' 2>/dev/null || true)
  if [ -z "$dom" ] || [ "$(k get nodes -l "topology.tidal.dev/nvlink=$dom" -o name | grep -c . || true)" -lt 2 ]; then
    fail "no NVLink domain with 2 nodes at ${TIDAL_E2E_NODE_PREFIX:-node-}4 (got '$dom')"
    return 0
  fi
  sel="{\"topology.tidal.dev/nvlink\": \"$dom\"}"
  e2e_pods $ns hg 2 8 tidal-scheduler '{"tidal.dev/gang": "hg"}' '{"tidal.dev/gang-size": "2"}' "$sel" | k create -f - >/dev/null
  check "rigid gang hg (2 pods x 8 GPUs) runs in $dom" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 2 tidal.dev/gang=hg
  bad=$(pod_field $ns hg-0 '{.spec.nodeName}')
  good=$(pod_field $ns hg-1 '{.spec.nodeName}')
  if [ -z "$bad" ] || [ -z "$good" ] || [ "$bad" = "$good" ]; then
    fail "hg is not on two nodes (hg-0: '$bad', hg-1: '$good')"
    cleanup_ns $ns
    return 0
  fi
  sleep 0.5  # the engine hears of the bindings through the Sync stream
  before=$(disruption_metric unhealthy-node)
  t0=$(e2e_now_ms)
  k label node "$bad" tidal.dev/health=unhealthy --overwrite >/dev/null
  check "after $bad is labelled tidal.dev/health=unhealthy, both pods of hg are gone within 20 s (hg-1 on $good too)" \
    until_true 20 eval "[ -z \"\$(k get pods -n $ns -l tidal.dev/gang=hg -o name)\" ]"
  ms=$(ms_since "$t0")
  timings+=("health-label-to-gang-gone=${ms}ms")
  check "not before the engine's 2 s grace (nodeHealth.unhealthyAfterSeconds): ${ms} ms" test "$ms" -ge 2000
  check "a TidalDisrupted event for hg-0 and for hg-1 names the cause unhealthy-node" \
    eval "has_event $ns TidalDisrupted hg-0 ': unhealthy-node: ' && has_event $ns TidalDisrupted hg-1 ': unhealthy-node: '"
  events $ns TidalDisrupted | head -n 1 | cut -f3 | cut -c1-220 | sed 's/^/    event: /' >&2
  { e2e_pods $ns on-bad 1 1 tidal-scheduler '{}' '{}' "{\"kubernetes.io/hostname\": \"$bad\"}"
    e2e_pods $ns on-good 1 1 tidal-scheduler '{}' '{}' "{\"kubernetes.io/hostname\": \"$good\"}"; } | k create -f - >/dev/null
  check "a 1-GPU pod pinned to the healthy $good runs" until_true 15 pod_field_is $ns on-good-0 '{.status.phase}' Running
  sleep 3
  check "one pinned to the unhealthy $bad is not bound (3 s later)" test -z "$(pod_field $ns on-bad-0 '{.spec.nodeName}')"
  events $ns FailedScheduling | grep on-bad | tail -n 1 | cut -f3 | cut -c1-400 | sed 's/^/    event: /' >&2
  check "tidal_disruptions_total{cause=\"unhealthy-node\"} grew" \
    until_true 10 eval "[ \"\$(awk -v a=\"\$(disruption_metric unhealthy-node)\" -v b=$before 'BEGIN {print (a > b)}')\" = 1 ]"
  after=$(disruption_metric unhealthy-node)
  e2e_log "  tidal_disruptions_total{cause=\"unhealthy-node\"}: $before -> $after"
  k label node "$bad" tidal.dev/health- >/dev/null 2>&1 || true
  check "once the label is removed, the pod pinned to $bad binds within 15 s" \
    until_true 15 pod_field_is $ns on-bad-0 '{.status.phase}' Running
  cleanup_ns $ns
}
