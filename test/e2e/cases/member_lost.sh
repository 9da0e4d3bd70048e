# shellcheck shell=bash
# e2e case member-lost (sourced by run.sh, which provides k, check, fail, until_true, running,
# events, has_event, no_event, new_ns, cleanup_ns, pod_field, $BASE; disruption_metric is
# cases/disruption.sh's): a gang that loses a running member.
#
# Rigid: a 3-pod gang "rigid" (8 GPUs each; gang-min = gang-size) runs on node-8's NVLink domain;
# the test deletes rigid-0 (kubectl delete --wait=false: gone at once on kwok). The engine's
# Disruptions says EVICT (cause member-lost) for the other two, the shim evicts them within 15 s
# with a TidalDisrupted event naming member-lost each, and tidal_disruptions_total{cause=
# "member-lost"} grew: a rigid gang is requeued whole, never left holding GPUs half-running.
# Elastic: a gang "elastic" (tidal.dev/gang-size 3, tidal.dev/gang-min 2) runs on node-12's domain;
# after elastic-0 is deleted the other two keep running, untouched, for 8 s (2 >= its minimum).
# nodeSelector keeps both gangs on their domains (4 nodes each in the default fabric). About 30 s.
MORE_CASES+=(member-lost)

# member_domain I: the NVLink domain of node I ("" when it has fewer than 3 nodes)
member_domain() {
  local d; d=$(k get node "${TIDAL_E2E_NODE_PREFIX:-node-}$1" -o jsonpath='{.metadata.labels.topology\.tidal\.dev/nvlink}' 2>/dev/null || true)
  [ -n "$d" ] && [ "$(k get nodes -l "topology.tidal.dev/nvlink=$d" -o name | grep -c . || true)" -ge 3 ] && echo "$d"
  return 0
}

member_untouched() {  # member_untouched NS SELECTOR N: N pods, Running, none terminating
  [ "$(running "$1" "$2")" -eq "$3" ] && [ "$(k get pods -n "$1" -l "$2" -o name | grep -c .)" -eq "$3" ] &&
    [ -z "$(k get pods -n "$1" -l "$2" -o jsonpath='{.items[*].metadata.deletionTimestamp}')" ]
}

case_member-lost() {
  local ns=e2e-member-lost d1 d2 before after t0 ms ok
  new_ns $ns
  d1=$(member_domain 8)
  d2=$(member_domain 12)
  if [ -z "$d1" ] || [ -z "$d2" ] || [ "$d1" = "$d2" ]; then
    fail "need two NVLink domains of 3+ nodes at nodes 8 and 12 (got '$d1', '$d2')"
    return 0
  fi
  { e2e_pods $ns rigid 3 8 tidal-scheduler '{"tidal.dev/gang": "rigid"}' '{"tidal.dev/gang-size": "3"}' \
      "{\"topology.tidal.dev/nvlink\": \"$d1\"}"
    e2e_pods $ns elastic 3 8 tidal-scheduler '{"tidal.dev/gang": "elastic"}' '{"tidal.dev/gang-size": "3", "tidal.dev/gang-min": "2"}' \
      "{\"topology.tidal.dev/nvlink\": \"$d2\"}"; } | k create -f - >/dev/null
  check "rigid gang rigid (3 x 8 GPUs) runs in $d1" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 3 tidal.dev/gang=rigid
  check "elastic gang elastic (gang-size 3, gang-min 2) runs all 3 in $d2" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 3 tidal.dev/gang=elastic
  sleep 0.5  # the engine hears of the bindings through the Sync stream
  before=$(disruption_metric member-lost)

  t0=$(e2e_now_ms)
  k delete pod -n $ns rigid-0 --wait=false >/dev/null
  check "after rigid-0 is deleted, rigid-1 and rigid-2 are evicted within 15 s" \
    until_true 15 eval "[ -z \"\$(k get pods -n $ns -l tidal.dev/gang=rigid -o name)\" ]"
  ms=$(ms_since "$t0")
  timings+=("member-lost-rigid-gone=${ms}ms")
  check "a TidalDisrupted event for rigid-1 and for rigid-2 names the cause member-lost" \
    eval "has_event $ns TidalDisrupted rigid-1 ': member-lost: ' && has_event $ns TidalDisrupted rigid-2 ': member-lost: '"
  events $ns TidalDisrupted | grep rigid- | head -n 1 | cut -f3 | cut -c1-220 | sed 's/^/    event: /' >&2
  check "tidal_disruptions_total{cause=\"member-lost\"} grew" \
    until_true 10 eval "[ \"\$(awk -v a=\"\$(disruption_metric member-lost)\" -v b=$before 'BEGIN {print (a > b)}')\" = 1 ]"
  after=$(disruption_metric member-lost)
  e2e_log "  tidal_disruptions_total{cause=\"member-lost\"}: $before -> $after"

  k delete pod -n $ns elastic-0 --wait=false >/dev/null
  until_true 10 eval "[ -z \"\$(k get pod -n $ns elastic-0 -o name 2>/dev/null)\" ]" || true
  ok=1
  for _ in $(seq 1 16); do  # 8 s
    member_untouched $ns tidal.dev/gang=elastic 2 || { ok=0; break; }
    sleep 0.5
  done
  check "after elastic-0 is deleted, elastic-1 and elastic-2 keep running for 8 s (2 >= gang-min)" test "$ok" = 1
  check "and got no TidalDisrupted event" no_event $ns TidalDisrupted elastic-
  cleanup_ns $ns
}
